import CameraIPC

/// A client stream's shared-memory transport, when it asked for one: its
/// release ring (read under the streamer's lock as each frame comes) and its
/// frame ring with its user's frame signal (written under it). The client's
/// sink (``ClientStreamSink``) holds them; the graph sees only what any sink
/// may have (``FrameSink/descriptorsHeld``, ``FrameSink/announcer``,
/// ``FrameSink/readReleases(_:)``).
final class ClientRings: Sendable {
    /// Where its client writes releases; nil: ReleaseFrames messages only.
    let releaseRing: ReleaseRing?
    /// Where its frames are announced; nil: FrameReady messages only.
    let announcer: FrameAnnouncer?

    /// Makes the rings asked for (none: nil); a frame ring shares `user`'s
    /// frame signal on `device`, made with its first ring there.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when a ring or the signal cannot be made,
    ///   or past the user's descriptors.
    init?(releaseRing: Bool, frameRing: Bool, user: UInt32, device: String, budget: ClientBudget) throws(CameraError) {
        guard releaseRing || frameRing else { return nil }
        do {
            self.releaseRing = releaseRing ? try ReleaseRing() : nil
            let ring = frameRing ? try FrameRing() : nil
            announcer = try ring.map { ring throws(CameraError) in
                FrameAnnouncer(ring: ring, signal: try Self.frameSignal(for: user, on: device, budget: budget))
            }
        } catch let error as CameraError {
            throw error
        } catch {
            throw CameraError(.resourceExhausted, "cannot make a release or frame ring: \(error); open the stream without one")
        }
    }

    /// Descriptors the rings hold (charged with the stream; the signal is its user's).
    var descriptors: Int { (releaseRing == nil ? 0 : 1) + (announcer == nil ? 0 : 1) }

    /// Reads what the client wrote to its rings since the last look: each
    /// release, and whether its frame ring's tail made sense when last read.
    ///
    /// - Throws: INVALID_ARGUMENT for a ring that makes no sense, or a release `release` refuses.
    func read(_ release: (_ poolID: UInt64, _ slot: Int) throws(CameraError) -> Void) throws(CameraError) {
        if announcer?.ring.tailMadeNoSense == true {
            throw CameraError(.invalidArgument,
                              "the frame ring's tail is behind an earlier one or ahead of its head; store the count of records read")
        }
        guard let ring = releaseRing else { return }
        let sane = try ring.read { (poolID, slot) throws(CameraError) in try release(poolID, Int(slot)) }
        guard sane else {
            throw CameraError(.invalidArgument,
                              "the release ring's head is behind its tail or more than \(ring.capacity) ahead; write each release once, then its head")
        }
    }

    // MARK: - Frame signals

    /// Whose frame signal: a user's, on a device (by uniqueID, which outlives
    /// a device unplugged and plugged in again).
    private struct SignalOwner: Hashable {
        let user: UInt32
        let device: String
    }

    /// Every user's frame signal on every device, made for the user's first
    /// stream with a frame ring there and kept while camerad runs: a signal is
    /// never closed (``FrameSignal``), so it is used again. Takes the client
    /// budget's lock under it.
    private static let frameSignals = OrderedMutex<[SignalOwner: FrameSignal]>(.frameSignals, [:])

    /// Descriptors a frame signal holds, charged to its user once: its eventfd
    /// and its epoll instance.
    static let signalDescriptors = 2

    /// The frame signal of `user`'s streams on `device`.
    ///
    /// - Throws: RESOURCE_EXHAUSTED past the user's descriptors, or when none can be made.
    private static func frameSignal(for user: UInt32, on device: String, budget: ClientBudget) throws(CameraError) -> FrameSignal {
        let owner = SignalOwner(user: user, device: device)
        return try frameSignals.withLock { signals throws(CameraError) in
            if let signal = signals[owner] { return signal }
            try budget.chargeUser(user, descriptors: signalDescriptors, "a frame ring's signal")
            do {
                let signal = try FrameSignal()
                signals[owner] = signal
                return signal
            } catch {
                budget.refundUser(user, descriptors: signalDescriptors)
                throw CameraError(.resourceExhausted, "cannot make a frame ring's signal (\(error)); open the stream without one")
            }
        }
    }
}
