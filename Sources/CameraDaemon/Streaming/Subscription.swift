import CameraIPC
import Logging

/// A sink's subscription to one node of the graph — a variant of a device's
/// frames, or a ``MediaNode``'s buffers of any media: what it asked for, what
/// it holds, and the policy every sink gets alike — its in-flight limit, its
/// late-frame policy, its queue, its drop tally — whatever the sink (a
/// client's stream, a photo, an encoder, a detector).
///
/// A class guarded by its node's lock: per frame the node reaches each
/// subscription through a reference, never copying what it holds. Messages go
/// to its outbox, which hands them to the sink once the lock is let go.
/// Unchecked Sendable: its `var`s are read and written only under its
/// node's lock (its ``NodeCore``'s: `DeviceStreamer.state`, `MediaNode.state`).
final class Subscription: @unchecked Sendable {
    let id: UInt64
    /// What it costs its owner (a connection and its user, or camerad) in the ``ClientBudget``.
    let charge: ClientBudget.StreamCharge
    let policy: SubscriptionPolicy
    /// Where its messages are posted, for its sink.
    let outbox: StreamOutbox
    /// Its node, for the handles of its frames (``FrameHandle/release()``);
    /// a handle kept past its node gives back nothing.
    private(set) weak var node: (any SubscriptionHost)?

    var poolID: UInt64
    var lifecycle = StreamLifecycle()
    var held: Set<SlotReference> = []
    /// Frames waiting for room, each with the drops that came before it.
    var queue: [(reference: SlotReference, frame: PooledFrame, dropsBefore: DropTally)] = []
    var lastOffered: Int64?
    /// Drops since the last frame sent or queued.
    var drops = DropTally()
    /// For one that starts at keyframes: where it is (``SubscriptionPolicy/startsAtKeyframe``).
    var keyframes: KeyframeWait
    /// Frames dropped as late since the last it took: a sink that stopped
    /// giving frames back (or camerad's bug) — logged once past ``lateRunToLog``.
    private(set) var lateInARow = 0
    /// Whether the run of late frames under way was logged.
    var lateRunLogged = false
    /// Frames it gave back, all told.
    private(set) var released = 0
    /// Late frames in a row worth a line in the log: ten seconds at 30 fps.
    static let lateRunToLog = 300

    /// A slot of a pool, as a subscription holds it.
    struct SlotReference: Hashable {
        let poolID: UInt64
        let slot: Int
    }

    /// Where a subscription that starts at keyframes is: before its first
    /// (what comes before is not its own: skipped, not dropped), taking every
    /// packet, or after a drop (what comes before the next keyframe cannot be
    /// decoded: dropped, as a discontinuity).
    enum KeyframeWait {
        case first
        case taking
        case afterDrop
    }

    init(id: UInt64, node: any SubscriptionHost, charge: ClientBudget.StreamCharge, policy: SubscriptionPolicy,
         outbox: StreamOutbox, poolID: UInt64) {
        self.id = id
        self.node = node
        self.charge = charge
        self.policy = policy
        self.outbox = outbox
        self.poolID = poolID
        keyframes = policy.startsAtKeyframe && !policy.continuesEarlierPackets ? .first : .taking
    }

    /// Whether a frame offered now goes straight to the sink: it holds
    /// less than it may and nothing waits before it (a copying subscription holds nothing).
    var canTakeFrame: Bool { policy.copies || (queue.isEmpty && held.count < policy.maxInFlight) }

    /// Why a frame offered now would be dropped, if it would: late for a
    /// subscription that discards late frames, out of buffers for one whose queue is full.
    var dropReason: DropReason? {
        if canTakeFrame { return nil }
        if policy.alwaysDiscardsLate { return .frameWasLate }
        return queue.count < SubscriptionPolicy.queueLimit ? nil : .outOfBuffers
    }

    /// Whether it takes a frame with these numbers, given its minimum frame
    /// duration. Half a device frame of slack keeps 30 fps from a 60 fps device steady.
    func wants(timestampNanoseconds: Int64, durationNanoseconds: Int64) -> Bool {
        let minimum = policy.minDurationNanoseconds
        guard minimum > 0, let last = lastOffered else { return true }
        return timestampNanoseconds - last >= minimum - durationNanoseconds / 2
    }

    /// Moves it along its lifecycle; an illegal transition is its node's bug,
    /// logged as `node`'s.
    func transition(_ event: StreamLifecycle.Event, of node: String, _ logger: Logger) {
        if case .illegal(let reason) = lifecycle.handle(event) {
            logger.error("\(node): subscription \(id): \(reason)")
            assertionFailure(reason)
        }
    }

    /// Counts a frame it misses. One that starts at keyframes waits for the
    /// next after a packet of its own is lost (the packets between could not be
    /// decoded) — not after `upstream` drops, frames its node never got (an
    /// encoder's input behind): they break nothing in what the node makes.
    func drop(_ reason: DropReason, count: Int = 1, sequence: UInt64, upstream: Bool = false) {
        drops.add(reason, count: count, sequence: sequence)
        if reason == .frameWasLate { lateInARow += count }
        if !upstream && keyframes == .taking && policy.startsAtKeyframe { keyframes = .afterDrop }
    }

    /// Whether a buffer is passed by for want of a keyframe: before its
    /// first, not its own (nothing counted); after a drop, a discontinuity.
    func waitsForKeyframe(_ packet: PacketInfo?, sequence: UInt64) -> Bool {
        guard keyframes != .taking else { return false }
        if packet?.isKeyframe == true {
            keyframes = .taking
            return false
        }
        if keyframes == .afterDrop { drops.add(.discontinuity, count: 1, sequence: sequence) }
        return true
    }

    /// The handle its sink gets for `frame`.
    func handle(_ frame: PooledFrame) -> FrameHandle {
        FrameHandle(frame: frame, subscription: self)
    }

    /// Gives it a converted frame, or drops it for this subscription alone:
    /// the in-flight limit and late-frame policy every sink has.
    func offer(_ frame: PooledFrame) {
        lastOffered = frame.timestampNanoseconds
        if policy.copies {
            // A copy goes: nothing held.
            postDrops()
            outbox.post(.frame(handle(frame)))
            return
        }
        let reference = SlotReference(poolID: frame.pool.id, slot: frame.slot)
        if canTakeFrame {
            frame.pool.references[frame.slot] += 1
            held.insert(reference)
            (lateInARow, lateRunLogged) = (0, false)
            postDrops()
            if !outbox.post(.frame(handle(frame))) {
                // Its frame ring is full (or the sink is gone, and a close follows).
                frame.pool.unreference(frame.slot)
                held.remove(reference)
                drop(.frameWasLate, sequence: frame.sequence)
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
        drop(reason, sequence: sequence)
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

    /// Its sink is done with some slots of a pool (`pool`, while its node
    /// keeps it); queued frames move up. Returns whether a queued frame that
    /// moved up was let go all the same (a pool may be unused now).
    ///
    /// - Throws: `INVALID_ARGUMENT` for a slot it does not hold, or one named twice.
    func release(poolID: UInt64, slots: some Collection<Int>, in pool: MediaPool?) throws(CameraError) -> Bool {
        // A slot not held, or named twice (which would give it back twice and
        // let camerad rewrite it under another sink). A subscription holds at
        // most 16: whatever a list names, this stops within 17.
        for (index, slot) in slots.enumerated() {
            guard held.contains(SlotReference(poolID: poolID, slot: slot)), !slots.prefix(index).contains(slot) else {
                throw CameraError(.invalidArgument,
                                  "slot \(slot) of pool \(poolID) is not held by this stream; release each frame once")
            }
        }
        for slot in slots {
            held.remove(SlotReference(poolID: poolID, slot: slot))
            pool?.unreference(slot)
            released += 1
        }
        return moveQueuedUp()
    }

    /// As it goes: what it holds and what waits for it go back to their
    /// pools (found by id, while their node keeps them).
    func letGoOfEverything(_ pools: (UInt64) -> MediaPool?) {
        for reference in held.union(queue.map(\.reference)) {
            pools(reference.poolID)?.unreference(reference.slot)
        }
        held = []
        queue = []
    }

    /// After a release: queued frames move up while it has room. Returns
    /// whether a slot was let go (a pool may be unused now).
    private func moveQueuedUp() -> Bool {
        var letGo = false
        while held.count < policy.maxInFlight, !queue.isEmpty {
            let next = queue.removeFirst()
            held.insert(next.reference)
            post(next.dropsBefore)
            if !outbox.post(.frame(handle(next.frame))) {
                // Its frame ring is full (or the sink is gone, and a close follows).
                held.remove(next.reference)
                next.frame.pool.unreference(next.reference.slot)
                drop(.frameWasLate, sequence: next.frame.sequence)
                letGo = true
            }
        }
        return letGo
    }
}

/// What a subscription may hold and how it takes frames, whatever the media:
/// AVCaptureVideoDataOutput's settings for a client's video stream, the same
/// for an audio stream, an encoder's or a recorder's.
struct SubscriptionPolicy: Sendable {
    /// Frames waiting for a sink that does not discard late ones.
    static let queueLimit = 3

    /// Frames it holds at most.
    var maxInFlight: Int
    /// True: a frame that finds it holding all it may is dropped (late); false:
    /// queued, up to ``queueLimit``.
    var alwaysDiscardsLate = true
    /// At most one frame per this long; 0: every frame.
    var minDurationNanoseconds: Int64 = 0
    /// Frames copied into its messages (a client's inline delivery): it holds no slot.
    var copies = false
    /// Encoded media: its first packet is a keyframe, and after a drop it
    /// waits for the next (the packets between could not be decoded).
    var startsAtKeyframe = false
    /// With ``startsAtKeyframe``: its sink was given the packets just before
    /// its first (a recording's pre-roll), so its first is taken as it is;
    /// after a drop it still waits for a keyframe.
    var continuesEarlierPackets = false

    /// Slots it may hold at once.
    var slotsHeld: Int { copies ? 0 : maxInFlight + (alwaysDiscardsLate ? 0 : Self.queueLimit) }
}

/// A node that subscriptions hold frames of, and give them back to
/// (``FrameHandle/release()``): a device's streamer, a ``MediaNode``.
protocol SubscriptionHost: AnyObject, Sendable {
    /// A subscription is done with some slots of a pool.
    ///
    /// - Throws: `INVALID_ARGUMENT` for a slot it does not hold.
    func release(_ subscriptionID: UInt64, poolID: UInt64, slots: [Int]) throws
}
