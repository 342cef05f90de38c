import CameraIPC
import Synchronization

/// A capture's buffers lent out: to the daemon as frames (``CapturedFrame``),
/// and to clients by pools that share them (``DeviceBuffers/loan(_:)``). A
/// buffer is free again — for the device to fill — once its frame and every
/// loan of it are gone.
///
/// Stopping a capture waits only for its frames (the daemon's own readers):
/// a buffer clients still hold stays theirs, its memory kept by the loans.
final class BufferLeases: Sendable {
    private struct State {
        /// Free buffers, the one back last at the end.
        var free: [Int]
        /// Per buffer: its frame, if alive, and its loans.
        var holders: [Int]
        /// Frames alive.
        var frames = 0
    }
    private let state: OrderedMutex<State>
    private let onReturn: @Sendable () -> Void
    /// Whether ``onReturn`` is told of every buffer free again, not only while
    /// the capture thread waits here.
    private let tellsEveryReturn: Bool
    /// Whether the capture thread waits in ``waitUntilFramesGone(_:)`` or ``waitUntilFree(atMostFrames:_:)``.
    private let waiting = Atomic(false)
    /// Buffers the device has.
    let count: Int

    /// - Parameters:
    ///   - count: buffers `0 ..< count`.
    ///   - free: whether they start free (a virtual camera's); a V4L2 node's
    ///     start queued in the driver and come out with ``lend(_:)``.
    ///   - onReturn: wakes the capture thread: when a buffer is free again (a
    ///     device that queues it again: `free` false), and whenever a holder
    ///     lets one go while the thread waits here.
    init(count: Int, free: Bool = true, onReturn: @escaping @Sendable () -> Void = {}) {
        self.count = count
        tellsEveryReturn = !free
        state = OrderedMutex(.bufferLeases, State(free: free ? Array(0..<count) : [], holders: Array(repeating: 0, count: count)))
        self.onReturn = onReturn
    }

    /// A free buffer, now lent out as a frame; nil when none is free. The one
    /// back last, still in the cache, and so that buffers a device never needs
    /// at once are never touched.
    func take() -> Int? {
        state.withLock { state in
            guard let index = state.free.popLast() else { return nil }
            state.holders[index] = 1
            state.frames += 1
            return index
        }
    }

    /// Lends out as a frame a buffer the device handed over (V4L2's dequeued ones).
    func lend(_ index: Int) {
        state.withLock { state in
            state.free.removeAll { $0 == index }
            state.holders[index] = 1
            state.frames += 1
        }
    }

    /// A buffer's frame is gone.
    func frameDone(_ index: Int) {
        state.withLock { $0.frames -= 1 }
        release(index)
    }

    /// One more holder of a lent buffer, which ``release(_:)`` ends.
    fileprivate func hold(_ index: Int) {
        state.withLock { state in
            precondition(state.holders[index] > 0, "a loan of buffer \(index), which is not lent out")
            state.holders[index] += 1
        }
    }

    /// A holder of a buffer let go; the last makes it free.
    fileprivate func release(_ index: Int) {
        let free = state.withLock { state in
            state.holders[index] -= 1
            guard state.holders[index] == 0 else { return false }
            state.free.append(index)
            return true
        }
        if (free && tellsEveryReturn) || waiting.load(ordering: .acquiring) { onReturn() }
    }

    /// Buffers not lent out: the device's to fill.
    var available: Int { state.withLock { count - $0.holders.count(where: { $0 > 0 }) } }

    /// Takes the buffers free since the last call (for a device that queues them again).
    func takeFree() -> [Int] {
        state.withLock { state in
            defer { state.free.removeAll() }
            return state.free
        }
    }

    /// Waits until no frame is alive (loans to clients may remain), calling
    /// `wait` until then: the capture thread's own sleep, which ``onReturn`` wakes.
    func waitUntilFramesGone(_ wait: () -> Void) {
        waiting.store(true, ordering: .releasing)
        defer { waiting.store(false, ordering: .releasing) }
        while state.withLock({ $0.frames }) > 0 { wait() }
    }

    /// Waits, through `wait`, until at most `frames` frames are alive and a
    /// buffer is free: an unthrottled capture draws the next frame while one is converted.
    func waitUntilFree(atMostFrames frames: Int, _ wait: () -> Void) {
        waiting.store(true, ordering: .releasing)
        defer { waiting.store(false, ordering: .releasing) }
        while state.withLock({ $0.frames > frames || $0.free.isEmpty }) { wait() }
    }
}

/// The memory of a capture's buffers as clients can map it: a virtual
/// camera's in one memfd, a V4L2 node's exported as one dma-buf each
/// (`VIDIOC_EXPBUF`). A variant that is the device's own frames shares them as
/// they are (``VariantPool``): no copy. The memory lives while anything
/// refers to it — the capture, its frames, a pool, a loan — so a stopped
/// capture's buffers stay readable for the clients that hold them.
final class DeviceBuffers: Sendable {
    /// One buffer as a frame refers to it.
    struct Buffer: Sendable {
        let buffers: DeviceBuffers
        let index: Int
    }

    /// The memory clients map: one memfd, or a dma-buf per buffer.
    let memory: [SharedMemory]
    /// Where each buffer lies: which of ``memory``, at what offset.
    let locations: [(memory: Int, offset: Int)]
    /// Bytes every buffer holds at least.
    let bufferSize: Int
    let leases: BufferLeases

    /// Buffers in one memfd, each `bufferSize` rounded up to whole pages: a
    /// virtual camera's, which it draws into through this process's mapping.
    init(memfdNamed name: String, count: Int, bufferSize: Int, leases: BufferLeases) throws(SystemError) {
        let stride = (max(1, bufferSize) + 4095) / 4096 * 4096
        memory = [try SharedMemory(name: name, size: stride * count)]
        locations = (0..<count).map { (0, $0 * stride) }
        self.bufferSize = stride
        self.leases = leases
    }

    /// Buffers each in a dma-buf of its own (a V4L2 node's exported ones),
    /// mapped here read-only.
    init(dmaBufs: [OwnedFD], leases: BufferLeases) throws {
        memory = try dmaBufs.map { try SharedMemory(mapping: $0) }
        locations = memory.indices.map { ($0, 0) }
        bufferSize = memory.map(\.size).min() ?? 0
        self.leases = leases
    }

    var count: Int { locations.count }

    /// A buffer's memory, through this process's mapping (writable only for a memfd's).
    func bytes(_ index: Int) -> UnsafeMutableRawBufferPointer {
        let (memory, offset) = locations[index]
        return UnsafeMutableRawBufferPointer(rebasing: self.memory[memory].bytes[offset..<offset + bufferSize])
    }

    /// Keeps a lent-out buffer from the device while the loan lives: the
    /// buffer a frame is, shared with clients past the frame's own life.
    func loan(_ index: Int) -> Loan { Loan(buffers: self, index: index) }

    /// A buffer kept from the device; it goes back when the loan goes.
    final class Loan: Sendable {
        let buffers: DeviceBuffers
        let index: Int

        fileprivate init(buffers: DeviceBuffers, index: Int) {
            self.buffers = buffers
            self.index = index
            buffers.leases.hold(index)
        }

        deinit { buffers.leases.release(index) }
    }
}
