import CameraIPC
import CameraProtocol
import CameraTestSupport
import Foundation
import SwiftProtobuf
import Testing

func open(_ uniqueID: String) -> Camerad_V1_StreamRequest {
    var request = Camerad_V1_StreamRequest()
    request.open.uniqueID = uniqueID
    return request
}

@Suite struct StreamProtocolTests {
    @Test func aStreamMustBeOpenedFirst() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let stream = try await RawStream(raw, callID: 7)
            var release = Camerad_V1_StreamRequest()
            release.release.poolID = 1
            try await stream.send(release)
            let error = try await stream.end()
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("open"))
            try await expectServes(daemon)
        }
    }

    @Test func anUnknownDeviceIsNotFound() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let stream = try await RawStream(raw, callID: 7)
            try await stream.send(open("virtual-9"))
            #expect(try await stream.end().reason == .deviceNotFound)
        }
    }

    /// The device's own format: the pool's first slots are the capture's
    /// buffers (a virtual camera's, in a memfd of their own), then its own.
    @Test func startedCarriesThePoolAndItsMemory() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let stream = try await RawStream(raw, callID: 7)
            try await stream.send(open("virtual-0"))
            guard case .success(let (response, descriptors)) = try await stream.next() else {
                Issue.record("no StreamStarted")
                return
            }
            #expect(descriptors == 2, "the pool's memfd and the capture's ride with StreamStarted")
            let pool = response.started.pool
            #expect(pool.shared && pool.slotCount >= 4)
            let deviceSlots = pool.slots.prefix { $0.fdIndex == 1 }
            #expect(deviceSlots.count == 8 && Set(deviceSlots.map(\.offset)).count == 8
                    && deviceSlots.allSatisfy { $0.offset % 4096 == 0 }, "the capture's buffers, page-aligned")
            #expect(pool.slots.count == Int(pool.slotCount))
            #expect(pool.slots.dropFirst(8).enumerated().allSatisfy { $1.fdIndex == 0 && $1.offset == UInt64($0) * pool.slotSize },
                    "then the pool's own slots, one after another")
            #expect(pool.slotSize % 4096 == 0 && pool.slotSize >= 640 * 480 * 2)
            #expect(PixelFormatCode(pool.fourcc) == "YUYV" && pool.width == 640 && pool.height == 480)
            #expect(pool.planes.map(\.bytesPerRow) == [1280])
            // (A loaded machine may skip frames: their drop report comes first.)
            var next = try await stream.next()
            while case .success(let (response, _)) = next, case .dropped = response.kind { next = try await stream.next() }
            guard case .success(let (frame, _)) = next, case .frame = frame.kind else {
                Issue.record("no frame after StreamStarted: \(next)")
                return
            }
            #expect(frame.frame.poolID == pool.poolID && frame.frame.bytesUsed == 640 * 480 * 2)
            #expect(frame.frame.slot < 8, "shared in the capture's buffer, not copied")
        }
    }

    @Test func releasingASlotNotHeldIsAnInvalidArgument() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let stream = try await RawStream(raw, callID: 7)
            try await stream.send(open("virtual-0"))
            var pool: UInt64 = 0
            var frameSlot: UInt32?
            while frameSlot == nil, case .success(let (response, _)) = try await stream.next() {
                if case .started(let started)? = response.kind { pool = started.pool.poolID }
                if case .frame(let frame)? = response.kind { frameSlot = frame.slot }
            }
            // Twice in one message: in two, the slot could come back between them.
            var release = Camerad_V1_StreamRequest()
            release.release.poolID = pool
            release.release.slots = [try #require(frameSlot), try #require(frameSlot)]
            try await stream.send(release)
            let error = try await stream.end()
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("release each frame once"))
        }
    }

    @Test func openingTwiceOnOneCallIsAnInvalidArgument() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let stream = try await RawStream(raw, callID: 7)
            try await stream.send(open("virtual-0"))
            try await stream.send(open("virtual-0"))
            #expect(try await stream.end().code == .invalidArgument)
        }
    }

    @Test func settingsOutOfRangeAreRefusedWithTheRange() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            var request = open("virtual-0")
            request.open.settings.maxFramesInFlight = 20
            let stream = try await RawStream(raw, callID: 7)
            try await stream.send(request)
            let error = try await stream.end()
            #expect(error.code == .invalidArgument && error.message.contains("1 to 8"))
            var huge = open("virtual-0")
            huge.open.settings.width = 10_000
            let second = try await RawStream(raw, callID: 8)
            try await second.send(huge)
            #expect(try await second.end().message.contains("2 to 8192"))
        }
    }
}

func PixelFormatCode(_ fourcc: UInt32) -> String {
    String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: fourcc >> (8 * $0)) }, as: UTF8.self)
}
