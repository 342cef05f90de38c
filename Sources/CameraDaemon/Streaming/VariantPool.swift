import CameraIPC
import CameraMedia

/// One output variant of a device: its converter and its shared-memory slots.
///
/// The capture thread converts each frame once into a free slot; every stream of
/// the variant then gets the same slot. A slot is free when no stream holds it and
/// it is not being written, so it is never rewritten while a client reads it.
/// State is guarded by the owning ``DeviceStreamer``'s lock; the converter is the
/// capture thread's alone.
final class VariantPool: @unchecked Sendable {
    let id: UInt64
    let variant: FrameVariant
    /// The device's frames it is made from.
    let source: FrameLayout
    let layout: FrameLayout
    let memory: SharedMemory
    let slotSize: Int
    let slotCount: Int
    /// Used by the capture thread only.
    let converter: FrameConverter
    /// Charged with this pool's size while it exists.
    private let budget: StreamBudget

    // Guarded by the streamer's lock.
    var references: [Int]
    var writing: Int?
    var bytesUsed: [Int]
    var streamIDs: Set<UInt64> = []
    var conversions: UInt64 = 0
    /// Frames its worker let go unconverted, still holding two.
    var framesSkipped: UInt64 = 0

    /// - Throws: ``ConversionError`` when the device's frames cannot be made into
    ///   `variant`; RESOURCE_EXHAUSTED when the pools would take more than `budget` allows.
    init(id: UInt64, source: FrameLayout, variant: FrameVariant, slotCount: Int, budget: StreamBudget) throws {
        converter = try FrameConverter(source: source, target: variant)
        self.id = id
        self.variant = variant
        self.source = source
        layout = converter.targetLayout
        slotSize = Self.slotSize(of: layout)
        self.slotCount = slotCount
        self.budget = budget
        try budget.chargePool(bytes: slotSize * slotCount, "\(variant)")
        do {
            memory = try SharedMemory(name: "camerad-pool-\(id)", size: slotSize * slotCount)
        } catch {
            budget.refundPool(bytes: slotSize * slotCount)
            throw error
        }
        references = Array(repeating: 0, count: slotCount)
        bytesUsed = Array(repeating: 0, count: slotCount)
    }

    deinit { budget.refundPool(bytes: slotSize * slotCount) }

    /// A slot's size for frames of `layout`: whole pages.
    static func slotSize(of layout: FrameLayout) -> Int {
        let page = 4096
        return (layout.capacity + page - 1) / page * page
    }

    /// A slot nobody holds and nobody writes, preferring low numbers.
    func freeSlot() -> Int? {
        references.indices.first { references[$0] == 0 && $0 != writing }
    }

    var slotsInUse: Int { references.filter { $0 > 0 }.count }

    func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: memory.bytes[index * slotSize..<(index + 1) * slotSize])
    }
}
