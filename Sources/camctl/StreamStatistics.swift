import CameraIPC
import CameraMedia
import CaptureKit
import Foundation
import Glibc

/// What `camctl stream --stats` counts: frames, rates, drops by reason, the
/// accounting of every sequence number, latency (receive time − capture time),
/// and with `--check` the frame stamps of camerad's virtual cameras (torn frames).
///
/// Rates come from the frames' own capture timestamps, never from when they
/// arrived: a client held up for a moment does not change them.
struct StreamStatistics {
    var frames = 0
    var bytes = 0
    var firstTimestamp: Int64?
    var lastTimestamp: Int64?
    var firstSequence: UInt64?
    var lastSequence: UInt64?
    var drops: [SampleBuffer.DroppedFrameReason: Int] = [:]
    var latencies: [Int64] = []
    /// Capture time per sequence number between consecutive frames, in nanoseconds.
    var intervals: [Double] = []
    var format = ""
    /// Audio: samples (frames of a sample per channel) received, and per period.
    var samples = 0
    var framesPerPeriod: Int?
    var accounting = Accounting()
    var check: StampCheck?
    var audioCheck: AudioStampCheck?
    /// Drop reports since the last frame: (count, last sequence number).
    private var reportsSinceLastFrame: [(count: Int, lastSequence: UInt64)] = []

    /// Every sequence number from the first frame to the last is a frame or in
    /// a drop report that came between the two frames around it.
    struct Accounting: Encodable {
        /// Sequence numbers from the first frame to the last.
        var span = 0
        /// Frames reported dropped between the first frame and the last.
        var dropped = 0
        /// Numbers between two frames that no report covered: frames lost
        /// silently (or skipped on purpose by `--fps`).
        var unaccounted = 0
        /// Drops reported beyond the gap they came in: frames counted twice.
        var overcounted = 0
        /// Reports whose last number lies outside the gap they came in.
        var misplaced = 0
        /// Frames whose number did not increase.
        var outOfOrder = 0
        /// Drops reported before the first frame or after the last: outside
        /// the span, so `drops` counts them and `dropped` does not.
        var reportedOutside = 0

        /// Nothing lost silently, nothing twice, all in order.
        var balances: Bool { unaccounted == 0 && overcounted == 0 && misplaced == 0 && outOfOrder == 0 }
    }

    struct StampCheck: Encodable {
        /// Both bands agree with each other and with the frame's sequence number and timestamp.
        var intact = 0
        /// Top and bottom bands disagree: the frame was being rewritten while read.
        var torn = 0
        /// The stamp did not read (not a virtual camera, or the frame is turned).
        var unreadable = 0
        /// The stamp reads but names another frame than the message did.
        var mismatched = 0
    }

    mutating func record(_ sample: SampleBuffer, receivedAt now: Int64, checking: Bool) {
        if let reason = sample.attachments.droppedFrameReason {
            drops[reason, default: 0] += sample.attachments.droppedFrameCount
            // Reports before the first frame lie outside the span.
            if lastSequence != nil {
                reportsSinceLastFrame.append((sample.attachments.droppedFrameCount, sample.sequenceNumber))
            } else {
                accounting.reportedOutside += sample.attachments.droppedFrameCount
            }
            return
        }
        let timestamp = sample.presentationTimeStamp.value
        if let pixels = sample.imageBuffer {
            bytes += pixels.dataSize
            if format.isEmpty { format = "\(pixels)" }
            if checking { verify(sample, pixels) }
        } else if let period = sample.dataBuffer, let description = sample.formatDescription?.audioStreamBasicDescription {
            bytes += period.dataLength
            samples += sample.numSamples
            if format.isEmpty {
                format = Self.describe(description, frames: sample.numSamples)
                framesPerPeriod = sample.numSamples
            }
            if checking {
                if audioCheck == nil { audioCheck = AudioStampCheck(description: description) }
                audioCheck?.add(sample, period)
            }
        } else {
            return
        }
        frames += 1
        latencies.append(now - timestamp)
        account(sequence: sample.sequenceNumber, timestamp: timestamp)
    }

    /// "s16 1ch 16000 Hz, 320 frames a period".
    static func describe(_ description: AudioStreamBasicDescription, frames: Int) -> String {
        let kind = description.mFormatFlags & kAudioFormatFlagIsFloat != 0 ? "f" : "s"
        return "\(kind)\(description.mBitsPerChannel) \(description.mChannelsPerFrame)ch \(Int(description.mSampleRate)) Hz, \(frames) frames a period"
    }

    /// The unit ``frames`` counts: a camera's frames, a microphone's periods.
    var unit: String { framesPerPeriod == nil ? "frames" : "periods" }
    var rateUnit: String { framesPerPeriod == nil ? "fps" : "a second" }

    /// Settles the gap between the last frame and this one against the drop
    /// reports that came in it.
    private mutating func account(sequence: UInt64, timestamp: Int64) {
        defer { reportsSinceLastFrame = [] }
        if let previous = lastSequence, let previousTimestamp = lastTimestamp {
            guard sequence > previous else {
                accounting.outOfOrder += 1
                return
            }
            let gap = Int(sequence - previous - 1)
            let reported = reportsSinceLastFrame.reduce(0) { $0 + $1.count }
            accounting.unaccounted += max(0, gap - reported)
            accounting.overcounted += max(0, reported - gap)
            accounting.misplaced += reportsSinceLastFrame.filter { !(previous < $0.lastSequence && $0.lastSequence < sequence) }.count
            accounting.dropped += reported
            intervals.append(Double(timestamp - previousTimestamp) / Double(sequence - previous))
        }
        firstSequence = firstSequence ?? sequence
        lastSequence = sequence
        firstTimestamp = firstTimestamp ?? timestamp
        lastTimestamp = timestamp
        accounting.span = Int(sequence - firstSequence!) + 1
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
            case kCVPixelFormatType_32ARGB:
                return FrameStampDecoder.decode(frame: bytes, format: .argb, width: pixels.width, height: pixels.height)
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

    /// Capture time from the first frame to the last.
    var elapsedSeconds: Double {
        guard let first = firstTimestamp, let last = lastTimestamp, frames > 1 else { return 0 }
        return Double(last - first) / 1e9
    }

    /// Frames this client got per second of capture time.
    var framesPerSecond: Double {
        elapsedSeconds > 0 ? Double(frames - 1) / elapsedSeconds : 0
    }

    /// The device's own rate: the median capture time per sequence number
    /// between consecutive frames, so drops and stalls do not bend it.
    var deviceFramesPerSecond: Double {
        guard !intervals.isEmpty else { return 0 }
        let median = intervals.sorted()[intervals.count / 2]
        return median > 0 ? 1e9 / median : 0
    }

    /// The width of a ``latencyHistogram`` bucket.
    static let latencyBucketMicroseconds: Int64 = 10

    /// Every frame's latency in buckets of ``latencyBucketMicroseconds``:
    /// [the bucket's lower bound in µs, frames], ascending, empty buckets left
    /// out. Histograms add up, so a p99 over many streams (or runs) is exact
    /// to a bucket, where their p99s cannot be combined.
    var latencyHistogram: [[Int64]] {
        let width = Self.latencyBucketMicroseconds * 1000
        var counts: [Int64: Int64] = [:]
        for latency in latencies {
            // Floored, so that a latency just below zero (a clock's step) is not counted as zero's.
            let bucket = latency >= 0 ? latency / width : -((-latency + width - 1) / width)
            counts[bucket * Self.latencyBucketMicroseconds, default: 0] += 1
        }
        return counts.keys.sorted().map { [$0, counts[$0]!] }
    }

    func latency(percentile: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * percentile).rounded(.up)) - 1)
        return Double(sorted[max(0, index)]) / 1e6
    }

    /// The accounting as it ends: reports after the last frame lie outside the span too.
    var settledAccounting: Accounting {
        var settled = accounting
        settled.reportedOutside += reportsSinceLastFrame.reduce(0) { $0 + $1.count }
        return settled
    }

    /// One line for `stream` without --stats: frames, rate, drops.
    var progress: String {
        let dropped = drops.values.reduce(0, +)
        return "\(frames) \(unit)" + (format.isEmpty ? "" : " of \(format)") + ", \(DeviceText.fixed(framesPerSecond, 1)) \(rateUnit), \(dropped) dropped"
    }

    var text: String {
        let accounting = settledAccounting
        let outside = accounting.reportedOutside == 0 ? ""
            : " (and \(accounting.reportedOutside) reported before the first frame or after the last)"
        var lines = [
            frames == 0 ? "no \(unit)"
                : "\(frames) \(unit) of \(format) in \(DeviceText.fixed(elapsedSeconds, 2)) s (\(DeviceText.fixed(framesPerSecond, 1)) \(rateUnit); "
                    + "the device makes \(DeviceText.fixed(deviceFramesPerSecond, 1)))"
                    + (framesPerPeriod == nil ? "" : "; \(samples) samples"),
            "drops: " + SampleBuffer.DroppedFrameReason.allCases.map { "\($0.rawValue) \(drops[$0] ?? 0)" }.joined(separator: ", ")
                + (framesPerPeriod.map { " (\(drops.values.reduce(0, +) * $0) samples)" } ?? ""),
            "accounting: \(frames) \(unit) + \(accounting.dropped) dropped of \(accounting.span) numbers\(outside); "
                + "\(accounting.unaccounted) unaccounted, \(accounting.overcounted) overcounted, "
                + "\(accounting.misplaced) misplaced, \(accounting.outOfOrder) out of order",
            "latency: p50 \(DeviceText.fixed(latency(percentile: 0.5), 2)) ms, p99 \(DeviceText.fixed(latency(percentile: 0.99), 2)) ms",
        ]
        if let check {
            lines.append("check: \(check.intact) intact, \(check.torn) torn, \(check.mismatched) mismatched, "
                + "\(check.unreadable) unreadable")
        }
        if let audioCheck {
            lines.append("check: \(audioCheck.result.blocks) stamp blocks, \(audioCheck.result.outOfOrder) out of order, \(audioCheck.result.missing) missing, "
                + "\(audioCheck.result.misplaced) misplaced, in \(audioCheck.result.runs) unbroken runs; "
                + "placement spread \(Int(audioCheck.result.placementSpread)) samples"
                + audioCheck.result.strays.map { "; \($0)" }.joined())
        }
        return lines.joined(separator: "\n")
    }

    struct JSON: Encodable {
        let frames: Int
        let bytes: Int
        let format: String
        let elapsedSeconds: Double
        let framesPerSecond: Double
        let deviceFramesPerSecond: Double
        let firstSequence: UInt64?
        let lastSequence: UInt64?
        let drops: [String: Int]
        let accounting: Accounting
        let latencyMilliseconds: [String: Double]
        let latencyHistogram: [[Int64]]
        let check: StampCheck?
        /// Audio: samples received, samples in a period, samples dropped, and the stamp's check.
        let samples: Int?
        let framesPerPeriod: Int?
        let samplesDropped: Int?
        let audioCheck: AudioStampCheck.Result?
    }

    var json: JSON {
        JSON(frames: frames, bytes: bytes, format: format, elapsedSeconds: elapsedSeconds, framesPerSecond: framesPerSecond,
             deviceFramesPerSecond: deviceFramesPerSecond, firstSequence: firstSequence, lastSequence: lastSequence,
             drops: Dictionary(uniqueKeysWithValues: SampleBuffer.DroppedFrameReason.allCases.map { ($0.rawValue, drops[$0] ?? 0) }),
             accounting: settledAccounting,
             latencyMilliseconds: ["p50": latency(percentile: 0.5), "p99": latency(percentile: 0.99), "max": latency(percentile: 1)],
             latencyHistogram: latencyHistogram, check: check,
             samples: framesPerPeriod == nil ? nil : samples, framesPerPeriod: framesPerPeriod,
             samplesDropped: framesPerPeriod.map { drops.values.reduce(0, +) * $0 }, audioCheck: audioCheck?.result)
    }
}

/// `camctl listen --check`: the audio stamp of camerad's virtual microphones,
/// decoded from each unbroken run of periods (the first channel): every block
/// must follow the one before and lie where its number puts it on the
/// microphone's clock (the period's sequence number × its frames, within two
/// samples after a resampler).
struct AudioStampCheck {
    struct Result: Encodable {
        /// Blocks decoded, in every run.
        var blocks = 0
        /// Blocks whose number is not above the one before in their run (repeated or backwards).
        var outOfOrder = 0
        /// Numbers missing between two blocks of a run: blocks the decoder did not find (their
        /// placement, ``placementSpread``, says whether samples were lost with them).
        var missing = 0
        /// Blocks away from where their number puts them.
        var misplaced = 0
        /// Unbroken runs of periods (a drop starts a new one).
        var runs = 0
        /// The largest difference, in samples, between two blocks' distances from
        /// where their numbers put them: 0 at the microphone's own rate when no
        /// sample is lost or repeated, whatever the signal's start (a signal played
        /// into a loopback device starts anywhere); a few after a resampler.
        var placementSpread = 0.0
        /// The first few blocks out of their place or order, as "block N in period P, D samples
        /// from its place": where to look when the counts above are not 0.
        var strays: [String] = []
        /// The first period of each unbroken run (the first few).
        var runStarts: [UInt64] = []
    }

    /// The smallest and largest distance seen, for ``Result/placementSpread``.
    private var placements: (min: Double, max: Double)?

    let rate: Int
    let channels: Int
    let format: AudioLayout.SampleFormat
    private(set) var result = Result()
    /// The run under way: its first frame's position, its first and next sequence numbers, its periods' frames,
    /// the last block found in it, and its decoder, given each period's first channel as it comes (read on the
    /// connection thread, whose every period waits behind it: a run costs its length once, never all at once).
    private var run: (position: Int, first: UInt64, next: UInt64, periodFrames: Int, last: AudioStamp.Block?,
                      decoder: AudioStamp.Decoder)?
    /// Where the blocks were found so far, for a stray's distance: the first block's distance from its place.
    private var usualPlacement: Double?

    init(description: AudioStreamBasicDescription) {
        rate = Int(description.mSampleRate)
        channels = max(1, Int(description.mChannelsPerFrame))
        let isFloat = description.mFormatFlags & kAudioFormatFlagIsFloat != 0
        format = isFloat ? .f32 : description.mBitsPerChannel == 16 ? .s16 : .s32
    }

    mutating func add(_ sample: SampleBuffer, _ period: BlockBuffer) {
        if run?.next != sample.sequenceNumber {
            finish()
            run = (Int(sample.sequenceNumber) * sample.numSamples, sample.sequenceNumber, sample.sequenceNumber,
                   max(1, sample.numSamples), nil, AudioStamp.Decoder(sampleRate: rate))
            result.runs += 1
            if result.runStarts.count < 4 { result.runStarts.append(sample.sequenceNumber) }
        }
        guard let samples = try? period.withUnsafeBytes({ format.floats(in: $0, channel: 0, of: channels) }) else { return }
        run!.next += 1
        let blocks = run!.decoder.add(samples)
        check(blocks)
    }

    /// Ends the run under way (at a gap, and at the end): the blocks in its tail.
    mutating func finish() {
        guard run != nil else { return }
        let blocks = run!.decoder.finish()
        check(blocks)
        run = nil
    }

    /// Counts blocks found in the run under way, in order, against the one before and their places.
    private mutating func check(_ blocks: [AudioStamp.Block]) {
        guard let current = run else { return }
        for block in blocks {
            result.blocks += 1
            let previous = run!.last
            run!.last = block
            if let previous {
                if block.number <= previous.number { result.outOfOrder += 1 }
                result.missing += max(0, Int(block.number) - Int(previous.number) - 1)
            }
            let place = Double(block.number) * Double(AudioStamp.blockFrames) * Double(rate) / Double(AudioStamp.sampleRate)
            let found = Double(current.position + block.offset)
            if abs(found - place) > 2 { result.misplaced += 1 }
            let usual = usualPlacement ?? found - place
            usualPlacement = usual
            if abs(found - place - usual) > 3 || previous.map({ block.number <= $0.number }) == true, result.strays.count < 4 {
                result.strays.append("block \(block.number) in period \(current.first + UInt64(block.offset / current.periodFrames)), "
                                     + "\(Int(found - place - usual)) samples from its place")
            }
            placements = (min(placements?.min ?? found - place, found - place), max(placements?.max ?? found - place, found - place))
        }
        result.placementSpread = placements.map { $0.max - $0.min } ?? 0
    }
}
