import CameraProtocol
internal import CCameraShims

/// What the AVFoundation-named settings can do on a device, derived from its
/// V4L2 controls (virtual cameras use the same control ids). A mode is reported
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
/// | zoom | `ZOOM_ABSOLUTE`: factor = value ÷ minimum (1 … maximum ÷ minimum) |
enum DeviceCapabilities {
    static func derive(from controls: [Camerad_V1_Control]) -> Camerad_V1_Capabilities {
        let byID = Dictionary(controls.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        func has(_ id: UInt32) -> Bool { byID[id] != nil }
        func menuHas(_ id: UInt32, _ entries: [Int64]) -> Bool {
            byID[id]?.menuItems.contains { entries.contains($0.index) } ?? false
        }

        var capabilities = Camerad_V1_Capabilities()
        if has(UInt32(V4L2_CID_FOCUS_AUTO)) || has(UInt32(V4L2_CID_FOCUS_ABSOLUTE)) {
            capabilities.focusModes.append(.locked)
        }
        if has(UInt32(V4L2_CID_AUTO_FOCUS_START)) { capabilities.focusModes.append(.autoFocus) }
        if has(UInt32(V4L2_CID_FOCUS_AUTO)) { capabilities.focusModes.append(.continuousAutoFocus) }
        capabilities.lensPositionSupported = has(UInt32(V4L2_CID_FOCUS_ABSOLUTE))

        let exposure = UInt32(V4L2_CID_EXPOSURE_AUTO)
        let manual = Int64(V4L2_EXPOSURE_MANUAL.rawValue)
        if menuHas(exposure, [manual]) { capabilities.exposureModes.append(.locked) }
        if menuHas(exposure, [Int64(V4L2_EXPOSURE_AUTO.rawValue), Int64(V4L2_EXPOSURE_APERTURE_PRIORITY.rawValue)]) {
            capabilities.exposureModes.append(.continuousAutoExposure)
        }
        if menuHas(exposure, [manual]) && has(UInt32(V4L2_CID_EXPOSURE_ABSOLUTE)) {
            capabilities.exposureModes.append(.custom)
        }

        if has(UInt32(V4L2_CID_AUTO_WHITE_BALANCE)) || has(UInt32(V4L2_CID_WHITE_BALANCE_TEMPERATURE)) {
            capabilities.whiteBalanceModes.append(.locked)
        }
        if has(UInt32(V4L2_CID_DO_WHITE_BALANCE)) { capabilities.whiteBalanceModes.append(.autoWhiteBalance) }
        if has(UInt32(V4L2_CID_AUTO_WHITE_BALANCE)) { capabilities.whiteBalanceModes.append(.continuousAutoWhiteBalance) }

        let ledMode = UInt32(V4L2_CID_FLASH_LED_MODE)
        if menuHas(ledMode, [Int64(V4L2_FLASH_LED_MODE_TORCH.rawValue)]) {
            capabilities.supportsTorch = true
            capabilities.torchModes = [.off, .on]
        }
        if menuHas(ledMode, [Int64(V4L2_FLASH_LED_MODE_FLASH.rawValue)]) && has(UInt32(V4L2_CID_FLASH_STROBE)) {
            capabilities.supportsFlash = true
            // camerad decides .auto from a frame's brightness.
            capabilities.flashModes = [.off, .on, .auto]
        }

        capabilities.minZoomFactor = 1
        capabilities.maxZoomFactor = 1
        if let zoom = byID[UInt32(V4L2_CID_ZOOM_ABSOLUTE)], zoom.minimum > 0, zoom.maximum > zoom.minimum {
            capabilities.maxZoomFactor = Double(zoom.maximum) / Double(zoom.minimum)
        }
        return capabilities
    }

    /// The session presets a device can serve from its formats.
    ///
    /// `.high`, `.medium`, `.low`, `.photo` and `.inputPriority` need any
    /// uncompressed-or-MJPEG format (the server scales); the fixed-size presets need
    /// a format of exactly that size.
    static func presets(for formats: [Camerad_V1_Format]) -> [Camerad_V1_SessionPreset] {
        guard !formats.isEmpty else { return [] }
        var presets: [Camerad_V1_SessionPreset] = [.high, .medium, .low, .photo, .inputPriority]
        let sizes = Set(formats.map { [$0.width, $0.height] })
        let fixed: [(Camerad_V1_SessionPreset, [UInt32])] = [
            (.vga640X480, [640, 480]), (.hd1280X720, [1280, 720]),
            (.hd1920X1080, [1920, 1080]), (.hd4K3840X2160, [3840, 2160]),
        ]
        for (preset, size) in fixed where sizes.contains(size) { presets.append(preset) }
        return presets
    }
}
