import CameraIPC
import CameraMedia
import Logging
import Synchronization

/// A node of the media graph under a lock of its own: a source of buffers
/// of any media (a microphone's periods) or a node derived from another
/// node's buffers (a resampler, an encoder, a detector: its input is a
/// ``NodeInput``, a sink like any other; ``DerivedNode``). It writes each
/// buffer once into a slot of its ``MediaPool`` and offers it to every
/// subscription through its ``NodeCore`` — the same code a camera's variant
/// node (``VariantNode``) runs: the same ``Subscription`` (in-flight limit,
/// late-frame policy, queue, ``DropTally``), ``FrameHandle``s its sinks give
/// back by themselves, and charges to each subscription's owner in the
/// ``ClientBudget`` — a node several connections share is charged once, to
/// camerad, and each connection its own subscription.
///
/// ```
/// source thread or input's worker ─► publish: subscriptions that want it (frame rate, keyframe)
///     none with room ─► each drops it;  no free slot ─► each drops it (OUT_OF_BUFFERS)
///     else a free slot, written once with the lock let go ─► offered to each
/// upstream drops ─► each subscription's tally, ahead of its next buffer
/// ```
///
/// Its pool has room for everything its subscriptions may hold, plus the slot
/// being written, and grows (doubling) when a subscription needs more: so one
/// that never gives back costs only itself. Buffers are published by one
/// thread at a time, in order.
final class MediaNode: SubscriptionHost {
    /// What the log and errors call it ("the test resampler", "camera X's encoder").
    let name: String
    let budget: ClientBudget
    let logger: Logger
    let state: OrderedMutex<State>
    /// Subscriptions' outboxes with messages posted under the lock (``StreamOutbox``).
    let unsent = UnsentOutboxes()

    /// Guarded by ``state``'s lock.
    struct State {
        /// Its pool (never nil), the ones it outgrew, its subscriptions.
        var core: NodeCore<MediaPool>
        var nextID: UInt64 = 1
        /// It ended: no new subscription, nothing more published.
        var isEnded = false

        /// Where buffers are written now.
        var pool: MediaPool { core.pool! }
    }

    /// The most slots its pool grows to (within `maxBytes`, at least its first size).
    let maxSlots: Int
    /// The most of ``maxSlots`` one connection's subscriptions may hold; nil: all.
    private let connectionShare: Int?
    private let media: MediaLayout

    /// Makes the node and its pool (a memfd; no lock may be held), charged to camerad's pools.
    ///
    /// - Parameters:
    ///   - maxBytes: the most its pool grows to.
    ///   - connectionShare: the part of its buffers one connection's
    ///     subscriptions may hold (a quarter: 4), so that one client cannot
    ///     take a node others subscribe to; nil: no share.
    /// - Throws: RESOURCE_EXHAUSTED past the pools' memory or descriptors.
    init(name: String, media: MediaLayout, slots: Int, maxBytes: Int = 64 << 20, connectionShare: Int? = nil,
         budget: ClientBudget, logger: Logger) throws(CameraError) {
        self.name = name
        self.budget = budget
        self.logger = logger
        self.media = media
        let maxSlots = max(slots, maxBytes / MediaPool.slotSize(of: media))
        self.maxSlots = maxSlots
        self.connectionShare = connectionShare.map { max(1, maxSlots / $0) }
        let pool = try Self.makePool(name, media, slots: slots, budget: budget)
        state = OrderedMutex(.mediaNode, State(core: NodeCore(name: name, budget: budget, logger: logger, pool: pool)))
    }

    private static func makePool(_ name: String, _ media: MediaLayout, slots: Int, budget: ClientBudget) throws(CameraError) -> MediaPool {
        do {
            return try MediaPool(id: MediaPool.nextID(), media: media, ownSlots: slots, budget: budget)
        } catch let error as CameraError {
            throw error
        } catch {
            throw CameraError(.resourceExhausted, "cannot make \(name)'s pool of \(slots) × \(media): \(error)")
        }
    }

    /// Runs `body` under the node's lock; what it posted is sent once the lock is let go.
    private func locked<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        try unsent.locked(state, body)
    }

    // MARK: - Subscriptions

    /// Subscribes `sink` to the node's buffers from the next one on; it is
    /// told it started, with the pool, at once. Charged to `owner`. A pool
    /// without room for what the subscriptions may hold is replaced by one
    /// twice its size (made with no lock held), as a camera's variant pool
    /// grows: the subscriptions move to it and are told (``FrameSink/formatChanged(_:)``),
    /// keeping the old one's slots until they give them back. So one that holds
    /// all it may, never giving back, costs only itself and its owner's budget.
    ///
    /// - Returns: the subscription's id, for ``unsubscribe(_:)``.
    /// - Throws: INVALID_STATE once the node ended; RESOURCE_EXHAUSTED past the
    ///   pool's largest size, the pools' memory, or the owner's budget.
    func subscribe(_ sink: any FrameSink, policy: SubscriptionPolicy, for owner: ClientBudget.Owner) throws(CameraError) -> UInt64 {
        var prepared: MediaPool?
        while true {
            switch try subscribe(sink, policy: policy, owner: owner, prepared: prepared) {
            case .subscribed(let id): return id
            case .needsPool(let slots): prepared = try Self.makePool(name, media, slots: slots, budget: budget)
            }
        }
    }

    private enum SubscribeStep {
        case subscribed(UInt64)
        /// A larger pool is needed first, of this many slots.
        case needsPool(Int)
    }

    private func subscribe(_ sink: any FrameSink, policy: SubscriptionPolicy, owner: ClientBudget.Owner,
                           prepared: MediaPool?) throws(CameraError) -> SubscribeStep {
        try locked { state throws(CameraError) in
            guard !state.isEnded else {
                throw CameraError(.invalidState, "\(name) has ended; subscribe to its successor")
            }
            if let share = connectionShare, case .client = owner {
                let own = state.core.subscriptions.filter { $0.charge.owner == owner }.reduce(0) { $0 + $1.policy.slotsHeld }
                guard own + policy.slotsHeld <= share else {
                    throw CameraError(.resourceExhausted, "this connection's subscriptions to \(name) hold \(own) of the \(share) buffers "
                        + "one connection may; end some (or use another connection's)")
                }
            }
            if let size = state.core.poolSize(adding: policy.slotsHeld) {
                guard size.needed <= maxSlots else {
                    throw CameraError(.resourceExhausted,
                                      "\(name)'s buffers are spoken for (its subscriptions may hold \(state.core.slotsHeld) of at most \(maxSlots)); ask for fewer in flight")
                }
                guard let prepared, prepared.ownSlots >= size.needed else { return .needsPool(min(maxSlots, size.grown)) }
                logger.info("\(name): its pool grows from \(state.pool.ownSlots) to \(prepared.ownSlots) buffers for a new subscription")
                state.core.move(to: prepared, news: StreamNews(pool: prepared, mode: nil, note: "a larger pool for a new subscription", device: nil))
            }
            let pool = state.pool
            let charge = try budget.chargeStream(owner, bytes: max(1, policy.slotsHeld) * pool.slotSize,
                                                 descriptors: sink.descriptorsHeld, "a subscription to \(name)")
            let id = state.nextID
            state.nextID += 1
            let subscription = Subscription(id: id, node: self, charge: charge, policy: policy,
                                            outbox: StreamOutbox(sink: sink, copies: policy.copies, unsent: unsent),
                                            poolID: pool.id)
            state.core.add(subscription)
            subscription.outbox.post(.started(StreamNews(pool: pool, mode: nil, note: nil, device: nil)))
            subscription.transition(.started, of: name, logger)
            return .subscribed(id)
        }
    }

    /// Ends a subscription as its sink asked: what it holds goes back, its
    /// charge is refunded; its sink hears nothing more.
    func unsubscribe(_ id: UInt64) {
        locked { state in _ = state.core.remove(id) }
    }

    func release(_ subscriptionID: UInt64, poolID: UInt64, slots: [Int]) throws {
        try locked { state throws(CameraError) in
            guard let subscription = state.core.subscriptions[id: subscriptionID] else { return }
            _ = try state.core.release(subscription, poolID: poolID, slots: slots)
        }
    }

    // MARK: - Buffers

    /// Publishes one buffer: written by `write` (which returns the bytes it
    /// wrote) into a free slot, with the lock let go, then offered to every
    /// subscription that wants it; or dropped, for each, with its reason.
    /// Returns whether any subscription was offered it.
    @discardableResult
    func publish(
        sequence: UInt64, timestampNanoseconds: Int64, durationNanoseconds: Int64, packet: PacketInfo? = nil,
        write: (UnsafeMutableRawBufferPointer) throws -> Int
    ) -> Bool {
        let target = locked { state -> (pool: MediaPool, slot: Int, subscriptions: [Subscription])? in
            guard !state.isEnded else { return nil }
            _ = state.core.readReleases()
            guard let wanting = state.core.wanting(state.core.subscriptions, sequence: sequence, timestampNanoseconds: timestampNanoseconds,
                                                   durationNanoseconds: durationNanoseconds, packet: packet),
                  let (pool, slot) = state.core.slot(for: wanting, sequence: sequence) else { return nil }
            return (pool, slot, wanting)
        }
        guard let (pool, slot, subscriptions) = target else { return false }

        // Written with the lock free: releases go on meanwhile.
        let written: Int?
        do {
            let count = try write(pool.slot(slot))
            guard (0...pool.slotSize).contains(count) else {
                throw CameraError(.internalError, "wrote \(count) bytes into a slot of \(pool.slotSize)")
            }
            written = count
        } catch {
            logger.error("\(name): making buffer \(sequence) failed: \(error)")
            written = nil
        }

        return locked { state in
            pool.writing = nil
            let frame = written.map { written in
                pool.bytesUsed[slot] = written
                return PooledFrame(pool: pool, slot: slot, sequence: sequence, timestampNanoseconds: timestampNanoseconds,
                                   durationNanoseconds: durationNanoseconds, bytesUsed: written, packet: packet)
            }
            return state.core.offer(frame, sequence: sequence, to: subscriptions)
        }
    }

    /// Buffers its input did not get (upstream drops): each subscription
    /// hears of them ahead of its next buffer, as gaps in the source — what
    /// this node made after them is whole (an encoder's packets after a frame
    /// it never got decode), so none waits for a keyframe for them.
    func report(_ drops: DropTally) {
        locked { state in
            for subscription in state.core.subscriptions where subscription.lifecycle.receivesFrames {
                for report in drops.reports {
                    subscription.drop(report.reason, count: report.count, sequence: report.lastSequence, upstream: true)
                }
            }
        }
    }

    /// Ends the node and every subscription: drops not yet reported go
    /// first, then `interruption` if it ended by itself, then the end
    /// (`error` nil: it ended as asked). Later calls do nothing.
    func end(_ interruption: StreamInterruption? = nil, _ error: CameraError? = nil) {
        locked { state in
            guard !state.isEnded else { return }
            state.isEnded = true
            state.core.endAll(interruption, error)
        }
    }
}
