@testable import CaptureKit
import CameraIPC
import CameraProtocol
import Foundation
import Synchronization
import Testing

/// A pixel buffer's reads are pinned: a release asked for while one runs waits
/// for it, so the slot never goes back to camerad under a reader.
@Suite struct PixelBufferTests {
    final class Counter: Sendable {
        private let count = Mutex(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// Stands for the stream: runs `givenBack` when a slot goes back.
    final class Owner: SlotOwner {
        let givenBack: @Sendable () -> Void
        init(_ givenBack: @escaping @Sendable () -> Void) { self.givenBack = givenBack }
        func release(poolID: UInt64, slot: UInt32) { givenBack() }
    }

    /// A pixel buffer over `frame` of `pool`, as a stream makes one.
    static func pixelBuffer(_ frame: ArrivedFrame, pool: MappedFramePool, givenBack: @escaping @Sendable () -> Void) -> PixelBuffer {
        PixelBuffer(frame, pool: StreamPool(pool), memory: SlotBytes(frame, pool: pool, owner: Owner(givenBack)))
    }

    /// A slot's memory, shared by the test's threads.
    final class SlotMemory: @unchecked Sendable {
        let bytes: UnsafeMutableRawBufferPointer
        init(_ bytes: UnsafeMutableRawBufferPointer) { self.bytes = bytes }
    }

    /// A buffer over slot 1 of a real two-slot pool (a memfd, mapped as a
    /// stream's pool is), whose give-back is counted.
    static func buffer() throws -> (PixelBuffer, Counter) {
        let memory = try SharedMemory(name: "pixel-buffer-test", size: 2 * 4096)
        memory.bytes.initializeMemory(as: UInt8.self, repeating: 7)
        var description = Camerad_V1_FramePool()
        description.poolID = 1
        description.shared = true
        description.slotSize = 4096
        description.slotCount = 2
        let pool = try MappedFramePool(description, descriptors: [try memory.descriptor.duplicate()])
        let frame = ArrivedFrame(slot: 1, sequence: 0, presentationTimeNs: 0, durationNs: 0, bytesUsed: 64)
        let givenBack = Counter()
        let buffer = pixelBuffer(frame, pool: pool) { givenBack.increment() }
        return (buffer, givenBack)
    }

    @Test func aReleaseDuringAReadWaitsForTheReadToEnd() throws {
        let (buffer, givenBack) = try Self.buffer()
        let sum = try buffer.withUnsafeBytes { bytes -> Int in
            buffer.release()  // as invalidate() on another thread would, mid-read
            #expect(givenBack.value == 0, "not given back while read")
            #expect(buffer.isValid, "still readable by the pin")
            return bytes.reduce(0) { $0 + Int($1) }
        }
        #expect(sum == 7 * 64)
        #expect(givenBack.value == 1, "given back when the read ended")
        #expect(!buffer.isValid && buffer.baseAddress == nil)
        #expect(throws: CaptureError.self) { try buffer.withUnsafeBytes { _ in } }
    }

    @Test func lockBaseAddressPinsUntilTheMatchingUnlock() throws {
        let (buffer, givenBack) = try Self.buffer()
        buffer.lockBaseAddress()
        buffer.lockBaseAddress()
        buffer.release()
        #expect(buffer.isValid, "locked: still readable")
        buffer.unlockBaseAddress()
        #expect(buffer.isValid && givenBack.value == 0, "one lock still holds it")
        buffer.unlockBaseAddress()
        #expect(!buffer.isValid && givenBack.value == 1, "the last unlock let it go")
        buffer.lockBaseAddress()
        #expect(buffer.baseAddress == nil, "a released buffer stays released")
        buffer.unlockBaseAddress()
    }

    /// A lock of a released buffer pins nothing, so its unlock unpins nothing:
    /// another reader's pin stays.
    @Test func aLockThatFoundTheBufferReleasedLeavesOtherReadersPinned() throws {
        let (buffer, givenBack) = try Self.buffer()
        try buffer.withUnsafeBytes { _ in
            buffer.release()
            // Another thread, late: the buffer is released, its lock pins nothing.
            buffer.lockBaseAddress()
            buffer.unlockBaseAddress()
            #expect(givenBack.value == 0 && buffer.isValid, "the read's pin holds")
        }
        #expect(givenBack.value == 1)
    }

    @Test func aSlotIsGivenBackOnceHoweverOftenReleased() throws {
        let (buffer, givenBack) = try Self.buffer()
        buffer.lockBaseAddress()
        buffer.release()
        buffer.release()
        #expect(givenBack.value == 0)
        buffer.unlockBaseAddress()
        #expect(givenBack.value == 1, "once, at the last unpin")
        buffer.release()
        #expect(givenBack.value == 1)
    }

    /// An address taken without a lock (as seed code reads a frame) keeps the
    /// memory for as long as the buffer object lives: a release meanwhile
    /// waits for the object to go.
    @Test func anUnlockedBaseAddressKeepsTheMemoryWhileTheBufferLives() throws {
        var (buffer, givenBack): (PixelBuffer?, Counter) = try Self.buffer()
        let address = try #require(buffer!.baseAddress)
        buffer!.release()
        #expect(givenBack.value == 0, "an address is out")
        #expect(address.load(as: UInt8.self) == 7)
        #expect(buffer!.baseAddress == nil, "released: no new address")
        buffer = nil
        #expect(givenBack.value == 1, "given back as the buffer went")
    }

    /// Readers on several threads — pinned reads, locked addresses, unlocked
    /// addresses — race a release on another: no byte is read after the slot
    /// is given back (the give-back overwrites it, as camerad would with the
    /// next frame), and it is given back exactly once.
    @Test func readersOnManyThreadsNeverReadASlotGivenBack() throws {
        // A slot per round: a round's buffer may go (and its slot be
        // overwritten) while the next round runs, as the threads let go of it.
        let rounds = 300
        let memory = try SharedMemory(name: "pixel-buffer-race", size: rounds * 4096)
        memory.bytes.initializeMemory(as: UInt8.self, repeating: 7)
        var description = Camerad_V1_FramePool()
        description.poolID = 1
        description.shared = true
        description.slotSize = 4096
        description.slotCount = UInt32(rounds)
        let pool = try MappedFramePool(description, descriptors: [try memory.descriptor.duplicate()])
        let badReads = Counter(), reads = Counter(), givenBack = Counter()
        for round in 0..<rounds {
            let frame = ArrivedFrame(slot: UInt32(round), sequence: 0, presentationTimeNs: 0, durationNs: 0, bytesUsed: 4096)
            let slot = SlotMemory(UnsafeMutableRawBufferPointer(rebasing: memory.bytes[round * 4096..<(round + 1) * 4096]))
            let buffer = Self.pixelBuffer(frame, pool: pool) {
                // What camerad does with a slot given back: the next frame goes there.
                slot.bytes.initializeMemory(as: UInt8.self, repeating: 0xEE)
                givenBack.increment()
            }
            let check: @Sendable (UnsafeRawBufferPointer) -> Void = { bytes in
                reads.increment()
                if bytes.contains(where: { $0 != 7 }) { badReads.increment() }
            }
            // Five threads, let go together: four readers, one release.
            let arrived = Atomic(0)
            let done = DispatchGroup()
            for role in 0..<5 {
                done.enter()
                Thread {
                    defer { done.leave() }
                    arrived.add(1, ordering: .acquiringAndReleasing)
                    while arrived.load(ordering: .acquiring) < 5 { sched_yield() }
                    switch role {
                    case 0, 1:
                        _ = try? buffer.withUnsafeBytes { check($0) }
                    case 2:
                        buffer.lockBaseAddress()
                        if let address = buffer.baseAddress { check(UnsafeRawBufferPointer(start: address, count: 4096)) }
                        buffer.unlockBaseAddress()
                    case 3:
                        if let address = buffer.baseAddress { check(UnsafeRawBufferPointer(start: address, count: 4096)) }
                    default:
                        buffer.release()
                    }
                }.start()
            }
            done.wait()
        }
        #expect(badReads.value == 0, "reads that saw a slot given back")
        // Every round's buffer gone (its threads let go of it), each slot given back once.
        let deadline = ContinuousClock.now + .seconds(60)
        while givenBack.value < rounds, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(givenBack.value == rounds, "each slot given back once")
        #expect(reads.value > 0)
        withExtendedLifetime(pool) {}
    }

    /// A format CoreVideo has no code for keeps its four characters, in
    /// CoreVideo's byte order ('GREY', not 'YERG').
    @Test func aFourccWithoutACoreVideoCodeKeepsItsCharacters() {
        #expect(PixelFormats.name(PixelFormats.type(fourcc: FourCharCode("GREY")!.rawValue)) == "GREY")
        #expect(PixelFormats.type(fourcc: FourCharCode("NV12")!.rawValue, fullRange: true) == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange)
    }
}
