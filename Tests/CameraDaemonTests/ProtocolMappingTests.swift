@testable import CameraDaemon
import CameraProtocol
import Testing

/// camerad's own types become the protocol's messages in one place.
@Suite struct ProtocolMappingTests {
    @Test func everyErrorCodeHasAReasonOfItsOwn() {
        let reasons = CameraError.Code.allCases.map { CameraError($0, "").reason }
        #expect(Set(reasons.map(\.rawValue)).count == CameraError.Code.allCases.count)
        #expect(!reasons.contains(.unspecified))
        let error = CameraError(.unsupported, "virtual-0 has no flash")
        #expect(error.rpcError == RPCError(.unsupported, "virtual-0 has no flash"))
        #expect(error.rpcError.code == .invalidArgument)
    }

    @Test func formatsAndDurationsBecomeTheirMessages() {
        let range = FrameRateRange(minFrameDuration: .seconds(1, per: 60), maxFrameDuration: .seconds(1, per: 1))
        let format = DeviceFormat(pixelFormat: .nv12, width: 640, height: 480, name: "Y/UV 4:2:0", isCompressed: false,
                                  frameRateRanges: [range])
        let message = Camerad_V1_Format(format)
        #expect(message.fourcc == 0x3231_564e && message.width == 640 && message.height == 480)
        #expect(message.description_p == "Y/UV 4:2:0" && !message.compressed)
        #expect(message.frameRateRanges.map { "\($0.minFrameDuration.numerator)/\($0.minFrameDuration.denominator)" } == ["1/60"])
        #expect(FrameDuration(Camerad_V1_Fraction(.seconds(1001, per: 30000))) == .seconds(1001, per: 30000))
        #expect(format.allows(.thirtieth) && !format.allows(.seconds(1, per: 120)))
        #expect(FrameDuration.compare(.seconds(2, per: 60), .thirtieth) == 0, "equally long, though not equal")
    }
}
