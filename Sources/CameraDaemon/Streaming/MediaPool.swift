import CameraIPC
import CameraMedia
import Synchronization

/// A node's buffers: slots in shared memory that its subscriptions read in
/// place, whatever the media (``MediaLayout``: a video frame, a PCM period, a
/// packet, a record). A slot is free when no subscription holds it and it is
/// not being written, so it is never rewritten while a client reads it.
///
/// Its own slots are one memfd, charged to the daemon's pools in the
/// ``ClientBudget`` while the pool lives. A source may lend it slots of its
/// own ahead of them (a camera's buffers: ``VariantPool``).
///
/// Unchecked Sendable: its `var`s are guarded by the lock of the node that
/// owns it (a ``DeviceStreamer``'s `state`, a ``MediaNode``'s).
class MediaPool: @unchecked Sendable {
    let id: UInt64
    /// What each slot holds.
    let media: MediaLayout
    /// The pool's own slots, after the lent ones.
    let memory: SharedMemory
    /// The size of each of its own slots.
    let slotSize: Int
    /// Slots of its own (in ``memory``).
    let ownSlots: Int
    /// Slots lent by the source, numbered first (`0 ..< lentSlots`).
    let lentSlots: Int
    /// Charged with this pool's size while it exists.
    private let budget: ClientBudget

    // Guarded by the owning node's lock.
    /// Per slot: how many subscriptions hold it (queued frames count).
    var references: [Int]
    var writing: Int?
    var bytesUsed: [Int]

    /// - Throws: RESOURCE_EXHAUSTED when the pools would take more than
    ///   `budget` allows; the memfd's error when none can be made.
    init(id: UInt64, media: MediaLayout, ownSlots: Int, lentSlots: Int = 0, budget: ClientBudget) throws {
        // A memfd made and mapped: never under a lock (the event loop would wait for it).
        LockOrder.checkNoneHeld("making a pool")
        self.id = id
        self.media = media
        slotSize = Self.slotSize(of: media)
        self.ownSlots = ownSlots
        self.lentSlots = lentSlots
        self.budget = budget
        try budget.chargePool(bytes: slotSize * ownSlots, "\(media)")
        do {
            memory = try SharedMemory(name: "camerad-pool-\(id)", size: slotSize * ownSlots)
        } catch {
            budget.refundPool(bytes: slotSize * ownSlots)
            throw error
        }
        references = Array(repeating: 0, count: lentSlots + ownSlots)
        bytesUsed = Array(repeating: 0, count: lentSlots + ownSlots)
    }

    deinit { budget.refundPool(bytes: slotSize * ownSlots) }

    /// Slots beyond what all its subscriptions may hold together (frames on
    /// their way to a sink count as held): the one being written. So a
    /// subscription that holds all it may, never releasing, costs only itself;
    /// its neighbours always find a free slot.
    static let spareSlots = 1

    private static let lastID = Atomic<UInt64>(0)

    /// A new pool's id, unique among every node's pools while camerad runs
    /// (a client maps pools by id).
    static func nextID() -> UInt64 { lastID.wrappingAdd(1, ordering: .relaxed).newValue }

    /// A slot's size for buffers of `media`: whole pages.
    static func slotSize(of media: MediaLayout) -> Int {
        let page = 4096
        return (media.capacity + page - 1) / page * page
    }

    var slotCount: Int { references.count }

    var slotsInUse: Int { references.count { $0 > 0 } }

    /// A slot of its own nobody holds and nobody writes, preferring low numbers.
    func freeSlot() -> Int? {
        (lentSlots..<slotCount).first { references[$0] == 0 && $0 != writing }
    }

    /// A subscription let go of a slot.
    func unreference(_ slot: Int) {
        references[slot] -= 1
    }

    /// A slot's memory. A pool with lent slots says where those lie.
    func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        let own = index - lentSlots
        return UnsafeMutableRawBufferPointer(rebasing: memory.bytes[own * slotSize..<(own + 1) * slotSize])
    }

    /// The descriptors a client maps, in the order ``locations`` number them.
    var descriptors: [OwnedFD] { [memory.descriptor] }

    /// Where each slot lies among ``descriptors``; nil when slot k is at k × ``slotSize`` of the first.
    var locations: [(descriptor: Int, offset: Int)]? { nil }
}
