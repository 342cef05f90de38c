import CameraIPC
import CameraMedia
import Logging
import Synchronization

/// A node of the media graph that is not a camera's variant: a source of
/// buffers of any media (a microphone's periods) or a node derived from
/// another node's buffers (a resampler, an encoder, a detector: its input is
/// a ``NodeInput``, a sink like any other). It writes each buffer once into a
/// slot of its ``MediaPool`` and offers it to every subscription, with what a
/// camera's variants give theirs: the same ``Subscription`` (in-flight limit,
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
        /// Where buffers are written now.
        var pool: MediaPool
        /// Pools it outgrew whose slots subscriptions still hold: valid until given back.
        var retired: [MediaPool] = []
        var subscriptions = Subscriptions()
        var nextID: UInt64 = 1
        /// It ended: no new subscription, nothing more published.
        var isEnded = false

        /// Its pool with this id, current or retired.
        func pool(_ id: UInt64) -> MediaPool? {
            pool.id == id ? pool : retired.first { $0.id == id }
        }

        /// Lets go of outgrown pools nobody holds a slot of.
        mutating func dropRetiredPools() {
            retired.removeAll { $0.slotsInUse == 0 }
        }
    }

    /// A node's subscriptions in the order they were made (by id, as ids
    /// only grow): every buffer is offered in that order with no sort, and
    /// one is found by id with a binary search.
    struct Subscriptions: Sequence {
        private var ordered: [Subscription] = []

        func makeIterator() -> IndexingIterator<[Subscription]> { ordered.makeIterator() }

        /// - Precondition: its id is above every other's.
        mutating func append(_ subscription: Subscription) {
            precondition(ordered.last.map { $0.id < subscription.id } ?? true, "subscription ids only grow")
            ordered.append(subscription)
        }

        subscript(id id: UInt64) -> Subscription? {
            index(of: id).map { ordered[$0] }
        }

        mutating func remove(_ id: UInt64) -> Subscription? {
            index(of: id).map { ordered.remove(at: $0) }
        }

        private func index(of id: UInt64) -> Int? {
            var (low, high) = (0, ordered.count)
            while low < high {
                let middle = (low + high) / 2
                if ordered[middle].id < id { low = middle + 1 } else { high = middle }
            }
            return low < ordered.count && ordered[low].id == id ? low : nil
        }
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
        state = OrderedMutex(.mediaNode, State(pool: try Self.makePool(name, media, slots: slots, budget: budget)))
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
            let held = state.subscriptions.reduce(0) { $0 + $1.policy.slotsHeld }
            if let share = connectionShare, case .client = owner {
                let own = state.subscriptions.filter { $0.charge.owner == owner }.reduce(0) { $0 + $1.policy.slotsHeld }
                guard own + policy.slotsHeld <= share else {
                    throw CameraError(.resourceExhausted, "this connection's subscriptions to \(name) hold \(own) of the \(share) buffers "
                        + "one connection may; end some (or use another connection's)")
                }
            }
            let needed = held + policy.slotsHeld + MediaPool.spareSlots
            if needed > state.pool.ownSlots {
                guard needed <= maxSlots else {
                    throw CameraError(.resourceExhausted,
                                      "\(name)'s buffers are spoken for (its subscriptions may hold \(held) of at most \(maxSlots)); ask for fewer in flight")
                }
                guard let prepared, prepared.ownSlots >= needed else {
                    return .needsPool(min(maxSlots, max(needed, state.pool.ownSlots * 2)))
                }
                grow(to: prepared, &state)
            }
            let pool = state.pool
            let charge = try budget.chargeStream(owner, bytes: max(1, policy.slotsHeld) * pool.slotSize,
                                                 descriptors: sink.descriptorsHeld, "a subscription to \(name)")
            let id = state.nextID
            state.nextID += 1
            let subscription = Subscription(id: id, node: self, charge: charge, policy: policy,
                                            outbox: StreamOutbox(sink: sink, copies: policy.copies, unsent: unsent),
                                            poolID: pool.id)
            state.subscriptions.append(subscription)
            pool.subscriptionIDs.insert(id)
            subscription.outbox.post(.started(StreamNews(pool: pool, mode: nil, note: nil, device: nil)))
            subscription.transition(.started, of: name, logger)
            return .subscribed(id)
        }
    }

    /// Makes `larger` the pool buffers are written to; the subscriptions move
    /// to it, told so, and keep the old one's slots until they give them back.
    private func grow(to larger: MediaPool, _ state: inout State) {
        let old = state.pool
        state.retired.append(old)
        state.pool = larger
        logger.info("\(name): its pool grows from \(old.ownSlots) to \(larger.ownSlots) buffers for a new subscription")
        for subscription in state.subscriptions {
            subscription.poolID = larger.id
            larger.subscriptionIDs.insert(subscription.id)
            guard subscription.lifecycle.receivesFrames else { continue }
            subscription.outbox.post(.formatChanged(StreamNews(pool: larger, mode: nil, note: "a larger pool for a new subscription",
                                                               device: nil)))
        }
        old.subscriptionIDs = []
        state.dropRetiredPools()
    }

    /// Ends a subscription as its sink asked: what it holds goes back, its
    /// charge is refunded; its sink hears nothing more.
    func unsubscribe(_ id: UInt64) {
        locked { state in _ = remove(id, &state) }
    }

    func release(_ subscriptionID: UInt64, poolID: UInt64, slots: [Int]) throws {
        try locked { state throws(CameraError) in
            guard let subscription = state.subscriptions[id: subscriptionID] else { return }
            _ = try subscription.release(poolID: poolID, slots: slots, in: state.pool(poolID))
            if poolID != state.pool.id { state.dropRetiredPools() }
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
            readReleases(&state)
            let wanting = state.subscriptions.filter { subscription in
                subscription.lifecycle.receivesFrames
                    && !subscription.waitsForKeyframe(packet, sequence: sequence)
                    && subscription.wants(timestampNanoseconds: timestampNanoseconds, durationNanoseconds: durationNanoseconds)
            }
            for subscription in wanting { subscription.lastOffered = timestampNanoseconds }
            // Nothing written for subscriptions that would only drop it.
            if wanting.allSatisfy({ $0.dropReason != nil }) {
                for subscription in wanting { subscription.dropHeld(sequence, subscription.dropReason!) }
                return nil
            }
            guard let slot = state.pool.freeSlot() else {
                for subscription in wanting { subscription.dropHeld(sequence, .outOfBuffers) }
                return nil
            }
            state.pool.writing = slot
            return (state.pool, slot, wanting)
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
            // Those still receiving (one may have ended while the buffer was written).
            let current = subscriptions.lazy.filter(\.lifecycle.receivesFrames)
            guard let written else {
                for subscription in current { subscription.dropHeld(sequence, .discontinuity) }
                return false
            }
            pool.bytesUsed[slot] = written
            let frame = PooledFrame(pool: pool, slot: slot, sequence: sequence, timestampNanoseconds: timestampNanoseconds,
                                    durationNanoseconds: durationNanoseconds, bytesUsed: written, packet: packet)
            var offered = false
            for subscription in current {
                subscription.offer(frame)
                offered = true
            }
            return offered
        }
    }

    /// Buffers its input did not get (upstream drops): each subscription
    /// hears of them ahead of its next buffer, as gaps in the source — what
    /// this node made after them is whole (an encoder's packets after a frame
    /// it never got decode), so none waits for a keyframe for them.
    func report(_ drops: DropTally) {
        locked { state in
            for subscription in state.subscriptions where subscription.lifecycle.receivesFrames {
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
            for subscription in state.subscriptions.map(\.id).compactMap({ remove($0, &state) }) {
                subscription.postDrops()
                if let interruption, let error { subscription.outbox.post(.interrupted(interruption, error)) }
                subscription.outbox.post(.end(error))
            }
        }
    }

    /// Reads what sinks gave back without a message since the last buffer (a
    /// client's release ring: ``FrameSink/readReleases(_:)``), under the lock.
    /// What makes no sense ends that subscription alone with INVALID_ARGUMENT.
    private func readReleases(_ state: inout State) {
        var broken: [(UInt64, CameraError)] = []
        for subscription in state.subscriptions {
            do throws(CameraError) {
                try subscription.outbox.sink.readReleases { (poolID, slot) throws(CameraError) in
                    _ = try subscription.release(poolID: poolID, slots: CollectionOfOne(slot), in: state.pool(poolID))
                }
            } catch {
                broken.append((subscription.id, error))
            }
        }
        for (id, error) in broken {
            logger.notice("\(name): subscription \(id) ended: \(error.message)")
            remove(id, &state)?.outbox.post(.end(error))
        }
        state.dropRetiredPools()
    }

    // MARK: -

    private func remove(_ id: UInt64, _ state: inout State) -> Subscription? {
        guard let subscription = state.subscriptions.remove(id) else { return nil }
        subscription.transition(.closed, of: name, logger)
        let (current, retired) = (state.pool, state.retired)
        subscription.letGoOfEverything { id in current.id == id ? current : retired.first { $0.id == id } }
        state.dropRetiredPools()
        budget.refund(subscription.charge)
        return subscription
    }
}
