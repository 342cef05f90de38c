import CameraMedia
import Foundation
import Testing

/// The clapperboard a virtual camera and a virtual microphone make together:
/// one flash frame and one click a second, both at the whole second.
@Suite struct SyncMarksTests {
    /// At any phase of the frames against the clock, exactly one frame a
    /// second flashes: the one whose exposure holds the whole second.
    @Test(arguments: [0, 1, 12_345_678, 33_333_332, 33_333_333])
    func exactlyTheFrameHoldingEachWholeSecondFlashes(phase: Int64) {
        let duration: Int64 = 33_333_333
        let start = 7_000_000_000 - 2 * duration + phase
        let flashing = (0..<120).map { start + Int64($0) * duration }.filter { SyncMarks.flashes(frameAt: $0, duration: duration) }
        #expect(flashing.count == 4, "seconds 7 to 10 in 4 s of frames from \(start): \(flashing)")
        for timestamp in flashing {
            let second = (timestamp + 999_999_999) / 1_000_000_000 * 1_000_000_000
            #expect(timestamp <= second && second < timestamp + duration, "the frame at \(timestamp) holds \(second)")
        }
    }

    /// Rendered period by period, as a microphone does, each click starts at
    /// the first sample captured at or after its second, and nothing else
    /// reads as a click.
    @Test(arguments: [Int64(0), 123_456_789, 999_990_000])
    func eachClickStartsAtTheFirstSampleOfItsSecond(phase: Int64) {
        let start = 5_000_000_000 + phase
        let (rate, period, channels) = (48_000, 480, 2)
        var stereo = [Float](repeating: 0, count: rate * 3 * channels)
        stereo.withUnsafeMutableBufferPointer { samples in
            for first in stride(from: 0, to: rate * 3, by: period) {
                let slice = UnsafeMutableBufferPointer(rebasing: samples[first * channels..<(first + period) * channels])
                SyncMarks.renderClicks(into: slice, channels: channels, from: UInt64(first), start: start, rate: rate)
            }
        }
        let left = stride(from: 0, to: stereo.count, by: channels).map { stereo[$0] }
        let onsets = SyncMarks.clickOnsets(left, sampleRate: rate)
        #expect(onsets.count == 3, "three whole seconds in 3 s of samples: \(onsets)")
        for onset in onsets {
            let captured = SyncMarks.captureTime(of: UInt64(onset), start: start, rate: rate)
            let second = captured / 1_000_000_000 * 1_000_000_000
            #expect(onset == 0 ? captured == second : SyncMarks.captureTime(of: UInt64(onset - 1), start: start, rate: rate) < second,
                    "the click at sample \(onset) (captured at \(captured) ns) is the first at or after its second")
            #expect(left[onset..<onset + SyncMarks.clickFrames].allSatisfy { $0 == SyncMarks.clickLevel })
        }
    }

    /// A microphone's clock never overflows, however long it runs.
    @Test func aSamplesCaptureTimeHoldsForYears() {
        let year: UInt64 = 48_000 * 86_400 * 365
        for position in [0, 1, 47_999, 48_000, year, 10 * year + 12_345] as [UInt64] {
            let exact = Int64((Double(position) * 1e9 / 48_000).rounded(.down))
            #expect(abs(SyncMarks.captureTime(of: position, start: 42, rate: 48_000) - 42 - exact) <= 1_000, "\(position)")
        }
    }
}
