@testable import CameraDaemon
import CameraMedia
import CameraProtocol
import Testing

@Suite struct VirtualCameraTests {
    @Test func offersYUYVNV12AndMJPEGAtThreeSizes() {
        let device = VirtualCamera(index: 0).describe()
        #expect(device.formats.count == 9)
        let pairs = Set(device.formats.map { "\($0.pixelFormat.code) \($0.width)x\($0.height)" })
        for code in ["YUYV", "NV12", "MJPG"] {
            for size in ["640x480", "1280x720", "1920x1080"] { #expect(pairs.contains("\(code) \(size)")) }
        }
        #expect(device.formats.filter(\.isCompressed).allSatisfy { $0.pixelFormat == .mjpeg })
    }

    /// A size of its own (a 4K test camera) is added in every pixel format; the
    /// default mode stays YUYV 640x480; sizes out of bounds are refused.
    @Test func canBeMadeWithASizeOfItsOwn() throws {
        var request = Camerad_V1_AddVirtualCameraRequest()
        request.fourcc = PixelFormat.nv12.fourcc
        request.width = 3840
        request.height = 2160
        let camera = VirtualCamera(index: 0, options: try VirtualCamera.Options(request))
        let device = camera.describe()
        #expect(device.formats.count == 12)
        #expect(device.formats[0].width == 640 && device.formats[0].pixelFormat == .yuyv)
        let mode = try #require(device.activeMode)
        let active = device.formats[mode.formatIndex]
        #expect(active == mode.format)
        #expect(active.pixelFormat == .nv12 && active.width == 3840 && active.height == 2160)
        #expect(active.frameRateRanges[0].minFrameDuration.denominator == 30)
        #expect(device.supportedPresets.contains(.hd4K3840x2160))
        #expect(VirtualCamera(index: 1).describe().formats.count == 9)

        request.width = 8192
        #expect(throws: CameraError.self) { try VirtualCamera.Options(request) }
        request.width = 1281
        request.height = 720
        #expect(throws: CameraError.self) { try VirtualCamera.Options(request) }
        request.width = 1280
        request.fourcc = PixelFormat.bgra.fourcc
        #expect(throws: CameraError.self) { try VirtualCamera.Options(request) }
    }

    @Test func framesRatesReach60ExceptAt1080p() {
        for format in VirtualCamera(index: 0).describe().formats {
            let range = format.frameRateRanges[0]
            #expect(range.minFrameDuration.numerator == 1)
            #expect(range.minFrameDuration.denominator == (format.height == 1080 ? 30 : 60))
            #expect(range.maxFrameDuration.numerator == 1 && range.maxFrameDuration.denominator == 1)
        }
    }

    @Test func describesItselfAsAConnectedBuiltInCamera() {
        let device = VirtualCamera(index: 3, localizedName: "Desk", position: .back).describe()
        #expect(device.uniqueID == "virtual-3")
        #expect(device.localizedName == "Desk")
        #expect(device.position == .back)
        #expect(device.deviceType == .builtInWideAngleCamera)
        #expect(device.backend == .virtual)
        #expect(device.isConnected)
        #expect(device.activeMode?.formatIndex == 0)
        #expect(device.activeMode?.frameDuration == .thirtieth)
        #expect(device.devicePath == nil && device.unavailableReason == nil && device.lockHolder == nil)
        #expect(VirtualCamera(index: 2).describe().localizedName == "Virtual Camera 2")
    }

    @Test func hasWebcamControlsWithV4L2NamesAndMenus() {
        let controls = Dictionary(uniqueKeysWithValues: VirtualCamera(index: 0).describe().controls.map { ($0.name, $0) })
        for name in ["brightness", "contrast", "saturation", "focus_automatic_continuous", "focus_absolute",
                     "auto_exposure", "exposure_time_absolute", "white_balance_automatic",
                     "white_balance_temperature", "zoom_absolute", "led_mode", "horizontal_flip", "vertical_flip"] {
            #expect(controls[name] != nil, "\(name)")
        }
        #expect(controls["brightness"]?.id == .brightness)
        #expect(controls["brightness"]?.value == controls["brightness"]?.defaultValue)
        #expect(controls["auto_exposure"]?.menuItems.map(\.name) == ["Manual Mode", "Aperture Priority Mode"])
        #expect(controls["led_mode"]?.menuItems.map(\.name) == ["Off", "Flash", "Torch"])
        #expect(controls["white_balance_temperature"]?.flags == .inactive, "inactive while auto white balance is on")
        for control in controls.values {
            #expect(control.minimum <= control.defaultValue && control.defaultValue <= control.maximum, "\(control.name)")
        }
    }

    @Test func capabilitiesFollowFromTheControls() {
        let capabilities = VirtualCamera(index: 0).describe().capabilities
        #expect(capabilities.focusModes == [.locked, .autoFocus, .continuousAutoFocus])
        #expect(capabilities.isLensPositionSupported)
        #expect(capabilities.exposureModes == [.locked, .continuousAutoExposure, .custom])
        #expect(capabilities.whiteBalanceModes == [.locked, .continuousAutoWhiteBalance])
        #expect(capabilities.hasTorch && capabilities.torchModes == [.off, .on])
        #expect(capabilities.hasFlash)
        #expect(capabilities.isFocusPointOfInterestSupported && capabilities.isExposurePointOfInterestSupported)
        #expect(capabilities.minZoomFactor == 1 && capabilities.maxZoomFactor == 4)
    }
}

@Suite struct DeviceCapabilitiesTests {
    @Test func aDeviceWithoutControlsCanDoNothing() {
        let capabilities = DeviceCapabilities(controls: [], pointsOfInterest: false)
        #expect(capabilities.focusModes.isEmpty && capabilities.exposureModes.isEmpty)
        #expect(capabilities.whiteBalanceModes.isEmpty)
        #expect(!capabilities.hasTorch && !capabilities.hasFlash)
        #expect(capabilities.isoRange == nil && capabilities.exposureDurations == nil)
        #expect(capabilities.isDigitalZoom, "camerad crops")
    }

    @Test func anExposureMenuWithOnlyAutoGivesOnlyContinuous() {
        let control = CameraControl(id: .exposureAuto, displayName: "Auto Exposure", kind: .menu, minimum: 0, maximum: 0, step: 1,
                                    defaultValue: 0, value: 0, menuItems: [.init(index: 0, name: "Auto Mode", value: 0)])
        #expect(DeviceCapabilities(controls: [control], pointsOfInterest: false).exposureModes == [.continuousAutoExposure])
    }

    @Test func presetsNeedTheirExactSize() {
        let format = DeviceFormat(pixelFormat: .nv12, width: 1280, height: 720, name: "NV12", isCompressed: false,
                                  frameRateRanges: [])
        let presets = DeviceCapabilities.presets(for: [format])
        #expect(presets.contains(.hd1280x720))
        #expect(!presets.contains(.hd1920x1080) && !presets.contains(.vga640x480))
        #expect(presets.contains(.high) && presets.contains(.inputPriority))
        #expect(DeviceCapabilities.presets(for: []).isEmpty)
    }
}

@Suite struct ControlNamingTests {
    @Test(arguments: [
        ("Brightness", "brightness"),
        ("White Balance, Automatic", "white_balance_automatic"),
        ("Focus, Automatic Continuous", "focus_automatic_continuous"),
        ("LED Mode", "led_mode"),
        ("3A Lock", "3a_lock"),
        ("  Odd -- Name  ", "odd_name"),
    ])
    func namesFollowV4L2Ctl(display: String, name: String) {
        #expect(controlName(fromDisplayName: display) == name)
    }
}
