/// What the AVFoundation-named settings can do on a device, derived from its
/// controls in camerad's namespace (``ControlID``). A mode is reported
/// only when the controls can really do it.
///
/// | mode | needs |
/// |---|---|
/// | focus `.continuousAutoFocus` | `FOCUS_AUTO` |
/// | focus `.locked` | `FOCUS_AUTO` (turned off) or `FOCUS_ABSOLUTE` |
/// | focus `.autoFocus` | `AUTO_FOCUS_START` |
/// | exposure `.continuousAutoExposure` | `EXPOSURE_AUTO` with an auto or aperture-priority entry |
/// | exposure `.locked` | `EXPOSURE_AUTO` with a manual entry |
/// | exposure `.custom` | a manual entry and `EXPOSURE_ABSOLUTE` |
/// | white balance `.continuousAutoWhiteBalance` | `AUTO_WHITE_BALANCE` |
/// | white balance `.locked` | `AUTO_WHITE_BALANCE` (turned off) or `WHITE_BALANCE_TEMPERATURE` |
/// | white balance `.autoWhiteBalance` | `DO_WHITE_BALANCE` |
/// | torch | `FLASH_LED_MODE` with a torch entry |
/// | flash (.off .on, and .auto decided by camerad) | `FLASH_LED_MODE` with a flash entry, and `FLASH_STROBE` |
/// | zoom | `ZOOM_ABSOLUTE`: factor = value ÷ minimum (1 … maximum ÷ minimum); else camerad crops, up to ``CameraSettingsMapping/digitalZoomLimit`` |
/// | custom exposure durations | `EXPOSURE_ABSOLUTE`'s range, in 100 µs |
/// | ISO | `ISO_SENSITIVITY`'s entries, else `GAIN` read as 100…1600 |
/// | white-balance temperatures | `WHITE_BALANCE_TEMPERATURE`'s range |
extension DeviceCapabilities {
    /// - Parameter pointsOfInterest: whether the backend honours points of
    ///   interest (no V4L2 control does).
    init(controls: [CameraControl], pointsOfInterest: Bool) {
        self.init()
        let byID = controls.byID
        func has(_ id: ControlID) -> Bool { byID[id] != nil }
        func menuHas(_ id: ControlID, _ entries: [Int64]) -> Bool {
            byID[id]?.menuItems.contains { entries.contains($0.index) } ?? false
        }

        if has(.focusAuto) || has(.focusAbsolute) {
            focusModes.append(.locked)
        }
        if has(.autoFocusStart) { focusModes.append(.autoFocus) }
        if has(.focusAuto) { focusModes.append(.continuousAutoFocus) }
        isLensPositionSupported = has(.focusAbsolute)

        let exposure = ControlID.exposureAuto
        let manual = ExposureAutoMode.manual.rawValue
        if menuHas(exposure, [manual]) { exposureModes.append(.locked) }
        if menuHas(exposure, [ExposureAutoMode.auto.rawValue, ExposureAutoMode.aperturePriority.rawValue]) {
            exposureModes.append(.continuousAutoExposure)
        }
        if menuHas(exposure, [manual]) && has(.exposureAbsolute) {
            exposureModes.append(.custom)
        }

        if has(.autoWhiteBalance) || has(.whiteBalanceTemperature) {
            whiteBalanceModes.append(.locked)
        }
        if has(.doWhiteBalance) { whiteBalanceModes.append(.autoWhiteBalance) }
        if has(.autoWhiteBalance) { whiteBalanceModes.append(.continuousAutoWhiteBalance) }

        let ledMode = ControlID.flashLEDMode
        if menuHas(ledMode, [FlashLEDMode.torch.rawValue]) {
            torchModes = [.off, .on]
        }
        if menuHas(ledMode, [FlashLEDMode.flash.rawValue]) && has(.flashStrobe) {
            // camerad decides .auto from a frame's brightness.
            flashModes = [.off, .on, .auto]
        }

        if let zoom = byID[.zoomAbsolute] {
            if zoom.minimum > 0, zoom.maximum > zoom.minimum {
                maxZoomFactor = Double(zoom.maximum) / Double(zoom.minimum)
            }
        } else {
            isDigitalZoom = true
            maxZoomFactor = CameraSettingsMapping.digitalZoomLimit
        }

        let units = CameraSettingsMapping.exposureUnit
        if let time = byID[.exposureAbsolute] {
            let shortest = max(1, time.minimum)
            exposureDurations = units * shortest ... units * max(shortest, time.maximum)
        }
        if let sensitivity = byID[.isoSensitivity], !sensitivity.menuItems.isEmpty {
            let values = sensitivity.menuItems.map { Float($0.value) }
            isoRange = values.min()! ... values.max()!
        } else if byID[.gain] != nil {
            isoRange = CameraSettingsMapping.gainISOFloor ... CameraSettingsMapping.gainISOCeiling
        }
        if let temperature = byID[.whiteBalanceTemperature] {
            whiteBalanceTemperatures = Float(temperature.minimum) ... Float(max(temperature.minimum, temperature.maximum))
        }
        isFocusPointOfInterestSupported = pointsOfInterest
        isExposurePointOfInterestSupported = pointsOfInterest
    }

    /// The session presets a device can serve from its formats.
    ///
    /// `.high`, `.medium`, `.low`, `.photo` and `.inputPriority` need any
    /// uncompressed-or-MJPEG format (the server scales); the fixed-size presets need
    /// a format of exactly that size.
    static func presets(for formats: [DeviceFormat]) -> [SessionPreset] {
        guard !formats.isEmpty else { return [] }
        var presets: [SessionPreset] = [.high, .medium, .low, .photo, .inputPriority]
        let sizes = Set(formats.map { [$0.width, $0.height] })
        let fixed: [(SessionPreset, [UInt32])] = [
            (.vga640x480, [640, 480]), (.hd1280x720, [1280, 720]),
            (.hd1920x1080, [1920, 1080]), (.hd4K3840x2160, [3840, 2160]),
        ]
        for (preset, size) in fixed where sizes.contains(size) { presets.append(preset) }
        return presets
    }
}
