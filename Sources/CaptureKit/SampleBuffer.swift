import CameraProtocol
import Foundation
import Synchronization

/// CMSampleBuffer: one video frame, or one period of audio samples, with its
/// timing and format — or, for a dropped frame or period, the reason it was dropped.
///
/// Its pixels (``imageBuffer``) or samples (``dataBuffer``) live in shared
/// memory owned by camerad, valid until the buffer is released: when the last
/// reference to it (and to its image or data buffer) goes, or at once by
/// ``invalidate()``. Hold buffers only as long as needed: a stream holds at
/// most a few, and more arriving meanwhile are dropped (`frameWasLate`).
public final class SampleBuffer: @unchecked Sendable, CustomStringConvertible {
    /// Why a frame did not arrive (kCMSampleBufferDroppedFrameReason_*).
    public enum DroppedFrameReason: String, Sendable, CaseIterable {
        /// The client still held as many frames as it may.
        case frameWasLate
        /// No buffer was free, or the client's queue was full.
        case outOfBuffers
        /// The device skipped frames.
        case discontinuity

        init(_ reason: Camerad_V1_DropReason) {
            self = switch reason {
            case .outOfBuffers: .outOfBuffers
            case .discontinuity: .discontinuity
            default: .frameWasLate
            }
        }
    }

    /// What a sample buffer carries besides its frame (CMSampleBuffer attachments).
    public struct Attachments: Sendable {
        /// Set on the buffers `didDrop` gets.
        public var droppedFrameReason: DroppedFrameReason?
        /// How many frames the drop stands for.
        public var droppedFrameCount: Int = 0
    }

    /// When the frame was captured: CLOCK_MONOTONIC, nanosecond timescale.
    public let presentationTimeStamp: CMTime
    public let duration: CMTime
    /// The device's frame number (V4L2's sequence; the virtual cameras' counter),
    /// or an audio period's place: its first sample is number × ``numSamples``
    /// on the microphone's clock, so a gap in the numbers is exactly the samples lost.
    /// For a drop report, the number of the last frame (period) it stands for:
    /// the reports between two frames cover exactly the numbers between them.
    public let sequenceNumber: UInt64
    public let formatDescription: FormatDescription?
    /// The frame's pixels; nil for audio and for a dropped frame.
    public let imageBuffer: PixelBuffer?
    /// The period's samples, interleaved; nil for video and for a drop report.
    public let dataBuffer: BlockBuffer?
    /// CMSampleBufferGetNumSamples: a period's frames (one sample per channel
    /// each), 1 for a video frame, 0 for a drop report.
    public let numSamples: Int
    public let attachments: Attachments

    init(_ frame: ArrivedFrame, pool: StreamPool, stream: FrameStream) {
        presentationTimeStamp = CMTime(nanoseconds: frame.presentationTimeNs)
        duration = CMTime(nanoseconds: frame.durationNs)
        sequenceNumber = frame.sequence
        formatDescription = pool.formatDescription
        let memory = SlotBytes(frame, pool: pool.mapped, owner: stream)
        if let bytesPerFrame = pool.bytesPerAudioFrame {
            let samples = BlockBuffer(memory)
            imageBuffer = nil
            dataBuffer = samples
            numSamples = samples.dataLength / bytesPerFrame
        } else {
            imageBuffer = PixelBuffer(frame, pool: pool, memory: memory)
            dataBuffer = nil
            numSamples = 1
        }
        attachments = Attachments()
    }

    /// A buffer that stands for `count` dropped frames, the last of them `lastSequence`.
    init(dropped reason: DroppedFrameReason, count: Int, lastSequence: UInt64) {
        presentationTimeStamp = .invalid
        duration = .invalid
        sequenceNumber = lastSequence
        formatDescription = nil
        imageBuffer = nil
        dataBuffer = nil
        numSamples = 0
        attachments = Attachments(droppedFrameReason: reason, droppedFrameCount: count)
    }

    /// CMSampleBufferInvalidate: gives the frame's (period's) memory back now.
    /// The pixel buffer's base addresses, the block buffer's data pointer, are nil afterwards.
    public func invalidate() {
        imageBuffer?.release()
        dataBuffer?.memory.release()
    }

    /// Whether the frame's (period's) memory is still readable.
    public var isValid: Bool { imageBuffer?.isValid ?? dataBuffer?.memory.isValid ?? false }

    public var description: String {
        if let reason = attachments.droppedFrameReason {
            return "dropped \(attachments.droppedFrameCount) up to #\(sequenceNumber) (\(reason))"
        }
        if let dataBuffer {
            return "#\(sequenceNumber) at \(presentationTimeStamp.seconds) s, \(numSamples) samples (\(dataBuffer.dataLength) bytes)"
        }
        return "#\(sequenceNumber) at \(presentationTimeStamp.seconds) s, \(imageBuffer.map(\.description) ?? "")"
    }
}

/// CMFormatDescription: for video the pixel format and size, for audio the
/// stream's basic description (linear PCM).
public struct FormatDescription: Hashable, Sendable {
    public let mediaType: MediaType
    /// The pixel format, or ``kAudioFormatLinearPCM``.
    public let mediaSubType: OSType
    /// Zero for audio.
    public let dimensions: CMVideoDimensions
    /// Audio's layout (CMAudioFormatDescriptionGetStreamBasicDescription); nil for video.
    public let audioStreamBasicDescription: AudioStreamBasicDescription?

    init(mediaSubType: OSType, dimensions: CMVideoDimensions) {
        mediaType = .video
        self.mediaSubType = mediaSubType
        self.dimensions = dimensions
        audioStreamBasicDescription = nil
    }

    init(audio format: AudioCapabilities.Format) {
        mediaType = .audio
        mediaSubType = kAudioFormatLinearPCM
        dimensions = CMVideoDimensions(width: 0, height: 0)
        audioStreamBasicDescription = AudioStreamBasicDescription(format)
    }
}

extension CMTime {
    init(nanoseconds: Int64) {
        self.init(value: nanoseconds, timescale: 1_000_000_000)
    }
}
