import CameraIPC

extension VirtualCamera {
    /// Takes the values as they are: ``ControlChange`` checked them. Buttons keep
    /// none. As on a UVC camera, a manual control is inactive while its automatic
    /// one is on.
    func setControls(_ changes: [ControlChange]) throws {
        state.withLock { state in
            let flash = FlashLEDMode.flash.rawValue
            let ledMode = changes.last { $0.control.id == .flashLEDMode }?.value
                ?? state.controls.first { $0.id == .flashLEDMode }?.value
            if changes.contains(where: { $0.control.id == .flashStrobe }) && ledMode == flash {
                state.strobeUntil = monotonicNanoseconds() + Self.strobeDuration
            }
            for change in changes where change.control.kind != .button {
                guard let index = state.controls.firstIndex(where: { $0.id == change.control.id }) else { continue }
                state.controls[index].value = change.value
            }
            func value(_ id: ControlID) -> Int64? { state.controls.first { $0.id == id }?.value }
            let inactive: [(ControlID, Bool)] = [
                (ControlID.focusAbsolute, value(ControlID.focusAuto) == 1),
                (ControlID.exposureAbsolute, value(ControlID.exposureAuto) != ExposureAutoMode.manual.rawValue),
                (ControlID.whiteBalanceTemperature, value(ControlID.autoWhiteBalance) == 1),
            ]
            for (id, isInactive) in inactive {
                guard let index = state.controls.firstIndex(where: { $0.id == id }) else { continue }
                if isInactive { state.controls[index].flags.insert(.inactive) } else { state.controls[index].flags.remove(.inactive) }
            }
        }
    }

    /// How long the emulated flash lights the picture after a strobe.
    static let strobeDuration: Int64 = 400_000_000

    /// A webcam's controls, in camerad's namespace, with the names, ranges and
    /// menus a UVC camera would report, plus a flash LED with a torch.
    static func defaultControls() -> [CameraControl] {
        let inactive = ControlFlags.inactive
        let button: ControlFlags = [.writeOnly, .executeOnWrite]
        return [
            control(.brightness, "Brightness", .integer, 0...255, default: 128),
            control(.contrast, "Contrast", .integer, 0...255, default: 128),
            control(.saturation, "Saturation", .integer, 0...255, default: 128),
            control(.autoWhiteBalance, "White Balance, Automatic", .boolean, 0...1, default: 1),
            control(.gain, "Gain", .integer, 0...255, default: 0),
            control(.horizontalFlip, "Horizontal Flip", .boolean, 0...1, default: 0),
            control(.verticalFlip, "Vertical Flip", .boolean, 0...1, default: 0),
            control(.powerLineFrequency, "Power Line Frequency", .menu, 0...2, default: 1,
                    menu: [(0, "Disabled"), (1, "50 Hz"), (2, "60 Hz")]),
            control(.whiteBalanceTemperature, "White Balance Temperature", .integer, 2800...6500,
                    step: 10, default: 4600, flags: inactive),
            control(.exposureAuto, "Auto Exposure", .menu, 0...3, default: 3,
                    menu: [(1, "Manual Mode"), (3, "Aperture Priority Mode")]),
            control(.exposureAbsolute, "Exposure Time, Absolute", .integer, 3...2047,
                    default: 250, flags: inactive),
            control(.focusAbsolute, "Focus, Absolute", .integer, 0...1023, default: 0, flags: inactive),
            control(.focusAuto, "Focus, Automatic Continuous", .boolean, 0...1, default: 1),
            control(.autoFocusStart, "Auto Focus, Start", .button, 0...0, step: 0, default: 0, flags: button),
            control(.zoomAbsolute, "Zoom, Absolute", .integer, 100...400, default: 100),
            control(.flashLEDMode, "LED Mode", .menu, 0...2, default: 0,
                    menu: [(0, "Off"), (1, "Flash"), (2, "Torch")]),
            control(.flashTorchIntensity, "Torch Intensity", .integer, 1...100, default: 100),
            control(.flashStrobe, "Strobe", .button, 0...0, step: 0, default: 0, flags: button),
        ]
    }

    private static func control(
        _ id: ControlID, _ displayName: String, _ kind: CameraControl.Kind, _ range: ClosedRange<Int64>,
        step: UInt64 = 1, default defaultValue: Int64, flags: ControlFlags = [], menu: [(Int64, String)] = []
    ) -> CameraControl {
        CameraControl(id: id, displayName: displayName, kind: kind, minimum: range.lowerBound, maximum: range.upperBound,
                      step: step, defaultValue: defaultValue, value: defaultValue,
                      menuItems: menu.map { CameraControl.MenuItem(index: $0.0, name: $0.1, value: 0) }, flags: flags)
    }
}
