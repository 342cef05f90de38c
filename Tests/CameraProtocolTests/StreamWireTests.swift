import CameraProtocol
import CameraTestSupport
import Foundation
import SwiftProtobuf
import Testing

/// The hand-written readers and writers of the per-frame messages (StreamWire)
/// against SwiftProtobuf: whatever they read, SwiftProtobuf reads the same;
/// what they write, SwiftProtobuf would have written.
@Suite struct StreamWireTests {
    /// A generator seeded per test, so a failure repeats.
    typealias Random = SeededRandom

    static func frame(_ random: inout Random) -> Camerad_V1_FrameReady {
        var frame = Camerad_V1_FrameReady()
        frame.poolID = UInt64.random(in: 0...3, using: &random) == 0 ? 0 : UInt64.random(in: 1...UInt64.max, using: &random)
        frame.slot = UInt32.random(in: 0...40, using: &random)
        frame.sequence = UInt64.random(in: 0...1 << 40, using: &random)
        frame.presentationTimeNs = Int64.random(in: Int64.min...Int64.max, using: &random)
        frame.durationNs = Bool.random(using: &random) ? 33_333_333 : -1
        frame.bytesUsed = UInt64.random(in: 0...1 << 26, using: &random)
        for _ in 0..<Int.random(in: 0...3, using: &random) {
            var plane = Camerad_V1_PlaneInfo()
            plane.offset = UInt64.random(in: 0...1 << 24, using: &random)
            plane.bytesPerRow = UInt32.random(in: 0...8192, using: &random)
            plane.height = UInt32.random(in: 0...4320, using: &random)
            frame.planes.append(plane)
        }
        if Int.random(in: 0...3, using: &random) == 0 {
            frame.data = Data((0..<Int.random(in: 1...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        return frame
    }

    static func response(_ frame: Camerad_V1_FrameReady) throws -> [UInt8] {
        var response = Camerad_V1_StreamResponse()
        response.frame = frame
        return try response.serializedBytes()
    }

    @Test func readsEveryFrameSwiftProtobufWrites() throws {
        var random = Random(state: 1)
        for _ in 0..<500 {
            let frame = Self.frame(&random)
            #expect(StreamWire.frameReady(try Self.response(frame)) == frame)
        }
    }

    @Test func writesFramesAsSwiftProtobufDoes() throws {
        var random = Random(state: 7)
        for _ in 0..<500 {
            var frame = Self.frame(&random)
            frame.data = Data()
            // Zeros are left out: some planes of only zeros, some fields zero.
            if Bool.random(using: &random) { frame.slot = 0 }
            if !frame.planes.isEmpty && Bool.random(using: &random) { frame.planes[0] = Camerad_V1_PlaneInfo() }
            #expect(StreamWire.frameResponse(frame) == (try Self.response(frame)))
        }
    }

    @Test func leavesEveryOtherResponseToSwiftProtobuf() throws {
        var dropped = Camerad_V1_StreamResponse()
        dropped.dropped.count = 3
        var started = Camerad_V1_StreamResponse()
        started.started.note = "hello"
        var interrupted = Camerad_V1_StreamResponse()
        interrupted.interrupted.message = "gone"
        for response in [dropped, started, interrupted, Camerad_V1_StreamResponse()] {
            #expect(StreamWire.frameReady(try response.serializedBytes()) == nil)
        }
    }

    @Test func writesReleasesAsSwiftProtobufDoes() throws {
        var random = Random(state: 2)
        for count in [0, 1, 2, 8, 200] {
            var request = Camerad_V1_StreamRequest()
            request.release.poolID = count == 0 ? 0 : UInt64.random(in: 1...UInt64.max, using: &random)
            request.release.slots = (0..<count).map { _ in UInt32.random(in: 0...UInt32.max, using: &random) }
            let written = StreamWire.releaseRequest(poolID: request.release.poolID, slots: request.release.slots)
            #expect(written == (try request.serializedBytes()))
            #expect(Camerad_V1_StreamRequest.release(wire: written) == request)
        }
    }

    @Test func readsReleasesWithSlotsNotPacked() throws {
        // pool 5, slots 1 and 300 each as its own field: what a client other
        // than SwiftProtobuf may send, and proto3 readers must accept.
        let release: [UInt8] = [0x08, 0x05, 0x10, 0x01, 0x10, 0xAC, 0x02]
        let bytes: [UInt8] = [0x12, UInt8(release.count)] + release
        let expected = try Camerad_V1_StreamRequest(serializedBytes: bytes)
        #expect(expected.release.slots == [1, 300])
        #expect(Camerad_V1_StreamRequest.release(wire: bytes) == expected)
    }

    @Test func readsMessageEnvelopesAsSwiftProtobufDoes() throws {
        var random = Random(state: 3)
        for _ in 0..<200 {
            let callID = UInt64.random(in: 1...UInt64.max, using: &random)
            let payload = (0..<Int.random(in: 0...100, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let fds = Int.random(in: 0...3, using: &random)
            let bytes = EnvelopeCodec.encodeMessage(callID: callID, payload: payload, descriptorCount: fds)
            let envelope = try Camerad_V1_Envelope(serializedBytes: bytes)
            let read = try #require(StreamWire.envelopeMessage(bytes))
            #expect(read.callID == envelope.callID)
            #expect(read.fdCount == envelope.fdCount)
            #expect(Array(bytes[read.payload]) == Array(envelope.message.payload))
        }
        // The other kinds, and call 0, go to SwiftProtobuf.
        for envelope in [EnvelopeCodec.start(callID: 1, method: "/m", request: []), EnvelopeCodec.cancel(callID: 2),
                         EnvelopeCodec.end(callID: 3, status: .init()), EnvelopeCodec.message(callID: 0, payload: [1])] {
            #expect(StreamWire.envelopeMessage(EnvelopeCodec.encode(envelope)) == nil)
        }
    }

    /// The safety of the hand-written readers: on bytes mutated at random
    /// (flipped, cut, inserted), whenever a reader gives a result SwiftProtobuf
    /// decodes the bytes to the same one.
    @Test func neverReadsWhatSwiftProtobufWouldReadOtherwise() throws {
        var random = Random(state: 4)
        var agreed = (frames: 0, envelopes: 0, releases: 0)
        for _ in 0..<3000 {
            let frame = try Self.mutate(Self.response(Self.frame(&random)), &random)
            if let read = StreamWire.frameReady(frame) {
                #expect(try Camerad_V1_StreamResponse(serializedBytes: frame).frame == read, "\(frame)")
                agreed.frames += 1
            }
            let envelope = Self.mutate(EnvelopeCodec.encodeMessage(callID: UInt64.random(in: 1...1000, using: &random),
                                                                   payload: [1, 2, 3], descriptorCount: 1), &random)
            if let read = StreamWire.envelopeMessage(envelope) {
                let decoded = try Camerad_V1_Envelope(serializedBytes: envelope)
                #expect(decoded.callID == read.callID && decoded.fdCount == read.fdCount, "\(envelope)")
                #expect(Array(decoded.message.payload) == Array(envelope[read.payload]), "\(envelope)")
                agreed.envelopes += 1
            }
            let release = Self.mutate(StreamWire.releaseRequest(poolID: 9, slots: [0, 1, 200]), &random)
            if let read = Camerad_V1_StreamRequest.release(wire: release) {
                #expect(try Camerad_V1_StreamRequest(serializedBytes: release) == read, "\(release)")
                agreed.releases += 1
            }
        }
        // Many mutations leave a readable message (a changed value): the
        // comparison above ran, not only the nil cases.
        #expect(agreed.frames > 300 && agreed.envelopes > 300 && agreed.releases > 300, "\(agreed)")
    }

    static func mutate(_ bytes: [UInt8], _ random: inout Random) -> [UInt8] {
        var bytes = bytes
        guard !bytes.isEmpty else { return bytes }
        let index = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0...3, using: &random) {
        case 0: bytes[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
        case 1: bytes.removeSubrange(index...)
        case 2: bytes.insert(UInt8.random(in: 0...255, using: &random), at: index)
        default: bytes[index] = UInt8.random(in: 0...255, using: &random)
        }
        return bytes
    }
}
