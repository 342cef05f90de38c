import CameraIPC
import CameraMedia
import Logging

/// What every node of the graph keeps under its lock — its pool, the pools
/// it outgrew that subscriptions still hold, its subscriptions — and the one
/// implementation of what every node does with them, whatever the media and
/// wherever its buffers come from: pick who wants a buffer and a slot to
/// write it in, offer it once written, take slots back (by message or read
/// from a client's ring), move its subscriptions to a new pool, remove one,
/// end them all. A ``MediaNode`` holds one under its own lock; a camera's
/// ``VariantNode`` holds one under its ``DeviceStreamer``'s lock, whose
/// capture lends the pool its buffers (``VariantPool``).
///
/// ```
/// wanting(…)  receiving, past its keyframe wait, its frame rate ─► none with room: each drops it
/// slot()      a free slot, marked as being written (the node writes it with the lock let go)
/// offer(…)    to each still receiving from that pool; a write that failed: a discontinuity for each
/// ```
struct NodeCore<Pool: MediaPool> {
    /// What the log and errors call the node ("virtual-0", "the test resampler").
    let name: String
    let budget: ClientBudget
    let logger: Logger
    /// Where buffers are written now; nil while it has none (a camera's variant nobody streams).
    var pool: Pool?
    /// Pools it outgrew whose slots subscriptions still hold: valid until given back.
    var retired: [Pool] = []
    var subscriptions = Subscriptions()

    init(name: String, budget: ClientBudget, logger: Logger, pool: Pool?) {
        self.name = name
        self.budget = budget
        self.logger = logger
        self.pool = pool
    }

    /// Its pool with this id, current or retired.
    func pool(_ id: UInt64) -> Pool? {
        pool?.id == id ? pool : retired.first { $0.id == id }
    }

    /// Lets go of outgrown pools nobody holds a slot of.
    mutating func dropRetiredPools() {
        retired.removeAll { $0.slotsInUse == 0 }
    }

    /// Slots its subscriptions may hold together.
    var slotsHeld: Int { subscriptions.reduce(0) { $0 + $1.policy.slotsHeld } }

    /// The slots its pool needs for its subscriptions and a new one that may
    /// hold `slots`, with the one being written, and the size to grow to (at
    /// least double: a crowd joining one by one moves pools a few times, not
    /// once each); nil when its pool has room. So one that holds all it may,
    /// never giving back, costs only itself: its neighbours always find a free slot.
    func poolSize(adding slots: Int) -> (needed: Int, grown: Int)? {
        let needed = slotsHeld + slots + MediaPool.spareSlots
        if let pool, pool.ownSlots >= needed { return nil }
        return (needed, max(needed, 2 * (pool?.ownSlots ?? 0)))
    }

    // MARK: - A buffer's way

    /// Those of `candidates` that take a buffer with these numbers (receiving,
    /// not waiting for a keyframe, past their minimum frame duration), each
    /// marked as offered it; nil when none has room for it (each of those
    /// drops it, with its reason): nothing is written for subscriptions that
    /// would only drop it.
    func wanting(_ candidates: some Sequence<Subscription>, sequence: UInt64, timestampNanoseconds: Int64,
                 durationNanoseconds: Int64, packet: PacketInfo? = nil) -> [Subscription]? {
        let wanting = candidates.filter { subscription in
            subscription.lifecycle.receivesFrames
                && !subscription.waitsForKeyframe(packet, sequence: sequence)
                && subscription.wants(timestampNanoseconds: timestampNanoseconds, durationNanoseconds: durationNanoseconds)
        }
        for subscription in wanting { subscription.lastOffered = timestampNanoseconds }
        guard wanting.allSatisfy({ $0.dropReason != nil }) else { return wanting }
        for subscription in wanting { subscription.dropHeld(sequence, subscription.dropReason!) }
        return nil
    }

    /// A free slot of the current pool, marked as being written; nil (and
    /// `wanting` each drop the buffer, OUT_OF_BUFFERS) when none is free.
    func slot(for wanting: [Subscription], sequence: UInt64) -> (pool: Pool, slot: Int)? {
        guard let pool, let slot = pool.freeSlot() else {
            for subscription in wanting { subscription.dropHeld(sequence, .outOfBuffers) }
            return nil
        }
        pool.writing = slot
        return (pool, slot)
    }

    /// Offers a written buffer to those of `subscriptions` still receiving
    /// from its pool; nil `frame` (its making failed) or a subscription moved
    /// to another pool meanwhile: a discontinuity for it. Returns whether any was offered it.
    @discardableResult
    func offer(_ frame: PooledFrame?, sequence: UInt64, to subscriptions: [Subscription]) -> Bool {
        var offered = false
        for subscription in subscriptions where subscription.lifecycle.receivesFrames {
            guard let frame, subscription.poolID == frame.pool.id else {
                subscription.dropHeld(sequence, .discontinuity)
                continue
            }
            subscription.offer(frame)
            offered = true
        }
        return offered
    }

    // MARK: - Subscriptions

    /// A new subscription, on the current pool.
    /// - Precondition: its id is above every other's.
    mutating func add(_ subscription: Subscription) {
        subscriptions.append(subscription)
    }

    /// Retires its pool (kept while slots of it are held): a camera's
    /// variant whose frames cannot be made from its new mode has none.
    mutating func retirePool() {
        if let pool { retired.append(pool) }
        pool = nil
        dropRetiredPools()
    }

    /// Makes `new` the pool buffers are written to: its subscriptions move to
    /// it and those receiving are told (`news`); they keep the old one's
    /// slots until they give them back.
    mutating func move(to new: Pool, news: StreamNews) {
        if let old = pool, old !== new { retired.append(old) }
        pool = new
        for subscription in subscriptions {
            subscription.poolID = new.id
            guard subscription.lifecycle.receivesFrames else { continue }
            subscription.outbox.post(.formatChanged(news))
        }
        dropRetiredPools()
    }

    /// A subscription is done with some slots of a pool; queued frames move
    /// up. Returns whether a pool may be unused now (a retired one's slot
    /// came back, or a frame that moved up was let go).
    ///
    /// - Throws: INVALID_ARGUMENT for a slot it does not hold.
    mutating func release(_ subscription: Subscription, poolID: UInt64, slots: some Collection<Int>) throws(CameraError) -> Bool {
        let movedUpFailed = try subscription.release(poolID: poolID, slots: slots, in: pool(poolID))
        guard movedUpFailed || poolID != pool?.id else { return false }
        dropRetiredPools()
        return true
    }

    /// Reads what sinks gave back without a message since the last buffer (a
    /// client's release ring: ``FrameSink/readReleases(_:)``). What makes no
    /// sense — a ring in disorder, a slot its subscription does not hold —
    /// ends that subscription alone with INVALID_ARGUMENT; returns those ended.
    /// A long run of late frames (a sink that stopped giving back) is logged once.
    mutating func readReleases() -> [UInt64] {
        var broken: [(UInt64, CameraError)] = []
        for subscription in subscriptions {
            do throws(CameraError) {
                try subscription.outbox.sink.readReleases { (poolID, slot) throws(CameraError) in
                    _ = try subscription.release(poolID: poolID, slots: CollectionOfOne(slot), in: pool(poolID))
                }
            } catch {
                broken.append((subscription.id, error))
            }
            if subscription.lateInARow >= Subscription.lateRunToLog && !subscription.lateRunLogged {
                subscription.lateRunLogged = true
                let held = subscription.held.map { "\($0.poolID)/\($0.slot)" }.sorted().joined(separator: ", ")
                logger.notice("\(name): subscription \(subscription.id) lost its last \(subscription.lateInARow) frames as late: it holds [\(held)] (\(subscription.policy.maxInFlight) at most) and gave back \(subscription.released); it gets frames again once it releases one")
            }
        }
        for (id, error) in broken {
            logger.notice("\(name): subscription \(id) ended: \(error.message)")
            remove(id)?.outbox.post(.end(error))
        }
        dropRetiredPools()
        return broken.map(\.0)
    }

    /// Forgets a subscription: what it held goes back to its pools, and its
    /// charge to its owner's budget; its sink hears nothing more from here.
    @discardableResult
    mutating func remove(_ id: UInt64) -> Subscription? {
        guard let subscription = subscriptions.remove(id) else { return nil }
        subscription.transition(.closed, of: name, logger)
        subscription.letGoOfEverything { id in pool(id) }
        dropRetiredPools()
        budget.refund(subscription.charge)
        return subscription
    }

    /// Ends every subscription: its drops not yet reported, then
    /// `interruption` if it ended by itself, then the end (`error` nil: as asked).
    mutating func endAll(_ interruption: StreamInterruption?, _ error: CameraError?) {
        for subscription in subscriptions.map(\.id).compactMap({ remove($0) }) {
            subscription.postDrops()
            if let interruption, let error { subscription.outbox.post(.interrupted(interruption, error)) }
            subscription.outbox.post(.end(error))
        }
    }
}

/// A node's subscriptions in the order they were made (by id, as ids only
/// grow): every buffer is offered in that order with no sort, and one is
/// found by id with a binary search.
struct Subscriptions: Sequence {
    private var ordered: [Subscription] = []

    func makeIterator() -> IndexingIterator<[Subscription]> { ordered.makeIterator() }

    var isEmpty: Bool { ordered.isEmpty }
    var count: Int { ordered.count }

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
