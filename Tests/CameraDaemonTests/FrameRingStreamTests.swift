import CameraIPC
import CameraProtocol
import CameraTestSupport
import Foundation
import Testing

/// Frames announced through a stream's frame ring, with one signal for all of
/// a user's streams on a device: nothing per frame on the socket; news in its
/// place; a client that stops reading loses frames as late and hears of every
/// one; one that writes nonsense loses its own stream and no one else's.
@Suite struct FrameRingStreamTests {
    @Test(.timeLimit(.minutes(4))) func framesComeThroughTheRingAndNothingPerFrameOnTheSocket() async throws {
        try await withRunningDaemon { daemon in
            let reader = try await PoolReader(daemon, device: "virtual-0", name: "ring", framesInFlight: 2,
                                              releaseRing: true, frameRing: true)
            defer { reader.close() }
            #expect(reader.frameRing != nil, "camerad gave the stream a frame ring")
            let frames = try await reader.read(40)
            #expect(frames.count == 40 && frames.allSatisfy { $0.intact })
            #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
            #expect(reader.releasedThroughRing >= 39 && reader.releasedByMessage == 0)
            // Done: what is left on the socket is the end, with no frame or drop message before it.
            reader.finish()
            while let message = try await reader.nextMessage() {
                switch message {
                case .frame, .dropped: Issue.record("a per-frame message on the socket: \(message)")
                default: continue
                }
            }
        }
    }

    @Test(.timeLimit(.minutes(4))) func aClientThatStopsReadingLosesFramesAsLateAndHearsOfEveryOne() async throws {
        try await withRunningDaemon { daemon in
            // A camera as fast as frames can be made: its ring fills in moments.
            let (admin, loop) = try await connectClient(daemon, name: "admin")
            defer {
                admin.close()
                loop.stop()
            }
            var add = Camerad_V1_AddVirtualCameraRequest()
            add.index = 5
            add.unthrottled = true
            add.staticPicture = true
            _ = try await admin.unary(CameraService.addVirtualCamera, add)

            let reader = try await PoolReader(daemon, device: "virtual-5", name: "sleeper", framesInFlight: 2,
                                              releaseRing: true, frameRing: true)
            defer { reader.close() }
            let ring = try #require(reader.frameRing)
            // Reading nothing: the ring fills (two frames, then drop reports), then frames go on without it.
            var request = Camerad_V1_GetDeviceStatisticsRequest()
            request.uniqueID = "virtual-5"
            let written = { ring.memory.baseAddress.load(as: UInt64.self) }
            #expect(await waitUntil { written() >= UInt64(ring.capacity) }, "the ring fills")
            let full = try await admin.unary(CameraService.getDeviceStatistics, request).framesCaptured
            #expect(try await waitUntil {
                try await admin.unary(CameraService.getDeviceStatistics, request).framesCaptured > full + 200
            }, "frames come while it is full")
            #expect(written() == UInt64(ring.capacity), "camerad never writes past what the client read")

            // Reading again: everything it missed is told, and frames come again.
            let frames = try await reader.read(20)
            #expect(frames.allSatisfy { $0.intact })
            var late = 0
            var last: UInt64?
            for told in reader.told {
                switch told {
                case .frame(let sequence):
                    if let last {
                        // Every number between two frames is in a drop report, once.
                        let reported = reader.told.reduce(0) { sum, told in
                            guard case let .dropped(_, count, lastSequence) = told, lastSequence > last, lastSequence < sequence else { return sum }
                            return sum + count
                        }
                        #expect(reported == Int(sequence - last - 1), "between frames \(last) and \(sequence)")
                    }
                    last = sequence
                case let .dropped(reason, count, _):
                    if reason == .frameWasLate { late += count }
                }
            }
            #expect(late > 200, "the frames it missed while its ring was full were late: \(late)")
        }
    }

    @Test(.timeLimit(.minutes(4))) func aRingWithANonsenseTailEndsThatStreamAloneWithItsReason() async throws {
        try await withRunningDaemon { daemon in
            let bystander = try await PoolReader(daemon, device: "virtual-0", name: "bystander", releaseRing: true, frameRing: true)
            defer { bystander.close() }
            let hostile = try await PoolReader(daemon, device: "virtual-0", name: "hostile", releaseRing: true, frameRing: true)
            defer { hostile.close() }
            _ = try await hostile.read(3)
            // A tail far beyond anything written. camerad reads it once half the ring is used, which the drop
            // reports of the frames this stream no longer takes fill.
            (try #require(hostile.frameRing).memory.baseAddress + 64).storeBytes(of: UInt64(1) << 40, as: UInt64.self)
            let error = await #expect(throws: RPCError.self) {
                while try await hostile.nextMessage() != nil {}
            }
            #expect(error?.code == .invalidArgument && error?.message.contains("frame ring") == true, "\(String(describing: error))")
            let frames = try await bystander.read(30)
            #expect(frames.allSatisfy { $0.intact } && frames.count == 30, "the other stream never noticed")
        }
    }

    @Test(.timeLimit(.minutes(4))) func aFormatChangeComesInItsPlaceAmongTheFrames() async throws {
        try await withRunningDaemon { daemon in
            let reader = try await PoolReader(daemon, device: "virtual-0", name: "first", framesInFlight: 1,
                                              releaseRing: true, frameRing: true)
            defer { reader.close() }
            _ = try await reader.read(5)
            let firstPool = reader.pool.poolID
            // A stream of the same output holding more: the pool grows, and the first stream moves to it.
            let hoarder = try await PoolReader(daemon, device: "virtual-0", name: "hoarder", framesInFlight: 8, frameRing: true)
            defer { hoarder.close() }
            // A frame of the new pool before its FormatChanged would lie outside every pool this reader knows.
            let frames = try await reader.read(20)
            #expect(frames.allSatisfy { $0.intact })
            #expect(reader.formatChanges == 1 && reader.pool.poolID != firstPool,
                    "\(reader.formatChanges) format changes; pool \(firstPool) then \(reader.pool.poolID)")
        }
    }
}
