import CameraIPC

/// A frame pool (StreamStarted, FormatChanged) mapped into this process,
/// read-only: one memfd, or — when the pool shares the device's buffers —
/// each of its descriptors once, at its own size. Slot addresses stay valid
/// while it lives.
public final class MappedFramePool: Sendable {
    public let id: UInt64
    public let description: Camerad_V1_FramePool
    /// The memory mapped, one per descriptor used.
    private let memory: [SharedMemory]
    /// Where each slot lies: which of ``memory``, at what offset.
    private let slots: [(memory: Int, offset: Int)]

    /// A stand-in for inline frames, whose bytes come with their message.
    public static let inline = MappedFramePool()

    private init() {
        id = 0
        description = Camerad_V1_FramePool()
        memory = []
        slots = []
    }

    /// - Throws: INTERNAL_ERROR when a slot lies outside the descriptors sent,
    ///   or the memory cannot be mapped.
    public init(_ description: Camerad_V1_FramePool, descriptors: [OwnedFD]) throws(RPCError) {
        id = description.poolID
        self.description = description
        guard description.shared else {
            memory = []
            slots = []
            return
        }
        func missing() -> RPCError { RPCError(.internal, "camerad sent a pool without its memory") }
        do {
            if description.slots.isEmpty {
                guard Int(description.fdIndex) < descriptors.count else { throw missing() }
                memory = [try SharedMemory(mapping: descriptors[Int(description.fdIndex)],
                                           size: Int(description.slotSize) * Int(description.slotCount))]
                slots = (0..<Int(description.slotCount)).map { (0, $0 * Int(description.slotSize)) }
                return
            }
            // Each descriptor mapped once, however many slots lie in it.
            var mapped: [Int: Int] = [:]
            var memory: [SharedMemory] = []
            slots = try description.slots.map { slot in
                let index = Int(slot.fdIndex)
                guard index < descriptors.count else { throw missing() }
                if mapped[index] == nil {
                    mapped[index] = memory.count
                    memory.append(try SharedMemory(mapping: descriptors[index]))
                }
                return (mapped[index]!, Int(slot.offset))
            }
            self.memory = memory
        } catch let error as RPCError {
            throw error
        } catch {
            throw RPCError(.internal, "cannot map camerad's frame pool: \(error)")
        }
    }

    /// A slot's first `bytes`; nil when they would lie outside its memory.
    public func slot(_ index: UInt32, bytes: Int) -> UnsafeRawBufferPointer? {
        guard Int(index) < slots.count else { return nil }
        let (memory, offset) = slots[Int(index)]
        let mapped = self.memory[memory]
        guard bytes >= 0, offset <= mapped.size, bytes <= mapped.size - offset else { return nil }
        return UnsafeRawBufferPointer(start: mapped.baseAddress + offset, count: bytes)
    }
}
