/// A/V sync marks: a virtual camera flashes and a virtual microphone clicks at
/// the same instants — every whole second of CLOCK_MONOTONIC — so the offset
/// between a recording's sound and its picture can be read from the file, as a
/// clapperboard's is.
///
/// The frame that flashes is the one whose exposure holds the instant (its
/// capture time at or before it, less than a frame before); the click starts at
/// the first sample captured at or after it. So in a file whose sound and
/// picture keep their clock, a flash frame's time and its click's differ by
/// zero to one frame duration. (Reading them back from a file is the tests':
/// `CameraTestSupport/SyncMarkReading.swift`.)
public enum SyncMarks {
    /// Nanoseconds between two marks: every whole second of CLOCK_MONOTONIC.
    public static let intervalNanoseconds: Int64 = 1_000_000_000

    // MARK: The flash

    /// A flash's ``TestPattern/level``: every bar but the black one at full
    /// white (luma 235; 208 on average), the stamp bands as they are.
    public static let flashLevel: Float = 12

    /// Whether the frame captured at `timestamp` for `duration` (nanoseconds) holds a mark.
    public static func flashes(frameAt timestamp: Int64, duration: Int64) -> Bool {
        let next = (timestamp + intervalNanoseconds - 1) / intervalNanoseconds * intervalNanoseconds
        return timestamp >= 0 && next < timestamp + duration
    }

    // MARK: The click

    /// A click's length in samples (1 ms at 48 kHz) and level.
    public static let clickFrames = 48
    public static let clickLevel: Float = 0.9

    /// Frames `position ..< position + samples.count / channels` of the clicking
    /// signal (over ``AudioStamp``'s tone: 1 kHz at 48 kHz, −20 dBFS),
    /// interleaved, `channels` copies each, for a microphone at `rate` whose
    /// frame *p* was captured at ``captureTime(of:start:rate:driftPPM:)``.
    public static func renderClicks(
        into samples: UnsafeMutableBufferPointer<Float>, channels: Int, from position: UInt64, start: Int64, rate: Int,
        driftPPM: Int = 0
    ) {
        let frames = samples.count / channels
        AudioStamp.renderTone(into: samples, channels: channels, from: position)
        // The marks a period (shorter than a second) can touch: the last at or before its start, and the next.
        let first = captureTime(of: position, start: start, rate: rate, driftPPM: driftPPM) / intervalNanoseconds
        for mark in first...first + 1 {
            // The first frame captured at or after the mark: p × 10¹⁵ / (rate × (10⁶ + ppm)) ≥ mark − start, rounded up.
            let since = mark * intervalNanoseconds - start
            guard since >= 0 else { continue }
            let clickStart = UInt64((Int128(since) * Int128(rate) * Int128(1_000_000 + driftPPM) + 999_999_999_999_999)
                                    / 1_000_000_000_000_000)
            let lower = max(clickStart, position), upper = min(clickStart + UInt64(clickFrames), position + UInt64(frames))
            guard lower < upper else { continue }
            for frame in Int(lower - position)..<Int(upper - position) {
                for channel in 0..<channels { samples[frame * channels + channel] = clickLevel }
            }
        }
    }

    /// When frame `position` of a microphone at `rate` started at `start` was
    /// captured: `start + position × 10⁹ / rate` rounded down, without
    /// overflow for as long as a microphone runs — for one whose clock runs
    /// `driftPPM` fast (slow, below 0) by CLOCK_MONOTONIC, as a sound card's
    /// does, `start + position × 10¹⁵ / (rate × (10⁶ + driftPPM))`.
    public static func captureTime(of position: UInt64, start: Int64, rate: Int, driftPPM: Int = 0) -> Int64 {
        precondition(rate > 0 && driftPPM > -1_000_000, "a clock at \(rate) Hz, \(driftPPM) ppm")
        return start + Int64(Int128(position) * 1_000_000_000_000_000 / (Int128(rate) * Int128(1_000_000 + driftPPM)))
    }
}
