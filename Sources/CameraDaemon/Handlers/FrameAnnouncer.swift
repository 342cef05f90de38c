import CameraIPC

/// A stream's frames and drops written to its client's ``FrameRing`` under the
/// streamer's lock, in the order decided, instead of messages: the client's
/// user's ``FrameSignal`` is raised once for all their rings after the lock is
/// let go (``UnsentOutboxes``). News that still travels on the socket
/// (FormatChanged, StreamInterrupted) gets a news record in its place.
///
/// Never waits on the client: a frame that finds no room (or drops or news
/// still waiting for room before it) is refused, and the streamer counts it
/// late; a drop report or a news record waits here until there is room, ahead
/// of the next frame. So a client that falls behind loses frames, never its
/// stream, and one that stopped reading costs only itself.
final class FrameAnnouncer: FrameAnnouncing {
    let ring: FrameRing
    let signal: FrameSignal
    /// What found no room yet: drops, and news records (after the drops); the
    /// ring is written under this lock too (and under the streamer's: one writer at a time).
    private struct Waiting {
        var drops = DropTally()
        var news = 0
    }
    private let waiting = OrderedMutex(.frameAnnouncer, Waiting())

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
            // Drops reported while news waits go ahead of it: their numbers, not
            // their place among the news, say which frames they stand for.
            waiting.drops.add(drops)
            return writeWaiting(&waiting)
        }
    }

    /// A news record for a message that goes on the socket, now or once there
    /// is room (frames wait behind it); true when written now.
    func news() -> Bool {
        waiting.withLock { waiting in
            waiting.news += 1
            return writeWaiting(&waiting)
        }
    }

    /// The drops that never found room, to go as messages before the stream's
    /// end (news never written is read after the ring, as the protocol says).
    func takeWaiting() -> DropTally {
        waiting.withLock { waiting in
            _ = writeWaiting(&waiting)
            defer { waiting = Waiting() }
            return waiting.drops
        }
    }

    /// Writes the waiting drop reports, then the waiting news records; false when some still wait.
    private func writeWaiting(_ waiting: inout Waiting) -> Bool {
        if !waiting.drops.isEmpty {
            let reports = waiting.drops.reports
            guard let room = ring.room, room >= reports.count else { return false }
            for report in reports {
                _ = ring.write(.dropped(reason: report.reason.wireValue,
                                        count: UInt64(report.count), lastSequence: report.lastSequence))
            }
            waiting.drops = DropTally()
        }
        while waiting.news > 0 {
            guard ring.write(.news) else { return false }
            waiting.news -= 1
        }
        return true
    }
}
