import CameraIPC
import CameraProtocol
import Testing

@Suite struct EnvelopeCodecTests {
    @Test func roundTripsAnEnvelope() throws {
        var queue = DescriptorQueue()
        let bytes = EnvelopeCodec.encode(EnvelopeCodec.start(callID: 7, method: "/a/B", request: [1, 2]))
        let (envelope, descriptors) = try EnvelopeCodec.decode(bytes, descriptors: &queue)
        #expect(envelope.callID == 7)
        #expect(envelope.start.method == "/a/B")
        #expect(Array(envelope.start.request) == [1, 2])
        #expect(descriptors.isEmpty)
    }

    @Test(arguments: [
        [0xFF, 0xFF, 0xFF],  // a truncated varint
        Array("hello, camerad".utf8),
        [0x08, 0x07],  // call id 7 and nothing else: no kind
        [0x22, 0x00],  // a message with call id 0
    ] as [[UInt8]])
    func rejectsBytesThatAreNotAnEnvelope(bytes: [UInt8]) {
        var queue = DescriptorQueue()
        #expect(throws: (any Error).self) { try EnvelopeCodec.decode(bytes, descriptors: &queue) }
    }

    @Test func anEnvelopeClaimingDescriptorsThatDidNotArriveIsRejected() {
        var queue = DescriptorQueue()
        let bytes = EnvelopeCodec.encode(EnvelopeCodec.cancel(callID: 1), descriptorCount: 2)
        #expect(throws: FramingError.missingDescriptors(claimed: 2, available: 0)) {
            try EnvelopeCodec.decode(bytes, descriptors: &queue)
        }
    }
}

@Suite struct WireExampleTests {
    /// The example in Protos/README.md, byte for byte.
    @Test func helloLeavesTheSocketAsProtosREADMEDraws() throws {
        var hello = Camerad_V1_HelloRequest()
        hello.protocolVersion = 1
        hello.clientName = "camctl"
        let envelope = EnvelopeCodec.start(callID: 1, method: CameraService.hello.name, request: try hello.serializedBytes())
        let bytes = Frame.encode(EnvelopeCodec.encode(envelope))
        let expected: [UInt8] = [0x00, 0x00, 0x00, 0x2a, 0x08, 0x01, 0x1a, 0x26, 0x0a, 0x18]
            + Array("/camerad.v1.Camera/Hello".utf8) + [0x12, 0x0a, 0x08, 0x01, 0x12, 0x06] + Array("camctl".utf8)
        #expect(bytes == expected)
    }
}

@Suite struct DirectEncodingTests {
    @Test(arguments: [
        (1 as UInt64, [] as [UInt8], 0),
        (7, [1, 2, 3], 0),
        (300, Array(repeating: 9, count: 200), 2),
        (UInt64.max, Array(repeating: 1, count: 70_000), 253),
    ])
    func messageEnvelopesEncodeAsSwiftProtobufDoes(callID: UInt64, payload: [UInt8], descriptors: Int) throws {
        let direct = EnvelopeCodec.encodeMessage(callID: callID, payload: payload, descriptorCount: descriptors)
        let reference = EnvelopeCodec.encode(EnvelopeCodec.message(callID: callID, payload: payload), descriptorCount: descriptors)
        #expect(direct == reference)
        let decoded = try Camerad_V1_Envelope(serializedBytes: direct)
        #expect(decoded.callID == callID && Array(decoded.message.payload) == payload && decoded.fdCount == UInt32(descriptors))
    }
}
