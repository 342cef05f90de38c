import CameraMedia
import CameraProtocol
import CameraTestSupport
import Foundation
import Testing

extension VividGuestTests {
    /// The node's own format reaches clients in the driver's buffers, exported
    /// as dma-bufs (`VIDIOC_EXPBUF`), single- and multi-planar: frames intact,
    /// no copy in a steady state; a client holding all it may gets copies past
    /// what the driver can spare, the others go on, and once it dies holding
    /// them the buffers are the driver's again.
    @Test func theNodesOwnFormatReachesClientsInTheDriversBuffers() async throws {
        for node in [Vivid.singlePlanar, Vivid.multiPlanar] {
            try Vivid.setMode(node, "YUYV")
            try await Vivid.withDaemon { daemon in
                let reader = try await PoolReader(daemon, device: node.uniqueID, name: "reader", check: Self.barsIntact)
                defer { reader.close() }
                _ = try await reader.read(10)
                let deviceSlots = reader.pool.slots.filter { $0.fdIndex != 0 }
                #expect(deviceSlots.count >= 4 && Set(deviceSlots.map(\.fdIndex)).count == deviceSlots.count,
                        "\(node): each of the driver's buffers a dma-buf of its own: \(reader.pool.slots); the log: \(Self.sharingLog(daemon))")
                let before = try await reader.variant()
                let frames = try await reader.read(40)
                let after = try await reader.variant()
                print(Vivid.figures + "\(node) YUYV zero-copy: \(after.framesShared - before.framesShared) shared, "
                    + "\(after.framesCopied - before.framesCopied) copied, \(after.conversions - before.conversions) converted in 40 frames")
                #expect(frames.allSatisfy { $0.intact && $0.inDeviceBuffer }, "\(node): \(frames)")
                // Up to the three frames the reader may hold were shared before `before` and read after it.
                #expect(after.framesCopied == before.framesCopied && after.framesShared >= before.framesShared + 40 - 3,
                        "\(node): no copy in a steady state")

                let hoarder = try await PoolReader(daemon, device: node.uniqueID, name: "hoarder", framesInFlight: 8,
                                                   check: Self.barsIntact)
                let hoarded = try await hoarder.read(8, releasing: false)
                #expect(hoarded.allSatisfy { $0.intact })
                #expect(hoarded.count(where: \.inDeviceBuffer) <= deviceSlots.count - 2, "the driver keeps two buffers to fill")
                let beside = try await reader.read(20)
                #expect(beside.allSatisfy { $0.intact } && zip(beside, beside.dropFirst()).allSatisfy { $0.sequence < $1.sequence },
                        "the other client goes on: \(beside)")
                hoarder.close()
                _ = try await reader.read(10)
                let settled = try await reader.variant()
                let later = try await reader.read(40)
                let steady = try await reader.variant()
                print(Vivid.figures + "\(node) after a client died holding 8 frames: \(steady.framesShared - settled.framesShared) shared, "
                    + "\(steady.framesCopied - settled.framesCopied) copied in 40 frames")
                #expect(later.allSatisfy { $0.intact && $0.inDeviceBuffer })
                #expect(steady.framesCopied == settled.framesCopied, "\(node): no copy once the holder is gone")
            }
        }
    }

    /// What the daemon logged about sharing buffers.
    static func sharingLog(_ daemon: DaemonProcess) -> String {
        daemon.logText.split(separator: "\n").filter { $0.contains("shared") }.joined(separator: "; ")
    }

    /// A YUYV frame of vivid's colour bars: along a row in the lower half, the
    /// middle of each eighth has its bar's luma (BT.601, limited range).
    static let barsIntact: PoolReader.Check = { bytes, _, pool in
        let width = Int(pool.width)
        let height = Int(pool.height)
        guard PixelFormat(fourcc: pool.fourcc) == .yuyv, bytes.count >= width * height * 2 else { return false }
        let row = height * 3 / 4
        return bars.enumerated().allSatisfy { index, bar in
            let x = (2 * index + 1) * width / 16
            let luma = Int(bytes[(row * width + x) * 2])
            let expected = 16 + (65_738 * bar.r + 129_057 * bar.g + 25_064 * bar.b) / 256_000
            return abs(luma - expected) <= 8
        }
    }
}
