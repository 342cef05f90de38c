@testable import CameraDaemon
import CameraProtocol
import Testing

/// The AVFoundation-named settings over control sets a real V4L2 driver
/// reports, which the virtual cameras (tested end to end) do not have: a
/// webcam with only gain and no zoom, and a sensor with an ISO menu, a
/// one-shot focus and a flash LED.
@Suite struct CameraSettingsMappingTests {
    static func control(
        _ id: ControlID, _ kind: CameraControl.Kind, _ range: ClosedRange<Int64>, step: UInt64 = 1, value: Int64,
        menu: [(index: Int64, value: Int64)] = []
    ) -> CameraControl {
        CameraControl(id: id, displayName: "", kind: kind, minimum: range.lowerBound, maximum: range.upperBound, step: step,
                      defaultValue: value, value: value,
                      menuItems: menu.map { CameraControl.MenuItem(index: $0.index, name: "", value: $0.value) })
    }

    /// A UVC webcam: continuous autofocus and a focus motor, aperture-priority
    /// exposure, automatic white balance, gain; no zoom, no LED.
    static let webcam: [CameraControl] = [
        control(.autoWhiteBalance, .boolean, 0...1, value: 1),
        control(.whiteBalanceTemperature, .integer, 2800...6500, step: 10, value: 4600),
        control(.exposureAuto, .menu, 0...3, value: 3, menu: [(1, 0), (3, 0)]),
        control(.exposureAbsolute, .integer, 3...2047, value: 250),
        control(.focusAuto, .boolean, 0...1, value: 1),
        control(.focusAbsolute, .integer, 0...250, step: 5, value: 0),
        control(.gain, .integer, 0...255, value: 0),
    ]

    /// A sensor: an ISO menu with its auto switch, full auto exposure, a
    /// one-shot focus with its status, an optical zoom, a flash LED with a torch.
    static let sensor: [CameraControl] = [
        control(.exposureAuto, .menu, 0...1, value: 0, menu: [(0, 0), (1, 0)]),
        control(.exposureAbsolute, .integer, 1...10000, value: 100),
        control(.isoSensitivityAuto, .menu, 0...1, value: 1, menu: [(0, 0), (1, 0)]),
        control(.isoSensitivity, .integerMenu, 0...3, value: 0, menu: [(0, 100), (1, 200), (2, 400), (3, 800)]),
        control(.focusAbsolute, .integer, 0...1000, value: 0),
        control(.autoFocusStart, .button, 0...0, step: 0, value: 0),
        control(.autoFocusStatus, .bitmask, 0...7, value: ControlID.autoFocusStatusBusy),
        control(.zoomAbsolute, .integer, 100...300, value: 100),
        control(.flashLEDMode, .menu, 0...2, value: 0, menu: [(0, 0), (1, 0), (2, 0)]),
        control(.flashStrobe, .button, 0...0, step: 0, value: 0),
        control(.flashTorchIntensity, .integer, 0...40, value: 40),
    ]

    static func capabilities(_ controls: [CameraControl]) -> DeviceCapabilities {
        DeviceCapabilities(controls: controls, pointsOfInterest: false)
    }

    static func plan(_ controls: [CameraControl], _ configure: (inout DeviceConfiguration) -> Void) throws -> CameraSettingsMapping.Plan {
        var configuration = DeviceConfiguration()
        configure(&configuration)
        return try CameraSettingsMapping.plan(configuration, controls: controls, capabilities: capabilities(controls),
                                              of: "test")
    }

    static func values(_ plan: CameraSettingsMapping.Plan) -> [String] {
        plan.controls.map { change in
            guard case .id(let id) = change.key else { return "by name: \(change)" }
            let name = ControlID.named.first { $0.id == id }?.name ?? "\(id.rawValue)"
            return "\(name)=\(change.value)"
        }
    }

    static func reason(_ body: () throws -> Any) -> CameraError.Code? {
        do { _ = try body() } catch let error as CameraError { return error.code } catch { return nil }
        return nil
    }

    @Test func aWebcamsCapabilitiesAreWhatItsControlsCanDo() {
        let capabilities = Self.capabilities(Self.webcam)
        #expect(capabilities.focusModes == [.locked, .continuousAutoFocus])
        #expect(capabilities.isLensPositionSupported)
        #expect(capabilities.exposureModes == [.locked, .continuousAutoExposure, .custom])
        #expect(capabilities.whiteBalanceModes == [.locked, .continuousAutoWhiteBalance])
        #expect(!capabilities.hasTorch && !capabilities.hasFlash)
        #expect(capabilities.isDigitalZoom && capabilities.maxZoomFactor == CameraSettingsMapping.digitalZoomLimit)
        #expect(capabilities.isoRange == 100...1600, "gain stands for ISO")
        #expect(capabilities.exposureDurations == .microseconds(300) ... .microseconds(204_700))
        #expect(capabilities.whiteBalanceTemperatures == 2800...6500)
    }

    @Test func aWebcamsSettingsAreReadFromItsControls() {
        let settings = CameraSettingsMapping.settings(
            from: Self.webcam, state: CameraSettingsState(supportsPointsOfInterest: false, settling: .zero))
        #expect(settings.focusMode == .continuousAutoFocus && settings.lensPosition == 0)
        #expect(settings.exposureMode == .continuousAutoExposure)
        #expect(settings.exposureDuration == .milliseconds(25))
        #expect(settings.iso == 100)
        #expect(settings.whiteBalanceMode == .continuousAutoWhiteBalance && settings.whiteBalanceTemperature == 4600)
        #expect(settings.torchMode == nil && settings.videoZoomFactor == 1)
    }

    @Test func aWebcamIsSetThroughItsControls() throws {
        let lens = try Self.plan(Self.webcam) { $0.lensPosition = 0.5 }
        #expect(Self.values(lens) == ["focusAuto=0", "focusAbsolute=125"], "stepped to the control's step of 5")

        let custom = try Self.plan(Self.webcam) {
            $0.exposureDuration = .milliseconds(10)
            $0.iso = 850
        }
        #expect(Self.values(custom) == ["exposureAuto=1", "exposureAbsolute=100", "gain=128"])
        #expect(custom.manualExposure == .custom)

        let continuous = try Self.plan(Self.webcam) { $0.exposureMode = .continuousAutoExposure }
        #expect(Self.values(continuous) == ["exposureAuto=3"], "aperture priority: the webcam has no full auto")
        #expect(continuous.adjustsExposure)

        let kelvin = try Self.plan(Self.webcam) { $0.whiteBalanceTemperature = 5004 }
        #expect(Self.values(kelvin) == ["autoWhiteBalance=0", "whiteBalanceTemperature=5000"])

        let zoom = try Self.plan(Self.webcam) { $0.videoZoomFactor = 2 }
        #expect(zoom.controls.isEmpty && zoom.digitalZoom == 2, "camerad crops: no zoom control")
    }

    @Test func whatAWebcamLacksIsUnsupported() {
        #expect(Self.reason { try Self.plan(Self.webcam) { $0.focusMode = .autoFocus } } == .unsupported)
        #expect(Self.reason { try Self.plan(Self.webcam) { $0.torchMode = .on } } == .unsupported)
        #expect(Self.reason { try Self.plan(Self.webcam) { $0.whiteBalanceMode = .autoWhiteBalance } } == .unsupported)
        #expect(Self.reason { try Self.plan(Self.webcam) { $0.focusPointOfInterest = NormalizedPoint(x: 0.5, y: 0.5) } } == .unsupported)
        #expect(Self.reason { try Self.plan(Self.webcam) { $0.lensPosition = 2 } } == .invalidArgument)
        #expect(Self.reason { try Self.plan(Self.webcam) { $0.iso = 3200 } } == .invalidArgument)
        #expect(Self.reason { try Self.plan(Self.webcam) { $0.videoZoomFactor = 5 } } == .invalidArgument)
    }

    @Test func aSensorsISOMenuFocusButtonZoomAndTorch() throws {
        let capabilities = Self.capabilities(Self.sensor)
        #expect(capabilities.focusModes == [.locked, .autoFocus])
        #expect(capabilities.exposureModes == [.locked, .continuousAutoExposure, .custom])
        #expect(capabilities.isoRange == 100...800)
        #expect(capabilities.hasTorch && capabilities.hasFlash)
        #expect(!capabilities.isDigitalZoom && capabilities.maxZoomFactor == 3)

        let settings = CameraSettingsMapping.settings(
            from: Self.sensor, state: CameraSettingsState(supportsPointsOfInterest: false, settling: .zero))
        #expect(settings.iso == 100 && settings.isAdjustingFocus, "the status control says it is focusing")
        #expect(settings.focusMode == .locked && settings.torchMode == .off)

        let iso = try Self.plan(Self.sensor) { $0.iso = 350 }
        #expect(Self.values(iso) == ["exposureAuto=1", "isoSensitivityAuto=0", "isoSensitivity=2"], "the nearest entry, 400")
        let focus = try Self.plan(Self.sensor) { $0.focusMode = .autoFocus }
        #expect(Self.values(focus) == ["autoFocusStart=1"] && focus.adjustsFocus)
        let automatic = try Self.plan(Self.sensor) { $0.exposureMode = .continuousAutoExposure }
        #expect(Self.values(automatic) == ["exposureAuto=0"], "full auto where the menu has it")
        let zoom = try Self.plan(Self.sensor) { $0.videoZoomFactor = 2.5 }
        #expect(Self.values(zoom) == ["zoomAbsolute=250"])

        let torch = try Self.plan(Self.sensor) { $0.torchLevel = 0.5 }
        #expect(Self.values(torch) == ["flashLEDMode=2", "flashTorchIntensity=20"])
        // With no session running too, as iOS lights it.
        #expect(Self.values(try Self.plan(Self.sensor) { $0.torchMode = .on }) == ["flashLEDMode=2"])

        var lit = Self.sensor
        lit[lit.firstIndex { $0.id == .flashLEDMode }!].value = FlashLEDMode.torch.rawValue
        #expect(CameraSettingsMapping.torchOff(lit) == [ControlValue(.flashLEDMode, FlashLEDMode.none.rawValue)])
        #expect(CameraSettingsMapping.torchOff(Self.sensor).isEmpty, "off already")
    }
}
