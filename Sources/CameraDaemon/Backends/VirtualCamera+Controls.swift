import CameraProtocol
internal import CCameraShims

extension VirtualCamera {
    /// Takes the values as they are: ``ControlChange`` checked them. Buttons keep
    /// none. As on a UVC camera, a manual control is inactive while its automatic
    /// one is on.
    func setControls(_ changes: [ControlChange]) throws {
        state.withLock { state in
            let flash = Int64(V4L2_FLASH_LED_MODE_FLASH.rawValue)
            let ledMode = changes.last { $0.control.id == UInt32(V4L2_CID_FLASH_LED_MODE) }?.value
                ?? state.controls.first { $0.id == UInt32(V4L2_CID_FLASH_LED_MODE) }?.value
            if changes.contains(where: { $0.control.id == UInt32(V4L2_CID_FLASH_STROBE) }) && ledMode == flash {
                state.strobeUntil = monotonicNanoseconds() + Self.strobeDuration
            }
            for change in changes where change.control.type != .button {
                guard let index = state.controls.firstIndex(where: { $0.id == change.control.id }) else { continue }
                state.controls[index].value = change.value
            }
            func value(_ id: Int32) -> Int64? { state.controls.first { $0.id == UInt32(id) }?.value }
            let inactive: [(Int32, Bool)] = [
                (V4L2_CID_FOCUS_ABSOLUTE, value(V4L2_CID_FOCUS_AUTO) == 1),
                (V4L2_CID_EXPOSURE_ABSOLUTE, value(V4L2_CID_EXPOSURE_AUTO) != Int64(V4L2_EXPOSURE_MANUAL.rawValue)),
                (V4L2_CID_WHITE_BALANCE_TEMPERATURE, value(V4L2_CID_AUTO_WHITE_BALANCE) == 1),
            ]
            for (id, isInactive) in inactive {
                guard let index = state.controls.firstIndex(where: { $0.id == UInt32(id) }) else { continue }
                let flag = UInt32(V4L2_CTRL_FLAG_INACTIVE)
                state.controls[index].flags = isInactive ? state.controls[index].flags | flag : state.controls[index].flags & ~flag
            }
        }
    }

    /// How long the emulated flash lights the picture after a strobe.
    static let strobeDuration: Int64 = 400_000_000

    /// A webcam's controls, with the V4L2 ids, names, ranges and menus a UVC
    /// camera would report, plus a flash LED with a torch.
    static func defaultControls() -> [Camerad_V1_Control] {
        let inactive = UInt32(V4L2_CTRL_FLAG_INACTIVE)
        let button = UInt32(V4L2_CTRL_FLAG_WRITE_ONLY) | UInt32(V4L2_CTRL_FLAG_EXECUTE_ON_WRITE)
        return [
            control(V4L2_CID_BRIGHTNESS, "Brightness", .integer, 0...255, default: 128),
            control(V4L2_CID_CONTRAST, "Contrast", .integer, 0...255, default: 128),
            control(V4L2_CID_SATURATION, "Saturation", .integer, 0...255, default: 128),
            control(V4L2_CID_AUTO_WHITE_BALANCE, "White Balance, Automatic", .boolean, 0...1, default: 1),
            control(V4L2_CID_GAIN, "Gain", .integer, 0...255, default: 0),
            control(V4L2_CID_HFLIP, "Horizontal Flip", .boolean, 0...1, default: 0),
            control(V4L2_CID_VFLIP, "Vertical Flip", .boolean, 0...1, default: 0),
            control(V4L2_CID_POWER_LINE_FREQUENCY, "Power Line Frequency", .menu, 0...2, default: 1,
                    menu: [(0, "Disabled"), (1, "50 Hz"), (2, "60 Hz")]),
            control(V4L2_CID_WHITE_BALANCE_TEMPERATURE, "White Balance Temperature", .integer, 2800...6500,
                    step: 10, default: 4600, flags: inactive),
            control(V4L2_CID_EXPOSURE_AUTO, "Auto Exposure", .menu, 0...3, default: 3,
                    menu: [(1, "Manual Mode"), (3, "Aperture Priority Mode")]),
            control(V4L2_CID_EXPOSURE_ABSOLUTE, "Exposure Time, Absolute", .integer, 3...2047,
                    default: 250, flags: inactive),
            control(V4L2_CID_FOCUS_ABSOLUTE, "Focus, Absolute", .integer, 0...1023, default: 0, flags: inactive),
            control(V4L2_CID_FOCUS_AUTO, "Focus, Automatic Continuous", .boolean, 0...1, default: 1),
            control(V4L2_CID_AUTO_FOCUS_START, "Auto Focus, Start", .button, 0...0, step: 0, default: 0, flags: button),
            control(V4L2_CID_ZOOM_ABSOLUTE, "Zoom, Absolute", .integer, 100...400, default: 100),
            control(V4L2_CID_FLASH_LED_MODE, "LED Mode", .menu, 0...2, default: 0,
                    menu: [(0, "Off"), (1, "Flash"), (2, "Torch")]),
            control(V4L2_CID_FLASH_TORCH_INTENSITY, "Torch Intensity", .integer, 1...100, default: 100),
            control(V4L2_CID_FLASH_STROBE, "Strobe", .button, 0...0, step: 0, default: 0, flags: button),
        ]
    }

    private static func control(
        _ id: Int32, _ displayName: String, _ type: Camerad_V1_ControlType, _ range: ClosedRange<Int64>,
        step: UInt64 = 1, default defaultValue: Int64, flags: UInt32 = 0, menu: [(Int64, String)] = []
    ) -> Camerad_V1_Control {
        var control = Camerad_V1_Control()
        control.id = UInt32(id)
        control.displayName = displayName
        control.name = controlName(fromDisplayName: displayName)
        control.type = type
        control.minimum = range.lowerBound
        control.maximum = range.upperBound
        control.step = step
        control.defaultValue = defaultValue
        control.value = defaultValue
        control.flags = flags
        control.menuItems = menu.map { index, name in
            var item = Camerad_V1_MenuItem()
            item.index = index
            item.name = name
            return item
        }
        return control
    }
}
