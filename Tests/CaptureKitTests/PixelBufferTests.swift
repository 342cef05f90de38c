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
        var frame = Camerad_V1_FrameReady()
        frame.poolID = 1
        frame.slot = 1
        frame.bytesUsed = 64
        let givenBack = Counter()
        let buffer = PixelBuffer(frame, pool: pool) { givenBack.increment() }
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
        #expect(buffer.baseAddress != nil, "locked: the address stays good")
        buffer.unlockBaseAddress()
        #expect(buffer.baseAddress != nil, "one lock still holds it")
        buffer.unlockBaseAddress()
        #expect(buffer.baseAddress == nil && givenBack.value == 1, "the last unlock let it go")
        buffer.lockBaseAddress()
        #expect(buffer.baseAddress == nil, "a released buffer stays released")
        buffer.unlockBaseAddress()
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

    /// A format CoreVideo has no code for keeps its four characters, in
    /// CoreVideo's byte order ('GREY', not 'YERG').
    @Test func aFourccWithoutACoreVideoCodeKeepsItsCharacters() {
        #expect(PixelFormats.name(PixelFormats.type(fourcc: FourCharCode("GREY")!.rawValue)) == "GREY")
        #expect(PixelFormats.type(fourcc: FourCharCode("NV12")!.rawValue, fullRange: true) == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange)
    }
}
