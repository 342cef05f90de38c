@testable import CameraDaemon
import CV4L2
import Testing

/// camerad numbers its controls as V4L2 does, so the V4L2 backend passes a
/// driver's controls through and the wire has one id per control.
@Suite struct ControlNamespaceTests {
    static let kernel: [String: Int32] = [
        "brightness": V4L2_CID_BRIGHTNESS, "contrast": V4L2_CID_CONTRAST, "saturation": V4L2_CID_SATURATION,
        "autoWhiteBalance": V4L2_CID_AUTO_WHITE_BALANCE, "doWhiteBalance": V4L2_CID_DO_WHITE_BALANCE,
        "gain": V4L2_CID_GAIN, "horizontalFlip": V4L2_CID_HFLIP, "verticalFlip": V4L2_CID_VFLIP,
        "powerLineFrequency": V4L2_CID_POWER_LINE_FREQUENCY,
        "whiteBalanceTemperature": V4L2_CID_WHITE_BALANCE_TEMPERATURE, "exposureAuto": V4L2_CID_EXPOSURE_AUTO,
        "exposureAbsolute": V4L2_CID_EXPOSURE_ABSOLUTE, "focusAbsolute": V4L2_CID_FOCUS_ABSOLUTE,
        "focusAuto": V4L2_CID_FOCUS_AUTO, "zoomAbsolute": V4L2_CID_ZOOM_ABSOLUTE,
        "isoSensitivity": V4L2_CID_ISO_SENSITIVITY, "isoSensitivityAuto": V4L2_CID_ISO_SENSITIVITY_AUTO,
        "autoFocusStart": V4L2_CID_AUTO_FOCUS_START, "autoFocusStatus": V4L2_CID_AUTO_FOCUS_STATUS,
        "flashLEDMode": V4L2_CID_FLASH_LED_MODE, "flashStrobe": V4L2_CID_FLASH_STROBE,
        "flashTorchIntensity": V4L2_CID_FLASH_TORCH_INTENSITY,
    ]

    @Test func everyNamedControlHasV4L2sNumber() {
        #expect(ControlID.named.count == Self.kernel.count)
        #expect(Set(ControlID.named.map(\.id)).count == ControlID.named.count, "no two names share an id")
        for (name, id) in ControlID.named {
            #expect(Self.kernel[name].map(UInt32.init) == id.rawValue, "\(name)")
        }
    }

    @Test func menuEntriesBitsAndFlagsAreV4L2s() {
        #expect(ExposureAutoMode.auto.rawValue == Int64(V4L2_EXPOSURE_AUTO.rawValue))
        #expect(ExposureAutoMode.manual.rawValue == Int64(V4L2_EXPOSURE_MANUAL.rawValue))
        #expect(ExposureAutoMode.shutterPriority.rawValue == Int64(V4L2_EXPOSURE_SHUTTER_PRIORITY.rawValue))
        #expect(ExposureAutoMode.aperturePriority.rawValue == Int64(V4L2_EXPOSURE_APERTURE_PRIORITY.rawValue))
        #expect(FlashLEDMode.none.rawValue == Int64(V4L2_FLASH_LED_MODE_NONE.rawValue))
        #expect(FlashLEDMode.flash.rawValue == Int64(V4L2_FLASH_LED_MODE_FLASH.rawValue))
        #expect(FlashLEDMode.torch.rawValue == Int64(V4L2_FLASH_LED_MODE_TORCH.rawValue))
        #expect(ControlID.autoFocusStatusBusy == Int64(V4L2_AUTO_FOCUS_STATUS_BUSY))
        #expect(ControlID.isoSensitivityManual == Int64(V4L2_ISO_SENSITIVITY_MANUAL.rawValue))
        #expect(ControlFlags.disabled.rawValue == UInt32(V4L2_CTRL_FLAG_DISABLED))
        #expect(ControlFlags.readOnly.rawValue == UInt32(V4L2_CTRL_FLAG_READ_ONLY))
        #expect(ControlFlags.inactive.rawValue == UInt32(V4L2_CTRL_FLAG_INACTIVE))
        #expect(ControlFlags.writeOnly.rawValue == UInt32(V4L2_CTRL_FLAG_WRITE_ONLY))
        #expect(ControlFlags.executeOnWrite.rawValue == UInt32(V4L2_CTRL_FLAG_EXECUTE_ON_WRITE))
    }

    @Test func controlKindsAreV4L2sTypes() {
        let kinds: [(CameraControl.Kind, v4l2_ctrl_type)] = [
            (.integer, V4L2_CTRL_TYPE_INTEGER), (.boolean, V4L2_CTRL_TYPE_BOOLEAN), (.menu, V4L2_CTRL_TYPE_MENU),
            (.button, V4L2_CTRL_TYPE_BUTTON), (.integer64, V4L2_CTRL_TYPE_INTEGER64), (.bitmask, V4L2_CTRL_TYPE_BITMASK),
            (.integerMenu, V4L2_CTRL_TYPE_INTEGER_MENU),
        ]
        for (kind, type) in kinds { #expect(kind.rawValue == type.rawValue, "\(kind)") }
    }
}
