import CameraIPC
import CameraProtocol
import CameraTestSupport
import Foundation
import Testing

/// The device's own format reaches clients in the capture's buffers, no copy
/// (a virtual camera's here; a V4L2 node's in the vivid VM): frames intact,
/// copies only while streams hold so many buffers the device would starve,
/// and none once they let go — also by dying.
@Suite struct ZeroCopyTests {
    @Test func theDevicesOwnFormatIsSharedInItsBuffersIntact() async throws {
        try await withRunningDaemon { daemon in
            let reader = try await PoolReader(daemon, device: "virtual-0", name: "reader")
            defer { reader.close() }
            let frames = try await reader.read(60)
            #expect(frames.allSatisfy { $0.intact }, "every frame as the camera drew it")
            #expect(frames.allSatisfy { $0.inDeviceBuffer }, "every frame in one of the capture's buffers")
            #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "in order")
            let variant = try await reader.variant()
            print("zero-copy: \(variant.framesShared) shared, \(variant.framesCopied) copied, \(variant.conversions) converted")
            #expect(variant.framesShared >= 60 && variant.framesCopied == 0 && variant.conversions == 0)
        }
    }

    @Test func aClientHoldingFramesCostsCopiesUntilItDies() async throws {
        try await withRunningDaemon { daemon in
            let reader = try await PoolReader(daemon, device: "virtual-0", name: "reader")
            defer { reader.close() }
            // Holds all it may (eight frames) and never gives one back. The
            // device keeps two of its eight buffers to fill, so at most six
            // are shared with it; the rest of what it holds are copies.
            let hoarder = try await PoolReader(daemon, device: "virtual-0", name: "hoarder", framesInFlight: 8)
            let hoarded = try await hoarder.read(8, releasing: false)
            let whileHeld = try await reader.variant()
            print("zero-copy, a client holding 8 frames: \(hoarded.count { $0.inDeviceBuffer }) in the device's buffers; "
                + "\(whileHeld.framesShared) shared, \(whileHeld.framesCopied) copied")
            #expect(hoarded.allSatisfy { $0.intact })
            #expect(hoarded.count { $0.inDeviceBuffer } <= 6, "the device keeps two buffers")
            #expect(whileHeld.framesCopied >= 2, "frames copied when the device was short of buffers")

            // The device never starves: the other client's frames go on, intact and in order.
            let held = try await reader.read(30)
            #expect(held.allSatisfy { $0.intact } && zip(held, held.dropFirst()).allSatisfy { $0.sequence < $1.sequence })

            // Killed while holding: its buffers go back to the device, and
            // frames are shared again with no copy.
            hoarder.close()
            _ = try await reader.read(15)
            let after = try await reader.variant()
            let later = try await reader.read(30)
            let steady = try await reader.variant()
            print("zero-copy, after the holder died: \(steady.framesShared - after.framesShared) shared, "
                + "\(steady.framesCopied - after.framesCopied) copied of the last 30")
            #expect(later.allSatisfy { $0.intact && $0.inDeviceBuffer })
            #expect(steady.framesCopied == after.framesCopied, "no copy in a steady state")
            // Up to the three frames the reader may hold were shared before `after` and read after it.
            #expect(steady.framesShared >= after.framesShared + 30 - 3)
        }
    }
}
