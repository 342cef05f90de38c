import CameraProtocol

/// The frames a stream did not get since the last frame it was sent (or
/// queued), by reason: reported just ahead of its next frame.
///
/// A stream's frames and drops are decided in capture order on the capture
/// thread, and a tally travels ahead of the frame that follows it (a queued
/// frame carries its own), so a client sees, between any two of its frames,
/// reports whose counts add up to the gap in their sequence numbers: every
/// frame is delivered or reported dropped with a reason, none twice.
/// Frames that `minFrameDuration` skips are neither: AVFoundation does not
/// report them either.
struct DropTally {
    /// Reported in this order; each reason's count and last sequence number.
    static let reasons: [Camerad_V1_DropReason] = [.discontinuity, .frameWasLate, .outOfBuffers]
    private var counts: [(count: Int, lastSequence: UInt64)] = Array(repeating: (0, 0), count: reasons.count)

    var isEmpty: Bool { counts.allSatisfy { $0.count == 0 } }

    /// Counts `count` frames dropped for `reason`, the last of them `sequence`.
    mutating func add(_ reason: Camerad_V1_DropReason, count: Int, sequence: UInt64) {
        guard count > 0, let index = Self.reasons.firstIndex(of: reason) else { return }
        counts[index].count += count
        counts[index].lastSequence = max(counts[index].lastSequence, sequence)
    }

    /// The FramesDropped messages that report the tally, one per reason.
    var messages: [Camerad_V1_StreamResponse] {
        zip(Self.reasons, counts).compactMap { reason, tally in
            guard tally.count > 0 else { return nil }
            var response = Camerad_V1_StreamResponse()
            response.dropped.reason = reason
            response.dropped.count = UInt32(clamping: tally.count)
            response.dropped.lastSequence = tally.lastSequence
            return response
        }
    }
}
