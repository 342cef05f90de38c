import CameraIPC
import Testing

@Suite struct FrameDecoderTests {
    static let payloads: [[UInt8]] = [[], [1], Array(0..<200), Array(repeating: 7, count: 70_000)]

    @Test func decodesFramesFedOneByteAtATime() throws {
        let stream = Self.payloads.flatMap(Frame.encode)
        var decoder = FrameDecoder()
        var decoded: [[UInt8]] = []
        for byte in stream {
            decoder.append([byte])
            while let frame = try decoder.nextFrame() { decoded.append(frame) }
        }
        #expect(decoded == Self.payloads)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test(arguments: [1, 2, 3, 5, 4096])
    func decodesFramesInChunksThatSplitHeaders(chunk: Int) throws {
        let stream = Self.payloads.flatMap(Frame.encode)
        var decoder = FrameDecoder()
        var decoded: [[UInt8]] = []
        var offset = 0
        while offset < stream.count {
            decoder.append(stream[offset..<min(stream.count, offset + chunk)])
            offset += chunk
            while let frame = try decoder.nextFrame() { decoded.append(frame) }
        }
        #expect(decoded == Self.payloads)
    }

    @Test func decodesManyFramesArrivingInOneRead() throws {
        var decoder = FrameDecoder()
        decoder.append(Self.payloads.flatMap(Frame.encode))
        var decoded: [[UInt8]] = []
        while let frame = try decoder.nextFrame() { decoded.append(frame) }
        #expect(decoded == Self.payloads)
    }

    @Test func waitsForTheRestOfAFrame() throws {
        var decoder = FrameDecoder()
        let frame = Frame.encode([1, 2, 3, 4])
        decoder.append(frame.dropLast())
        #expect(try decoder.nextFrame() == nil)
        decoder.append(frame.suffix(1))
        #expect(try decoder.nextFrame() == [1, 2, 3, 4])
    }

    @Test func rejectsAnOversizeLengthAsSoonAsTheHeaderIsIn() {
        var decoder = FrameDecoder(maxPayloadLength: 100)
        decoder.append([0, 0, 0, 101])
        #expect(throws: FramingError.frameTooLarge(length: 101, limit: 100)) { try decoder.nextFrame() }
    }

    @Test func acceptsAFrameOfExactlyTheLimit() throws {
        var decoder = FrameDecoder(maxPayloadLength: 100)
        decoder.append(Frame.encode([UInt8](repeating: 9, count: 100)))
        #expect(try decoder.nextFrame()?.count == 100)
    }

    @Test func theDefaultLimitIs16MiB() {
        var decoder = FrameDecoder()
        // "GET " as a length: what an HTTP client sends first.
        decoder.append(Array("GET / HTTP/1.1\r\n".utf8))
        #expect(throws: FramingError.self) { try decoder.nextFrame() }
        #expect(Frame.maxPayloadLength == 16 * 1024 * 1024)
    }

    @Test func encodesTheLengthBigEndian() {
        #expect(Frame.encode([UInt8](repeating: 0, count: 0x010203)).prefix(4) == [0, 1, 2, 3])
    }
}
