import CameraProtocol
import Foundation

/// A stream's pool as CaptureKit makes sample buffers from it: the mapped
/// memory and what every frame (period) of the pool shares — its format
/// description, its size, its planes — worked out once, when the pool comes,
/// not for every frame.
final class StreamPool: Sendable {
    let mapped: MappedFramePool
    let formatDescription: FormatDescription
    /// Audio pools: bytes per frame of samples; nil for video.
    let bytesPerAudioFrame: Int?
    /// Video pools: the picture's size and CoreVideo pixel format (zero for inline frames).
    let width: Int
    let height: Int
    let pixelFormatType: OSType
    /// Video pools: where each plane of a slot lies.
    let planes: [Camerad_V1_PlaneInfo]

    var id: UInt64 { mapped.id }

    init(_ mapped: MappedFramePool) {
        self.mapped = mapped
        let description = mapped === MappedFramePool.inline ? Camerad_V1_FramePool() : mapped.description
        planes = description.planes
        if description.hasAudio {
            let format = AudioCapabilities.Format(description.audio)
            bytesPerAudioFrame = max(1, format.bytesPerFrame)
            formatDescription = FormatDescription(audio: format)
            (width, height, pixelFormatType) = (0, 0, 0)
        } else {
            bytesPerAudioFrame = nil
            width = Int(description.width)
            height = Int(description.height)
            pixelFormatType = PixelFormats.type(fourcc: description.fourcc, fullRange: description.fullRange)
            formatDescription = FormatDescription(mediaSubType: pixelFormatType,
                                                  dimensions: CMVideoDimensions(width: Int32(width), height: Int32(height)))
        }
    }

    /// The stand-in for inline frames, whose bytes come with their message.
    static let inline = StreamPool(MappedFramePool.inline)
}

/// One frame (period) as it arrived — a frame ring's record or a FrameReady
/// message: what a sample buffer is made of, with its pool.
struct ArrivedFrame {
    let slot: UInt32
    let sequence: UInt64
    let presentationTimeNs: Int64
    let durationNs: Int64
    let bytesUsed: Int
    /// Inline delivery: the frame's bytes, which it owns; empty for a slot of the pool.
    var inlineBytes = Data()
    /// Where its planes lie: the pool's, unless the message said otherwise.
    var planes: [Camerad_V1_PlaneInfo]?

    init(slot: UInt32, sequence: UInt64, presentationTimeNs: Int64, durationNs: Int64, bytesUsed: UInt64) {
        self.slot = slot
        self.sequence = sequence
        self.presentationTimeNs = presentationTimeNs
        self.durationNs = durationNs
        self.bytesUsed = Int(clamping: bytesUsed)
    }

    init(_ message: Camerad_V1_FrameReady) {
        self.init(slot: message.slot, sequence: message.sequence, presentationTimeNs: message.presentationTimeNs,
                  durationNs: message.durationNs, bytesUsed: message.bytesUsed)
        inlineBytes = message.data
        planes = message.planes
    }
}
