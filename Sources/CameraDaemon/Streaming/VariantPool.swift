import CameraIPC
import CameraMedia

/// One output variant of a device: its converter and its shared-memory slots.
///
/// The variant's worker converts each frame once into a free slot; every stream
/// of the variant then gets the same slot. A slot is free when no stream holds
/// it and it is not being written, so it is never rewritten while a client
/// reads it.
///
/// A variant that is the device's own frames (its format and size, not turned,
/// mirrored or zoomed) has the device's buffers as its first slots
/// (``DeviceBuffers``): a frame is shared in its buffer as it is, no copy, and
/// the buffer stays from the device while a stream holds it (a loan). Only
/// when that would leave the device fewer than ``reserveBuffers`` to fill is
/// the frame copied into a slot of the pool's own, and counted
/// (``framesCopied``). Unchecked Sendable: its `var`s are guarded by the
/// owning ``DeviceStreamer``'s lock (`state`); the converter is the variant's
/// worker's alone.
final class VariantPool: @unchecked Sendable {
    let id: UInt64
    let variant: FrameVariant
    /// The device's frames it is made from.
    let source: FrameLayout
    let layout: FrameLayout
    /// The pool's own slots, after the device's.
    let memory: SharedMemory
    /// The size of each of its own slots.
    let slotSize: Int
    /// Slots of its own (in ``memory``).
    let ownSlots: Int
    /// The device's buffers, its first slots: set when the variant is the
    /// device's own frames and the capture's buffers can be shared.
    let deviceBuffers: DeviceBuffers?
    /// Used by the variant's worker only.
    let converter: FrameConverter
    /// Charged with this pool's size while it exists.
    private let budget: ClientBudget

    // Guarded by the streamer's lock.
    var references: [Int]
    /// Per device slot: the loan keeping its buffer from the device while streams hold it.
    var loans: [DeviceBuffers.Loan?]
    var writing: Int?
    var bytesUsed: [Int]
    var streamIDs: Set<UInt64> = []
    var conversions: UInt64 = 0
    /// Frames its worker let go unconverted, still holding two.
    var framesSkipped: UInt64 = 0
    /// Frames given to streams in the device's buffers, no copy.
    var framesShared: UInt64 = 0
    /// Frames of the device's own format copied all the same (the device short
    /// of buffers, or its buffers not shareable).
    var framesCopied: UInt64 = 0

    /// Buffers a device keeps to fill at least: a frame that would leave it
    /// fewer is copied rather than shared, so streams holding frames never
    /// starve the device (it needs two to keep streaming).
    static let reserveBuffers = 2

    /// - Parameters:
    ///   - ownSlots: slots of its own, for converted and copied frames.
    ///   - deviceBuffers: the running capture's buffers, used as its first slots
    ///     when `variant` is the device's own frames and they are large enough.
    /// - Throws: ``ConversionError`` when the device's frames cannot be made into
    ///   `variant`; RESOURCE_EXHAUSTED when the pools would take more than `budget` allows.
    init(
        id: UInt64, source: FrameLayout, variant: FrameVariant, ownSlots: Int, deviceBuffers: DeviceBuffers?,
        budget: ClientBudget
    ) throws {
        // A memfd made and mapped: never under a lock (the event loop would wait for it).
        LockOrder.checkNoneHeld("making a frame pool")
        converter = try FrameConverter(source: source, target: variant)
        self.id = id
        self.variant = variant
        self.source = source
        layout = converter.targetLayout
        slotSize = Self.slotSize(of: layout)
        self.ownSlots = ownSlots
        self.deviceBuffers = converter.passesThrough() ? Self.shareable(deviceBuffers, for: layout) : nil
        self.budget = budget
        try budget.chargePool(bytes: slotSize * ownSlots, "\(variant)")
        do {
            memory = try SharedMemory(name: "camerad-pool-\(id)", size: slotSize * ownSlots)
        } catch {
            budget.refundPool(bytes: slotSize * ownSlots)
            throw error
        }
        let deviceSlots = self.deviceBuffers?.count ?? 0
        references = Array(repeating: 0, count: deviceSlots + ownSlots)
        bytesUsed = Array(repeating: 0, count: deviceSlots + ownSlots)
        loans = Array(repeating: nil, count: deviceSlots)
    }

    deinit { budget.refundPool(bytes: slotSize * ownSlots) }

    /// Whether it is the pool `need` asks for: the same variant of the same
    /// frames, room enough, and the same capture buffers shared (if any).
    func fits(_ need: DeviceStreamer.PoolNeed) -> Bool {
        variant == need.variant && source == need.source && ownSlots >= need.slots
            && deviceBuffers === (converter.passesThrough() ? Self.shareable(need.deviceBuffers, for: layout) : nil)
    }

    /// `buffers`, if frames of `layout` fit in them.
    static func shareable(_ buffers: DeviceBuffers?, for layout: FrameLayout) -> DeviceBuffers? {
        buffers.flatMap { $0.bufferSize >= layout.capacity || layout.format.isCompressed ? $0 : nil }
    }

    /// A slot's size for frames of `layout`: whole pages.
    static func slotSize(of layout: FrameLayout) -> Int {
        let page = 4096
        return (layout.capacity + page - 1) / page * page
    }

    /// The device's buffers among its slots: slots `0 ..< deviceSlots`.
    var deviceSlots: Int { loans.count }

    var slotCount: Int { references.count }

    /// A slot of its own nobody holds and nobody writes, preferring low numbers.
    func freeSlot() -> Int? {
        (deviceSlots..<slotCount).first { references[$0] == 0 && $0 != writing }
    }

    /// A stream let go of a slot: a device buffer nobody holds any more goes back to the device.
    func unreference(_ slot: Int) {
        references[slot] -= 1
        if slot < deviceSlots && references[slot] == 0 { loans[slot] = nil }
    }

    var slotsInUse: Int { references.count { $0 > 0 } }

    /// A slot's memory: the device buffer's own (read-only but for a virtual
    /// camera's), or the pool's.
    func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        if index < deviceSlots { return deviceBuffers!.bytes(index) }
        let own = index - deviceSlots
        return UnsafeMutableRawBufferPointer(rebasing: memory.bytes[own * slotSize..<(own + 1) * slotSize])
    }

    /// The descriptors a client maps, in the order ``locations`` number them:
    /// the pool's memfd, then the device's memory.
    var descriptors: [OwnedFD] { [memory.descriptor] + (deviceBuffers?.memory.map(\.descriptor) ?? []) }

    /// Where each slot lies among ``descriptors``, when the pool shares the
    /// device's buffers; nil when slot k is at k × ``slotSize`` of the first.
    var locations: [(descriptor: Int, offset: Int)]? {
        guard let deviceBuffers else { return nil }
        return deviceBuffers.locations.map { (1 + $0.memory, $0.offset) } + (0..<ownSlots).map { (0, $0 * slotSize) }
    }
}
