import CameraIPC
import CameraMedia

/// One output variant of a device: its converter and its shared-memory slots
/// (a ``MediaPool`` of video frames).
///
/// The variant's worker converts each frame once into a free slot; every stream
/// of the variant then gets the same slot.
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
final class VariantPool: MediaPool, @unchecked Sendable {
    let variant: FrameVariant
    /// The device's frames it is made from.
    let source: FrameLayout
    let layout: FrameLayout
    /// The device's buffers, its first slots: set when the variant is the
    /// device's own frames and the capture's buffers can be shared.
    let deviceBuffers: DeviceBuffers?
    /// Used by the variant's worker only.
    let converter: FrameConverter

    // Guarded by the streamer's lock.
    /// Per device slot: the loan keeping its buffer from the device while streams hold it.
    var loans: [DeviceBuffers.Loan?]
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
        converter = try FrameConverter(source: source, target: variant)
        self.variant = variant
        self.source = source
        layout = converter.targetLayout
        self.deviceBuffers = converter.passesThrough() ? Self.shareable(deviceBuffers, for: layout) : nil
        let deviceSlots = self.deviceBuffers?.count ?? 0
        loans = Array(repeating: nil, count: deviceSlots)
        try super.init(id: id, media: .video(layout), ownSlots: ownSlots, lentSlots: deviceSlots, budget: budget)
    }

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

    /// The device's buffers among its slots: slots `0 ..< deviceSlots`.
    var deviceSlots: Int { lentSlots }

    /// A stream let go of a slot: a device buffer nobody holds any more goes back to the device.
    override func unreference(_ slot: Int) {
        super.unreference(slot)
        if slot < deviceSlots && references[slot] == 0 { loans[slot] = nil }
    }

    /// A slot's memory: the device buffer's own (read-only but for a virtual
    /// camera's), or the pool's.
    override func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        index < deviceSlots ? deviceBuffers!.bytes(index) : super.slot(index)
    }

    /// The descriptors a client maps, in the order ``locations`` number them:
    /// the pool's memfd, then the device's memory.
    override var descriptors: [OwnedFD] { [memory.descriptor] + (deviceBuffers?.memory.map(\.descriptor) ?? []) }

    /// Where each slot lies among ``descriptors``, when the pool shares the
    /// device's buffers; nil when slot k is at k × ``slotSize`` of the first.
    override var locations: [(descriptor: Int, offset: Int)]? {
        guard let deviceBuffers else { return nil }
        return deviceBuffers.locations.map { (1 + $0.memory, $0.offset) } + (0..<ownSlots).map { (0, $0 * slotSize) }
    }
}
