@testable import CameraDaemon
import CameraMedia
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

    @Test func formatsAndDurationsBecomeTheirMessages() throws {
        let range = FrameRateRange(minFrameDuration: .seconds(1, per: 60), maxFrameDuration: .seconds(1, per: 1))
        let format = DeviceFormat(pixelFormat: .nv12, width: 640, height: 480, name: "Y/UV 4:2:0", isCompressed: false,
                                  frameRateRanges: [range])
        let message = Camerad_V1_Format(format)
        #expect(message.fourcc == 0x3231_564e && message.width == 640 && message.height == 480)
        #expect(message.description_p == "Y/UV 4:2:0" && !message.compressed)
        #expect(message.frameRateRanges.map { "\($0.minFrameDuration.numerator)/\($0.minFrameDuration.denominator)" } == ["1/60"])
        #expect(try FrameDuration(Camerad_V1_Fraction(.seconds(1001, per: 30000)), field: "a duration") == .seconds(1001, per: 30000))
        #expect(format.allows(.thirtieth) && !format.allows(.seconds(1, per: 120)))
        #expect(FrameDuration.compare(.seconds(2, per: 60), .thirtieth) == 0, "equally long, though not equal")
    }

    /// A device's description: the protocol's "none" values where camerad's
    /// types say nil, the running mode as the active format, the lock holder.
    @Test func aDeviceDescriptionBecomesItsMessage() {
        var description = VirtualCamera(index: 0, localizedName: "Desk", position: .front).describe()
        description.lockHolder = ConfigurationLocks.Holder(connectionID: 1, pid: 42, processName: "obs", clientName: "", count: 1)
        description.settings.lensPosition = nil
        let message = Camerad_V1_Device(description)
        #expect(message.uniqueID == "virtual-0" && message.localizedName == "Desk" && message.position == .front)
        #expect(message.backend == .virtual && message.deviceType == .builtInWideAngleCamera && message.isConnected)
        #expect(message.devicePath.isEmpty && message.unavailableReason.isEmpty)
        #expect(message.formats.count == description.formats.count)
        #expect(message.optionalActiveFormatIndex != nil && message.activeFormatIndex == 0)
        #expect(message.activeMinFrameDuration == Camerad_V1_Fraction(.thirtieth))
        #expect(message.activeMaxFrameDuration == message.activeMinFrameDuration)
        #expect(message.lock.pid == 42 && message.lock.processName == "obs")
        #expect(message.settings.lensPosition == -1, "no lens position")
        #expect(message.settings.exposureDuration == .seconds(description.settings.exposureDuration.map {
            UInt32($0 / CameraSettingsMapping.exposureUnit) } ?? 0, per: 10_000), "in 100 µs")
        #expect(message.capabilities.supportsFlash && message.capabilities.flashModes == [.off, .on, .auto])
        #expect(message.capabilities.minExposureDuration.denominator == 10_000)
        #expect(message.controls.map(\.id) == description.controls.map(\.id.rawValue))
    }

    /// A configuration comes in and is stored (the defaults' file is the
    /// protocol's JSON) without losing anything it says.
    @Test func aConfigurationRoundTrips() throws {
        var message = Camerad_V1_DeviceConfiguration()
        message.activeFormat.fourcc = PixelFormat.nv12.fourcc
        message.activeFormat.width = 1280
        message.activeFormat.height = 720
        message.activeMinFrameDuration = Camerad_V1_Fraction(.seconds(1, per: 60))
        message.focusMode = .locked
        message.lensPosition = 0.25
        message.exposureDuration = .seconds(1, per: 100)
        message.iso = 400
        message.exposurePointOfInterest.x = 0.5
        message.whiteBalanceTemperature = 5000
        message.videoZoomFactor = 2
        var brightness = Camerad_V1_ControlValue()
        brightness.name = "brightness"
        brightness.value = 100
        message.controls = [brightness, Camerad_V1_ControlValue(ControlValue(.contrast, 7))]

        let configuration = try DeviceConfiguration(message)
        #expect(configuration.activeFormat == .init(pixelFormat: .nv12, width: 1280, height: 720))
        #expect(configuration.activeMinFrameDuration == .seconds(1, per: 60) && configuration.activeMaxFrameDuration == nil)
        #expect(configuration.focusMode == .locked && configuration.exposureMode == nil && configuration.torchMode == nil)
        #expect(configuration.exposureDuration == .milliseconds(10) && configuration.iso == 400)
        #expect(configuration.exposurePointOfInterest == NormalizedPoint(x: 0.5, y: 0))
        #expect(configuration.focusPointOfInterest == nil)
        #expect(configuration.controls == [ControlValue(.name("brightness"), 100), ControlValue(.contrast, 7)])
        var expected = message
        expected.exposureDuration = .seconds(100, per: 10_000)
        #expect(Camerad_V1_DeviceConfiguration(configuration) == expected, "the same, the exposure in 100 µs")
    }

    @Test func badModesAndFractionsAreRefusedAtTheEdge() throws {
        var message = Camerad_V1_DeviceConfiguration()
        message.focusMode = .UNRECOGNIZED(9)
        #expect(throws: CameraError.unknownMode(9, "focus", use: "0 (unspecified), 1 (locked), 2 (autoFocus) or 3 (continuousAutoFocus)")) {
            try DeviceConfiguration(message)
        }
        message = Camerad_V1_DeviceConfiguration()
        message.exposureDuration = .seconds(1, per: 0)
        #expect(throws: CameraError.self) { try DeviceConfiguration(message) }
        var photo = Camerad_V1_PhotoSettings()
        photo.flashMode = .UNRECOGNIZED(5)
        #expect(throws: CameraError.self) { try PhotoSettings(photo) }
        photo.flashMode = .unspecified
        #expect(try PhotoSettings(photo).flashMode == .off, "unspecified: off, as AVCapturePhotoSettings")
    }

    /// The stored defaults: later values win, a new format drops the old frame
    /// durations, the torch is never kept, each control keeps its last value.
    @Test func storedConfigurationsMergeAsTheDefaultsKeepThem() {
        var old = DeviceConfiguration()
        old.activeMinFrameDuration = .thirtieth
        old.iso = 100
        old.controls = [ControlValue(.brightness, 1), ControlValue(.contrast, 2)]
        var newer = DeviceConfiguration()
        newer.activeFormat = .init(pixelFormat: .yuyv, width: 640, height: 480)
        newer.torchMode = .on
        newer.whiteBalanceMode = .locked
        newer.controls = [ControlValue(.brightness, 3)]
        let merged = old.merging(newer)
        #expect(merged.activeFormat == newer.activeFormat && merged.activeMinFrameDuration == nil)
        #expect(merged.iso == 100 && merged.whiteBalanceMode == .locked && merged.torchMode == nil)
        #expect(merged.controls == [ControlValue(.contrast, 2), ControlValue(.brightness, 3)])
    }

    /// camerad's presets and the protocol's map through one table, every one
    /// both ways; no preset named is the device's own (inputPriority).
    @Test func everyPresetMapsThroughTheProtocolsTable() throws {
        for preset in SessionPreset.allCases {
            #expect(Camerad_V1_SessionPreset(preset) != .unspecified, "\(preset)")
            #expect(try SessionPreset(Camerad_V1_SessionPreset(preset)) == preset)
        }
        #expect(Camerad_V1_SessionPreset.avFoundationNames.count == SessionPreset.allCases.count)
        #expect(try SessionPreset(.unspecified) == .inputPriority)
        #expect(throws: CameraError.self) { try SessionPreset(.UNRECOGNIZED(42)) }
    }
}
