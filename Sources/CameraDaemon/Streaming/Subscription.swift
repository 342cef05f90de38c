import CameraIPC

/// A sink's subscription to one variant of a device's frames: what it asked
/// for, what it holds, and the policy every sink gets alike — its in-flight
/// limit, its late-frame policy, its queue, its drop tally — whatever the sink
/// (a client's stream, a photo, next an encoder or a detector).
///
/// A class guarded by its streamer's lock: per frame the streamer reaches each
/// subscription through a reference, never copying what it holds. Messages go
/// to its outbox, which hands them to the sink once the lock is let go.
/// Unchecked Sendable: its `var`s are read and written only under its
/// streamer's lock (`DeviceStreamer.state`).
final class Subscription: @unchecked Sendable {
    let id: UInt64
    /// What it costs its owner (a connection and its user, or camerad) in the ``ClientBudget``.
    let charge: ClientBudget.StreamCharge
    let options: StreamOptions
    /// Where its messages are posted, for its sink.
    let outbox: StreamOutbox
    /// Where its client writes releases, read as each frame comes; nil: messages only.
    let releaseRing: ReleaseRing?
    /// Where its frames are announced (its outbox writes it); nil: messages only.
    /// Here too, so that a frame's look at its tail is one reference away.
    let frameRing: FrameRing?
    /// Its streamer, for the handles of its frames (``FrameHandle/release()``);
    /// a handle kept past its streamer gives back nothing.
    private(set) weak var streamer: DeviceStreamer?

    var poolID: UInt64
    var lifecycle = StreamLifecycle()
    var held: Set<SlotReference> = []
    /// Frames waiting for room, each with the drops that came before it.
    var queue: [(reference: SlotReference, frame: PooledFrame, dropsBefore: DropTally)] = []
    var lastOffered: Int64?
    /// Drops since the last frame sent or queued.
    var drops = DropTally()

    /// A slot of a pool, as a subscription holds it.
    struct SlotReference: Hashable {
        let poolID: UInt64
        let slot: Int
    }

    init(id: UInt64, streamer: DeviceStreamer, charge: ClientBudget.StreamCharge, options: StreamOptions,
         outbox: StreamOutbox, releaseRing: ReleaseRing?, poolID: UInt64) {
        self.id = id
        self.streamer = streamer
        self.charge = charge
        self.options = options
        self.outbox = outbox
        self.releaseRing = releaseRing
        frameRing = outbox.announcer?.ring
        self.poolID = poolID
    }

    /// Whether a frame offered now goes straight to the sink: it holds
    /// less than it may and nothing waits before it (a copying subscription holds nothing).
    var canTakeFrame: Bool { options.inline || (queue.isEmpty && held.count < options.maxFramesInFlight) }

    /// Why a frame offered now would be dropped, if it would: late for a
    /// subscription that discards late frames, out of buffers for one whose queue is full.
    var dropReason: DropReason? {
        if canTakeFrame { return nil }
        if options.alwaysDiscardsLateFrames { return .frameWasLate }
        return queue.count < StreamOptions.queueLimit ? nil : .outOfBuffers
    }

    /// Whether it takes a frame with these numbers, given its minimum frame
    /// duration. Half a device frame of slack keeps 30 fps from a 60 fps device steady.
    func wants(timestampNanoseconds: Int64, durationNanoseconds: Int64) -> Bool {
        let minimum = options.minFrameDurationNanoseconds
        guard minimum > 0, let last = lastOffered else { return true }
        return timestampNanoseconds - last >= minimum - durationNanoseconds / 2
    }

    /// The handle its sink gets for `frame`.
    func handle(_ frame: PooledFrame) -> FrameHandle {
        FrameHandle(frame: frame, subscription: self)
    }

    /// Gives it a converted frame, or drops it for this subscription alone:
    /// the in-flight limit and late-frame policy every sink has.
    func offer(_ frame: PooledFrame) {
        lastOffered = frame.timestampNanoseconds
        if options.inline {
            // A copy goes: nothing held.
            postDrops()
            outbox.post(.frame(handle(frame)))
            return
        }
        let reference = SlotReference(poolID: frame.pool.id, slot: frame.slot)
        if canTakeFrame {
            frame.pool.references[frame.slot] += 1
            held.insert(reference)
            postDrops()
            if !outbox.post(.frame(handle(frame))) {
                // Its frame ring is full (or the sink is gone, and a close follows).
                frame.pool.unreference(frame.slot)
                held.remove(reference)
                drops.add(.frameWasLate, count: 1, sequence: frame.sequence)
            }
        } else if let reason = dropReason {
            dropHeld(frame.sequence, reason)
        } else {
            frame.pool.references[frame.slot] += 1
            queue.append((reference, frame, drops))
            drops = DropTally()
        }
    }

    /// A frame it misses because it holds all it may (or its queue is full).
    /// With nothing queued, reported now rather than with its next frame: a
    /// client holding its frames hears of each one it misses as it goes
    /// (AVFoundation's didDrop) instead of silence until it lets one go.
    /// Behind queued frames it waits its turn, to keep capture order.
    func dropHeld(_ sequence: UInt64, _ reason: DropReason) {
        drops.add(reason, count: 1, sequence: sequence)
        guard queue.isEmpty else { return }
        postDrops()
    }

    /// Posts the drops since its last frame, if any, and starts a new tally.
    func postDrops() {
        post(drops)
        drops = DropTally()
    }

    /// Posts a tally, if it has drops.
    func post(_ tally: DropTally) {
        if !tally.isEmpty { outbox.post(.dropped(tally)) }
    }

    /// After a release: queued frames move up while it has room. Returns
    /// whether a slot was let go (a pool may be unused now).
    func moveQueuedUp(_ pools: [UInt64: VariantPool]) -> Bool {
        var letGo = false
        while held.count < options.maxFramesInFlight, !queue.isEmpty {
            let next = queue.removeFirst()
            held.insert(next.reference)
            post(next.dropsBefore)
            if !outbox.post(.frame(handle(next.frame))) {
                // Its frame ring is full (or the sink is gone, and a close follows).
                held.remove(next.reference)
                pools[next.reference.poolID]?.unreference(next.reference.slot)
                drops.add(.frameWasLate, count: 1, sequence: next.frame.sequence)
                letGo = true
            }
        }
        return letGo
    }
}

/// A frame as a sink holds it: the frame in its pool's slot, and the way to
/// give it back, by itself (libcamera's FrameBuffer, PipeWire's pw_buffer) —
/// no stream id or streamer in the sink's hands. A copy (a copying
/// subscription's) holds no slot: releasing it does nothing.
struct FrameHandle: Sendable {
    let frame: PooledFrame
    let subscription: Subscription

    /// The same frame, its bytes copied out of the slot (under the streamer's lock).
    func copied() -> FrameHandle {
        FrameHandle(frame: PooledFrame(copying: frame), subscription: subscription)
    }

    /// Gives the slot back to the pool; queued frames move up.
    ///
    /// - Throws: `INVALID_ARGUMENT` when it was given back already.
    func release() throws {
        guard frame.copied == nil else { return }
        try subscription.streamer?.release(subscription.id, poolID: frame.pool.id, slots: [frame.slot])
    }
}
