import CameraProtocol
import Foundation
import Synchronization

/// CMSampleBuffer: one video frame with its timing and format — or, for a
/// dropped frame, the reason it was dropped.
///
/// Its pixels live in shared memory owned by camerad, valid until the buffer is
/// released: when the last reference to it (and to its ``imageBuffer``) goes, or
/// at once by ``invalidate()``. Hold frames only as long as needed: a stream holds
/// at most a few, and more arriving meanwhile are dropped (`frameWasLate`).
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
    /// The device's frame number (V4L2's sequence; the virtual cameras' counter).
    /// For a drop report, the number of the last frame it stands for: the
    /// reports between two frames cover exactly the numbers between them.
    public let sequenceNumber: UInt64
    public let formatDescription: FormatDescription?
    /// The frame's pixels; nil for a dropped frame.
    public let imageBuffer: PixelBuffer?
    public let attachments: Attachments

    init(_ frame: Camerad_V1_FrameReady, pool: MappedFramePool, stream: FrameStream) {
        presentationTimeStamp = CMTime(nanoseconds: frame.presentationTimeNs)
        duration = CMTime(nanoseconds: frame.durationNs)
        sequenceNumber = frame.sequence
        let (poolID, slot) = (pool.id, frame.slot)
        let pixels = PixelBuffer(frame, pool: pool) { stream.release(poolID: poolID, slot: slot) }
        imageBuffer = pixels
        formatDescription = FormatDescription(mediaSubType: pixels.pixelFormatType,
                                              dimensions: CMVideoDimensions(width: Int32(pixels.width), height: Int32(pixels.height)))
        attachments = Attachments()
    }

    /// A buffer that stands for `count` dropped frames, the last of them `lastSequence`.
    init(dropped reason: DroppedFrameReason, count: Int, lastSequence: UInt64) {
        presentationTimeStamp = .invalid
        duration = .invalid
        sequenceNumber = lastSequence
        formatDescription = nil
        imageBuffer = nil
        attachments = Attachments(droppedFrameReason: reason, droppedFrameCount: count)
    }

    /// CMSampleBufferInvalidate: gives the frame's memory back now. The pixel
    /// buffer's base addresses are nil afterwards.
    public func invalidate() {
        imageBuffer?.release()
    }

    /// Whether the frame's memory is still readable.
    public var isValid: Bool { imageBuffer?.isValid ?? false }

    public var description: String {
        if let reason = attachments.droppedFrameReason {
            return "dropped \(attachments.droppedFrameCount) up to #\(sequenceNumber) (\(reason))"
        }
        return "#\(sequenceNumber) at \(presentationTimeStamp.seconds) s, \(imageBuffer.map(\.description) ?? "")"
    }
}

/// CMFormatDescription for video: the pixel format and size.
public struct FormatDescription: Hashable, Sendable {
    public let mediaType = MediaType.video
    public let mediaSubType: OSType
    public let dimensions: CMVideoDimensions
}

extension CMTime {
    init(nanoseconds: Int64) {
        self.init(value: nanoseconds, timescale: 1_000_000_000)
    }
}
