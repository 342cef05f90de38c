import CameraIPC
import Foundation
import Synchronization

/// The AVFoundation-named settings (focus, exposure, white balance, torch, zoom)
/// in terms of controls in camerad's namespace (``ControlID``), both ways. Every
/// backend offers its controls in that namespace, so one mapping serves them
/// all; a setting the controls cannot do is unsupported, never faked.
///
/// | setting | controls |
/// |---|---|
/// | focus `.continuousAutoFocus` / `.locked` | `FOCUS_AUTO` 1 / 0 |
/// | focus `.autoFocus` | `FOCUS_AUTO` 0, then `AUTO_FOCUS_START` pressed; reads back `.locked` |
/// | lens position 0…1 | `FOCUS_ABSOLUTE` from its minimum to its maximum (and `FOCUS_AUTO` 0) |
/// | exposure `.continuousAutoExposure` | `EXPOSURE_AUTO` auto, else aperture priority |
/// | exposure `.locked` / `.custom` | `EXPOSURE_AUTO` manual |
/// | exposure duration | `EXPOSURE_ABSOLUTE`, in 100 µs |
/// | ISO | `ISO_SENSITIVITY` (and its auto control off), else `GAIN` mapped onto 100…1600 |
/// | white balance `.continuousAutoWhiteBalance` / `.locked` | `AUTO_WHITE_BALANCE` 1 / 0 |
/// | white balance `.autoWhiteBalance` | `AUTO_WHITE_BALANCE` 0, then `DO_WHITE_BALANCE` pressed |
/// | temperature (kelvin) | `WHITE_BALANCE_TEMPERATURE` (and `AUTO_WHITE_BALANCE` 0) |
/// | torch `.on` / `.off`, level 0…1 | `FLASH_LED_MODE` torch / none, `FLASH_TORCH_INTENSITY` up to its maximum |
/// | `videoZoomFactor` | `ZOOM_ABSOLUTE` = factor × its minimum |
///
/// V4L2 cannot tell a manual exposure set by `.locked` from one set by
/// `.custom`: camerad remembers which was asked (``CameraSettingsState``).
enum CameraSettingsMapping {
    /// ISO when a device has only GAIN: its minimum reads as this…
    static let gainISOFloor: Float = 100
    /// …and its maximum as this.
    static let gainISOCeiling: Float = 1600
    /// EXPOSURE_ABSOLUTE counts in these.
    static let exposureUnit = Duration.microseconds(100)
    /// The largest zoom camerad's crop gives a device without a zoom control.
    static let digitalZoomLimit: Double = 4

    // MARK: - Reading

    /// The settings as the controls have them now.
    static func settings(from controls: [CameraControl], state: CameraSettingsState) -> CameraSettings {
        let byID = controls.byID
        let extras = state.snapshot()
        var settings = CameraSettings()

        if let auto = byID[.focusAuto] {
            settings.focusMode = auto.value != 0 ? .continuousAutoFocus : .locked
        } else if byID[.focusAbsolute] != nil {
            settings.focusMode = .locked
        }
        settings.lensPosition = byID[.focusAbsolute].map(normalized)
        if let status = byID[.autoFocusStatus] {
            settings.isAdjustingFocus = status.value & ControlID.autoFocusStatusBusy != 0
        }

        if let auto = byID[.exposureAuto] {
            settings.exposureMode = auto.value == ExposureAutoMode.manual.rawValue
                ? extras.manualExposure : .continuousAutoExposure
        }
        settings.exposureDuration = byID[.exposureAbsolute].map { exposureUnit * $0.value }
        settings.iso = iso(byID)

        if let auto = byID[.autoWhiteBalance] {
            settings.whiteBalanceMode = auto.value != 0 ? .continuousAutoWhiteBalance : .locked
        } else if byID[.whiteBalanceTemperature] != nil {
            settings.whiteBalanceMode = .locked
        }
        settings.whiteBalanceTemperature = byID[.whiteBalanceTemperature].map { Float($0.value) }

        if let led = byID[.flashLEDMode], hasEntry(led, FlashLEDMode.torch.rawValue) {
            let on = led.value == FlashLEDMode.torch.rawValue
            settings.torchMode = on ? .on : .off
            if on {
                settings.torchLevel = byID[.flashTorchIntensity]
                    .map { Float($0.value) / Float(max(1, $0.maximum)) } ?? 1
            }
        }
        settings.videoZoomFactor = byID[.zoomAbsolute]
            .map { $0.minimum > 0 ? Double($0.value) / Double($0.minimum) : 1 } ?? extras.digitalZoom

        settings.focusPointOfInterest = extras.focusPointOfInterest
        settings.exposurePointOfInterest = extras.exposurePointOfInterest
        let now = monotonicNanoseconds()
        settings.isAdjustingFocus = settings.isAdjustingFocus || extras.adjustingFocusUntil > now
        settings.isAdjustingExposure = extras.adjustingExposureUntil > now
        settings.isAdjustingWhiteBalance = extras.adjustingWhiteBalanceUntil > now
        return settings
    }

    // MARK: - Writing

    /// What a configuration asks of the device: the control changes, in order,
    /// and what camerad keeps beside the controls.
    struct Plan {
        var controls: [ControlValue] = []
        var manualExposure: ExposureMode?
        var focusPointOfInterest: NormalizedPoint?
        var exposurePointOfInterest: NormalizedPoint?
        /// camerad's crop, for a device without a zoom control.
        var digitalZoom: Double?
        var adjustsFocus = false
        var adjustsExposure = false
        var adjustsWhiteBalance = false

        var adjusts: Bool { adjustsFocus || adjustsExposure || adjustsWhiteBalance }
    }

    /// The control values that carry out a configuration's AVFoundation-named settings.
    ///
    /// The torch may be lit on an idle device, as iOS lights it with no
    /// session running; it is the lighting client's (``ConfigurationClaims``).
    ///
    /// - Throws: `UNSUPPORTED` for a mode or setting the device lacks, `INVALID_ARGUMENT`
    ///   for a value out of range.
    static func plan(
        _ configuration: DeviceConfiguration, controls: [CameraControl], capabilities: DeviceCapabilities,
        of name: String
    ) throws -> Plan {
        let byID = controls.byID
        var plan = Plan()
        func set(_ id: ControlID, _ value: Int64) {
            plan.controls.append(ControlValue(id, value))
        }
        func setIfPresent(_ id: ControlID, _ value: Int64) {
            if byID[id] != nil { set(id, value) }
        }
        func require<Mode: Equatable>(_ mode: Mode, in modes: [Mode], _ what: String) throws {
            guard modes.contains(mode) else {
                let names = modes.map { "\($0)" }.joined(separator: ", ")
                throw CameraError(.unsupported,
                                  "\(name) has no \(what) mode \(mode); it supports \(names.isEmpty ? "none" : names)")
            }
        }

        /// Focus and white balance alike: a continuous mode is the automatic
        /// control on; a one-shot one is it off and its button pressed; locked is it off.
        enum Automatic { case continuous, oneShot, locked }
        func automatic(_ control: ControlID, button: ControlID, _ mode: Automatic) {
            switch mode {
            case .continuous: set(control, 1)
            case .oneShot:
                setIfPresent(control, 0)
                set(button, 1)
            case .locked: setIfPresent(control, 0)
            }
        }

        // Focus.
        if let focusMode = configuration.focusMode {
            try require(focusMode, in: capabilities.focusModes, "focus")
            let mode: Automatic = switch focusMode {
            case .continuousAutoFocus: .continuous
            case .autoFocus: .oneShot
            default: .locked
            }
            automatic(.focusAuto, button: .autoFocusStart, mode)
            plan.adjustsFocus = mode != .locked
        }
        if let position = configuration.lensPosition {
            guard let control = byID[.focusAbsolute] else {
                throw CameraError(.unsupported, "\(name) cannot set a lens position (no focus_absolute control)")
            }
            guard (0...1).contains(position) else {
                throw CameraError(.invalidArgument, "lens position must be 0 to 1, not \(position)")
            }
            if configuration.focusMode == nil { setIfPresent(.focusAuto, 0) }
            set(.focusAbsolute, scaled(Double(position), onto: control))
        }
        if let point = configuration.focusPointOfInterest {
            guard capabilities.isFocusPointOfInterestSupported else {
                throw CameraError(.unsupported, "\(name) has no focus point of interest")
            }
            plan.focusPointOfInterest = try checked(point, "focus point of interest")
        }

        // Exposure.
        let custom = configuration.exposureDuration != nil || configuration.iso != nil
        if let exposureMode = configuration.exposureMode ?? (custom ? .custom : nil) {
            try require(exposureMode, in: capabilities.exposureModes, "exposure")
            let auto = byID[.exposureAuto]
            switch exposureMode {
            case .continuousAutoExposure:
                let automatic = auto.map { hasEntry($0, ExposureAutoMode.auto.rawValue) } ?? false
                set(.exposureAuto, (automatic ? ExposureAutoMode.auto : .aperturePriority).rawValue)
                plan.adjustsExposure = true
            default:
                set(.exposureAuto, ExposureAutoMode.manual.rawValue)
                plan.manualExposure = exposureMode
            }
        }
        if let duration = configuration.exposureDuration {
            guard let control = byID[.exposureAbsolute] else {
                throw CameraError(.unsupported, "\(name) cannot set an exposure duration (no exposure_time_absolute control)")
            }
            let units = Int64((duration / exposureUnit).rounded())
            guard (control.minimum...control.maximum).contains(units) else {
                throw CameraError(.invalidArgument,
                                  "exposure duration \(duration.seconds) s is outside \(name)'s \((exposureUnit * control.minimum).seconds) to \((exposureUnit * control.maximum).seconds) s")
            }
            set(.exposureAbsolute, units)
        }
        if let iso = configuration.iso {
            guard let range = capabilities.isoRange else {
                throw CameraError(.unsupported, "\(name) cannot set ISO (no iso_sensitivity or gain control)")
            }
            guard range.contains(iso) else {
                throw CameraError(.invalidArgument, "ISO \(iso) is outside \(name)'s \(range.lowerBound) to \(range.upperBound)")
            }
            if let sensitivity = byID[.isoSensitivity], !sensitivity.menuItems.isEmpty {
                setIfPresent(.isoSensitivityAuto, ControlID.isoSensitivityManual)
                let nearest = sensitivity.menuItems.min { abs(Float($0.value) - iso) < abs(Float($1.value) - iso) }!
                set(.isoSensitivity, nearest.index)
            } else if let gain = byID[.gain] {
                let fraction = Double((iso - gainISOFloor) / (gainISOCeiling - gainISOFloor))
                set(.gain, scaled(fraction, onto: gain))
            }
        }
        if let point = configuration.exposurePointOfInterest {
            guard capabilities.isExposurePointOfInterestSupported else {
                throw CameraError(.unsupported, "\(name) has no exposure point of interest")
            }
            plan.exposurePointOfInterest = try checked(point, "exposure point of interest")
        }

        // White balance.
        if let whiteBalanceMode = configuration.whiteBalanceMode {
            try require(whiteBalanceMode, in: capabilities.whiteBalanceModes, "white balance")
            let mode: Automatic = switch whiteBalanceMode {
            case .continuousAutoWhiteBalance: .continuous
            case .autoWhiteBalance: .oneShot
            default: .locked
            }
            automatic(.autoWhiteBalance, button: .doWhiteBalance, mode)
            plan.adjustsWhiteBalance = mode != .locked
        }
        if let asked = configuration.whiteBalanceTemperature {
            guard let control = byID[.whiteBalanceTemperature] else {
                throw CameraError(.unsupported, "\(name) cannot set a white balance temperature (no white_balance_temperature control)")
            }
            guard asked.isFinite, (Float(control.minimum)...Float(control.maximum)).contains(asked.rounded()) else {
                throw CameraError(.invalidArgument,
                                  "white balance temperature \(asked) K is outside \(name)'s \(control.minimum) to \(control.maximum) K")
            }
            let kelvin = Int64(asked.rounded())
            if configuration.whiteBalanceMode == nil { setIfPresent(.autoWhiteBalance, 0) }
            let step = Int64(clamping: max(1, control.step))
            set(.whiteBalanceTemperature, control.minimum + (kelvin - control.minimum) / step * step)
        }

        // Torch.
        if let level = configuration.torchLevel {
            guard level > 0 && level <= 1 else {
                throw CameraError(.invalidArgument, "torch level must be above 0 and at most 1, not \(level)")
            }
        }
        if let torchMode = configuration.torchMode ?? (configuration.torchLevel != nil ? .on : nil) {
            try require(torchMode, in: capabilities.torchModes, "torch")
            set(.flashLEDMode, (torchMode == .on ? FlashLEDMode.torch : .none).rawValue)
        }
        if let level = configuration.torchLevel, let intensity = byID[.flashTorchIntensity] {
            let value = Int64((Double(level) * Double(intensity.maximum)).rounded())
            set(.flashTorchIntensity, min(intensity.maximum, max(intensity.minimum, value)))
        }

        // Zoom.
        if let factor = configuration.videoZoomFactor {
            guard factor >= capabilities.minZoomFactor && factor <= capabilities.maxZoomFactor else {
                throw CameraError(.invalidArgument,
                                  "zoom factor \(factor) is outside \(name)'s \(capabilities.minZoomFactor) to \(capabilities.maxZoomFactor)")
            }
            if let zoom = byID[.zoomAbsolute] {
                set(.zoomAbsolute, min(zoom.maximum, Int64((factor * Double(zoom.minimum)).rounded())))
            } else {
                plan.digitalZoom = factor
            }
        }
        return plan
    }

    /// The torch's control values to turn it off, if it is on.
    static func torchOff(_ controls: [CameraControl]) -> [ControlValue] {
        guard let led = controls.first(where: { $0.id == .flashLEDMode }),
              led.value == FlashLEDMode.torch.rawValue
        else { return [] }
        return [ControlValue(.flashLEDMode, FlashLEDMode.none.rawValue)]
    }

    // MARK: - Helpers

    private static func hasEntry(_ control: CameraControl, _ entry: Int64) -> Bool {
        control.menuItems.contains { $0.index == entry }
    }

    /// A control's value as 0…1 of its range.
    private static func normalized(_ control: CameraControl) -> Float {
        control.maximum > control.minimum
            ? Float(control.value - control.minimum) / Float(control.maximum - control.minimum) : 0
    }

    /// 0…1 onto a control's range, on its steps and inside it.
    private static func scaled(_ fraction: Double, onto control: CameraControl) -> Int64 {
        let step = Int64(clamping: max(1, control.step))
        let raw = Double(control.minimum) + fraction * Double(control.maximum - control.minimum)
        let stepped = control.minimum + Int64(((raw - Double(control.minimum)) / Double(step)).rounded()) * step
        return min(control.maximum, max(control.minimum, stepped))
    }

    private static func iso(_ byID: [ControlID: CameraControl]) -> Float? {
        if let sensitivity = byID[.isoSensitivity],
           let item = sensitivity.menuItems.first(where: { $0.index == sensitivity.value }) {
            return Float(item.value)
        }
        guard let gain = byID[.gain] else { return nil }
        return gainISOFloor + normalized(gain) * (gainISOCeiling - gainISOFloor)
    }

    private static func checked(_ point: NormalizedPoint, _ what: String) throws -> NormalizedPoint {
        guard (0...1).contains(point.x), (0...1).contains(point.y) else {
            throw CameraError(.invalidArgument, "\(what) (\(point.x), \(point.y)) is outside the frame; use 0 to 1 each way")
        }
        return point
    }
}

/// What camerad keeps of a device's AVFoundation-named settings beside its
/// controls: points of interest, which manual exposure was asked for, and
/// until when an automatic mode is still settling.
final class CameraSettingsState: Sendable {
    struct Values: Sendable {
        var manualExposure: ExposureMode = .locked
        var focusPointOfInterest: NormalizedPoint?
        var exposurePointOfInterest: NormalizedPoint?
        var digitalZoom: Double = 1
        var adjustingFocusUntil: Int64 = 0
        var adjustingExposureUntil: Int64 = 0
        var adjustingWhiteBalanceUntil: Int64 = 0
    }

    private let values = OrderedMutex(.cameraState, Values())

    /// Whether the backend honours points of interest (virtual cameras); V4L2 has no such control.
    let supportsPointsOfInterest: Bool
    /// How long an automatic mode reports itself adjusting after it is set;
    /// zero where the device reports it (V4L2's AUTO_FOCUS_STATUS) or cannot.
    let settling: Duration

    init(supportsPointsOfInterest: Bool, settling: Duration) {
        self.supportsPointsOfInterest = supportsPointsOfInterest
        self.settling = settling
    }

    func snapshot() -> Values { values.withLock { $0 } }

    /// camerad's crop for a device without a zoom control (1: none).
    var digitalZoom: Double { values.withLock { $0.digitalZoom } }

    /// Keeps what a plan sets beside the controls.
    func apply(_ plan: CameraSettingsMapping.Plan) {
        let until = monotonicNanoseconds() + settling.nanoseconds
        values.withLock { values in
            if let mode = plan.manualExposure { values.manualExposure = mode }
            if let point = plan.focusPointOfInterest { values.focusPointOfInterest = point }
            if let point = plan.exposurePointOfInterest { values.exposurePointOfInterest = point }
            if let zoom = plan.digitalZoom { values.digitalZoom = zoom }
            if plan.adjustsFocus { values.adjustingFocusUntil = until }
            if plan.adjustsExposure { values.adjustingExposureUntil = until }
            if plan.adjustsWhiteBalance { values.adjustingWhiteBalanceUntil = until }
        }
    }
}
