/// Why a stream did not get a frame (AVFoundation's
/// kCMSampleBufferDroppedFrameReason_*).
enum DropReason: CaseIterable, Sendable {
    /// The device skipped it, or camerad lost it (a failed conversion, a pool
    /// replaced while it was made).
    case discontinuity
    /// The stream still held all it may, or its variant's worker was still
    /// busy with two earlier frames.
    case frameWasLate
    /// No slot was free, or the stream's queue was full.
    case outOfBuffers
}

/// The frames a stream did not get since the last frame it was sent (or
/// queued) or the last report, by reason: reported just ahead of its next
/// frame — or at once when the stream holds every frame it may, so that a
/// client holding its frames hears of each drop as it happens.
///
/// A stream's frames and drops are decided in capture order on the capture
/// thread, and a tally travels ahead of the frame that follows it (a queued
/// frame carries its own), so a client sees, between any two of its frames,
/// reports whose counts add up to the gap in their sequence numbers: every
/// frame is delivered or reported dropped with a reason, none twice.
/// Frames that `minFrameDuration` skips are neither: AVFoundation does not
/// report them either.
struct DropTally: Sendable {
    /// One reason's drops: how many, and the last one's sequence number.
    struct Report: Equatable, Sendable {
        let reason: DropReason
        let count: Int
        let lastSequence: UInt64
    }

    /// Each reason's count and last sequence number, in ``DropReason``'s
    /// order: inline, as a stream makes a new tally with every frame.
    private var counts: InlineArray<3, (count: Int, lastSequence: UInt64)> = .init(repeating: (0, 0))

    private static func index(_ reason: DropReason) -> Int {
        switch reason {
        case .discontinuity: 0
        case .frameWasLate: 1
        case .outOfBuffers: 2
        }
    }

    var isEmpty: Bool { counts[0].count == 0 && counts[1].count == 0 && counts[2].count == 0 }

    /// Counts `count` frames dropped for `reason`, the last of them `sequence`.
    mutating func add(_ reason: DropReason, count: Int, sequence: UInt64) {
        guard count > 0 else { return }
        let index = Self.index(reason)
        counts[index].count += count
        counts[index].lastSequence = max(counts[index].lastSequence, sequence)
    }

    /// Counts another tally's drops too.
    mutating func add(_ other: DropTally) {
        for report in other.reports { add(report.reason, count: report.count, sequence: report.lastSequence) }
    }

    /// One report per reason with drops, in order.
    var reports: [Report] {
        DropReason.allCases.compactMap { reason in
            let tally = counts[Self.index(reason)]
            return tally.count > 0 ? Report(reason: reason, count: tally.count, lastSequence: tally.lastSequence) : nil
        }
    }
}
