import CameraIPC
import CameraProtocol
import CameraTestSupport
import Foundation
import Testing

/// Frames given back through a stream's release ring, read by camerad as each
/// frame comes: a client that never sends ReleaseFrames streams on; one that
/// writes nonsense into its ring loses its own stream, with the reason, and no
/// one else's.
@Suite struct ReleaseRingStreamTests {
    @Test(.timeLimit(.minutes(4))) func aClientThatReleasesOnlyThroughItsRingStreamsOn() async throws {
        try await withRunningDaemon { daemon in
            // Two frames in flight: without its releases read, it would get two and then only drop reports.
            let reader = try await PoolReader(daemon, device: "virtual-0", name: "ring", framesInFlight: 2, releaseRing: true)
            defer { reader.close() }
            #expect(reader.ring != nil, "camerad gave the stream a ring")
            let frames = try await reader.read(40)
            #expect(frames.allSatisfy { $0.intact })
            #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
            #expect(reader.releasedThroughRing >= 39 && reader.releasedByMessage == 0,
                    "\(reader.releasedThroughRing) through the ring, \(reader.releasedByMessage) by message")
            let variant = try await reader.variant()
            #expect(variant.slotsInUse <= 2, "what it gave back is free again")
        }
    }

    @Test(.timeLimit(.minutes(4))) func aRingWithANonsenseHeadEndsThatStreamAloneWithItsReason() async throws {
        try await withRunningDaemon { daemon in
            let bystander = try await PoolReader(daemon, device: "virtual-0", name: "bystander", releaseRing: true)
            defer { bystander.close() }
            let hostile = try await PoolReader(daemon, device: "virtual-0", name: "hostile", releaseRing: true)
            defer { hostile.close() }
            _ = try await hostile.read(3)
            // A head far beyond anything written. It releases nothing more: a release would write its
            // head again, before camerad's next frame read the nonsense (frames it was already sent come first).
            try #require(hostile.ring).memory.baseAddress.storeBytes(of: UInt64(1) << 40, as: UInt64.self)
            let error = await #expect(throws: RPCError.self) {
                while try await hostile.nextMessage() != nil {}
            }
            #expect(error?.code == .invalidArgument && error?.message.contains("release ring") == true, "\(String(describing: error))")
            let frames = try await bystander.read(30)
            #expect(frames.allSatisfy { $0.intact } && frames.count == 30, "the other stream never noticed")
        }
    }

    @Test(.timeLimit(.minutes(4))) func aSlotGivenBackTwiceThroughTheRingEndsTheStream() async throws {
        try await withRunningDaemon { daemon in
            let reader = try await PoolReader(daemon, device: "virtual-0", name: "twice", framesInFlight: 4, releaseRing: true)
            defer { reader.close() }
            _ = try await reader.read(2, releasing: false)
            let ring = try #require(reader.ring)
            // The pool and slot of a frame it holds, written twice.
            let pool = reader.pool.poolID
            let slot = try #require(reader.lastSlot)
            #expect(ring.push(poolID: pool, slot: slot) && ring.push(poolID: pool, slot: slot))
            let error = await #expect(throws: RPCError.self) { _ = try await reader.read(100) }
            #expect(error?.code == .invalidArgument && error?.message.contains("release each frame once") == true,
                    "\(String(describing: error))")
        }
    }
}
