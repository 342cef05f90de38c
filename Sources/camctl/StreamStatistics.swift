import CameraMedia
import CaptureKit
import Foundation
import Glibc

/// What `camctl stream --stats` counts: frames, rate, drops by reason, latency
/// (receive time − capture time), and with `--check` the frame stamps of
/// camerad's virtual cameras (torn frames, frames out of order).
struct StreamStatistics {
    var frames = 0
    var bytes = 0
    var firstReceived: Int64?
    var lastReceived: Int64?
    var firstSequence: UInt64?
    var lastSequence: UInt64?
    var drops: [SampleBuffer.DroppedFrameReason: Int] = [:]
    var latencies: [Int64] = []
    var format = ""
    var check: StampCheck?

    struct StampCheck: Encodable {
        /// Both bands agree with each other and with the frame's sequence number and timestamp.
        var intact = 0
        /// Top and bottom bands disagree: the frame was being rewritten while read.
        var torn = 0
        /// The stamp did not read (not a virtual camera, or the frame is turned).
        var unreadable = 0
        /// The stamp reads but names another frame than the message did.
        var mismatched = 0
        /// Sequence numbers that did not increase.
        var outOfOrder = 0
    }

    mutating func record(_ sample: SampleBuffer, receivedAt now: Int64, checking: Bool) {
        if let reason = sample.attachments.droppedFrameReason {
            drops[reason, default: 0] += sample.attachments.droppedFrameCount
            return
        }
        guard let pixels = sample.imageBuffer else { return }
        if let last = lastSequence, sample.sequenceNumber <= last { check?.outOfOrder += 1 }
        frames += 1
        bytes += pixels.dataSize
        firstReceived = firstReceived ?? now
        lastReceived = now
        firstSequence = firstSequence ?? sample.sequenceNumber
        lastSequence = sample.sequenceNumber
        latencies.append(now - sample.presentationTimeStamp.value)
        if format.isEmpty { format = "\(pixels)" }
        if checking { verify(sample, pixels) }
    }

    private mutating func verify(_ sample: SampleBuffer, _ pixels: PixelBuffer) {
        if check == nil { check = StampCheck() }
        let result = try? pixels.withUnsafeBytes { bytes -> FrameStampDecoder.Result? in
            switch pixels.pixelFormatType {
            case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8Planar:
                return FrameStampDecoder.decode(luma: bytes, width: pixels.width, height: pixels.height, bytesPerRow: pixels.bytesPerRow)
            case kCVPixelFormatType_422YpCbCr8_yuvs:
                return FrameStampDecoder.decode(luma: bytes, width: pixels.width, height: pixels.height,
                                                bytesPerRow: pixels.bytesPerRow, pixelStride: 2)
            case kCVPixelFormatType_32BGRA:
                return FrameStampDecoder.decode(frame: bytes, format: .bgra, width: pixels.width, height: pixels.height)
            case kCMVideoCodecType_JPEG_OpenDML:
                guard let decoder = try? JPEGDecoder(), let gray = try? decoder.decodeGray(Array(bytes)) else { return nil }
                return gray.pixels.withUnsafeBytes {
                    FrameStampDecoder.decode(luma: $0, width: gray.width, height: gray.height, bytesPerRow: gray.width)
                }
            default:
                return nil
            }
        }
        guard let result = result ?? nil, result.top != nil || result.bottom != nil else {
            check?.unreadable += 1
            return
        }
        if result.isTorn {
            check?.torn += 1
        } else if let stamp = result.stamp,
                  stamp != FrameStamp(sequence: UInt32(truncatingIfNeeded: sample.sequenceNumber),
                                      timestampNanoseconds: sample.presentationTimeStamp.value) {
            check?.mismatched += 1
        } else {
            check?.intact += 1
        }
    }

    var elapsedSeconds: Double {
        guard let first = firstReceived, let last = lastReceived, frames > 1 else { return 0 }
        return Double(last - first) / 1e9
    }

    /// Frames per second between the first frame and the last.
    var framesPerSecond: Double {
        elapsedSeconds > 0 ? Double(frames - 1) / elapsedSeconds : 0
    }

    func latency(percentile: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * percentile).rounded(.up)) - 1)
        return Double(sorted[max(0, index)]) / 1e6
    }

    var text: String {
        var lines = [
            frames == 0 ? "no frames"
                : "\(frames) frames of \(format) in \(DeviceText.fixed(elapsedSeconds, 2)) s (\(DeviceText.fixed(framesPerSecond, 1)) fps)",
            "drops: " + SampleBuffer.DroppedFrameReason.allCases.map { "\($0.rawValue) \(drops[$0] ?? 0)" }.joined(separator: ", "),
            "latency: p50 \(DeviceText.fixed(latency(percentile: 0.5), 2)) ms, p99 \(DeviceText.fixed(latency(percentile: 0.99), 2)) ms",
        ]
        if let check {
            lines.append("check: \(check.intact) intact, \(check.torn) torn, \(check.mismatched) mismatched, "
                + "\(check.unreadable) unreadable, \(check.outOfOrder) out of order")
        }
        return lines.joined(separator: "\n")
    }

    struct JSON: Encodable {
        let frames: Int
        let bytes: Int
        let format: String
        let elapsedSeconds: Double
        let framesPerSecond: Double
        let firstSequence: UInt64?
        let lastSequence: UInt64?
        let drops: [String: Int]
        let latencyMilliseconds: [String: Double]
        let check: StampCheck?
    }

    var json: JSON {
        JSON(frames: frames, bytes: bytes, format: format, elapsedSeconds: elapsedSeconds, framesPerSecond: framesPerSecond,
             firstSequence: firstSequence, lastSequence: lastSequence,
             drops: Dictionary(uniqueKeysWithValues: SampleBuffer.DroppedFrameReason.allCases.map { ($0.rawValue, drops[$0] ?? 0) }),
             latencyMilliseconds: ["p50": latency(percentile: 0.5), "p99": latency(percentile: 0.99), "max": latency(percentile: 1)],
             check: check)
    }
}

/// CLOCK_MONOTONIC now, in nanoseconds: the clock of frame timestamps.
func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
