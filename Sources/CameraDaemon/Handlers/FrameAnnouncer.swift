import CameraIPC

/// A stream's frames and drops written to its client's ``FrameRing`` under the
/// streamer's lock, in the order decided, instead of messages: the client's
/// user's ``FrameSignal`` is raised once for all their rings after the lock is
/// let go (``UnsentOutboxes``). News that still travels on the socket
/// (FormatChanged, StreamInterrupted) gets a news record in its place.
///
/// Never waits on the client: a frame that finds no room (or drops still
/// waiting for room before it) is refused, and the streamer counts it late; a
/// drop report waits here until there is room, ahead of the next frame.
final class FrameAnnouncer: FrameAnnouncing {
    let ring: FrameRing
    let signal: FrameSignal
    /// Drops that found no room yet; the ring is written under this lock too
    /// (and under the streamer's: one writer at a time).
    private let waiting = OrderedMutex(.frameAnnouncer, DropTally())

    init(ring: FrameRing, signal: FrameSignal) {
        self.ring = ring
        self.signal = signal
    }

    /// A frame's record; false when there is no room for it (or for the drops before it).
    func frame(_ frame: PooledFrame) -> Bool {
        waiting.withLock { waiting in
            guard writeWaiting(&waiting) else { return false }
            return ring.write(.frame(poolID: frame.pool.id, slot: UInt32(frame.slot), sequence: frame.sequence,
                                     presentationTimeNs: frame.timestampNanoseconds, durationNs: frame.durationNanoseconds,
                                     bytesUsed: UInt64(frame.bytesUsed)))
        }
    }

    /// Drop reports, now or once there is room; true when written now.
    func dropped(_ drops: DropTally) -> Bool {
        waiting.withLock { waiting in
            waiting.add(drops)
            return writeWaiting(&waiting)
        }
    }

    /// A news record for a message that goes on the socket; false when there
    /// is no room: the client stopped reading, and the stream should end.
    func news() -> Bool {
        waiting.withLock { waiting in writeWaiting(&waiting) && ring.write(.news) }
    }

    /// The drops that never found room, to go as messages before the stream's end.
    func takeWaiting() -> DropTally {
        waiting.withLock { waiting in
            _ = writeWaiting(&waiting)
            defer { waiting = DropTally() }
            return waiting
        }
    }

    /// Writes the waiting drop reports; false when some still wait.
    private func writeWaiting(_ waiting: inout DropTally) -> Bool {
        guard !waiting.isEmpty else { return true }
        let reports = waiting.reports
        guard let room = ring.room, room >= reports.count else { return false }
        for report in reports {
            _ = ring.write(.dropped(reason: report.reason.wireValue,
                                    count: UInt64(report.count), lastSequence: report.lastSequence))
        }
        waiting = DropTally()
        return true
    }
}
