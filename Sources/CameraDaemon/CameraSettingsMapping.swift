import CameraProtocol
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
    /// EXPOSURE_ABSOLUTE counts in these fractions of a second (100 µs).
    static let exposureUnitsPerSecond: UInt32 = 10_000
    /// The largest zoom camerad's crop gives a device without a zoom control.
    static let digitalZoomLimit: Double = 4

    // MARK: - Reading

    /// The settings as the controls have them now.
    static func settings(from controls: [CameraControl], state: CameraSettingsState) -> Camerad_V1_CameraSettings {
        let byID = controls.byID
        let extras = state.snapshot()
        var settings = Camerad_V1_CameraSettings()

        if let auto = byID[.focusAuto] {
            settings.focusMode = auto.value != 0 ? .continuousAutoFocus : .locked
        } else if byID[.focusAbsolute] != nil {
            settings.focusMode = .locked
        }
        settings.lensPosition = byID[.focusAbsolute].map(normalized) ?? -1
        if let status = byID[.autoFocusStatus] {
            settings.adjustingFocus = status.value & ControlID.autoFocusStatusBusy != 0
        }

        if let auto = byID[.exposureAuto] {
            settings.exposureMode = auto.value == ExposureAutoMode.manual.rawValue
                ? extras.manualExposure : .continuousAutoExposure
        }
        if let time = byID[.exposureAbsolute] {
            settings.exposureDuration = .seconds(UInt32(clamping: time.value), per: exposureUnitsPerSecond)
        }
        settings.iso = iso(byID) ?? 0

        if let auto = byID[.autoWhiteBalance] {
            settings.whiteBalanceMode = auto.value != 0 ? .continuousAutoWhiteBalance : .locked
        } else if byID[.whiteBalanceTemperature] != nil {
            settings.whiteBalanceMode = .locked
        }
        settings.whiteBalanceTemperature = Float(byID[.whiteBalanceTemperature]?.value ?? 0)

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

        if let point = extras.focusPointOfInterest { settings.focusPointOfInterest = point }
        if let point = extras.exposurePointOfInterest { settings.exposurePointOfInterest = point }
        let now = monotonicNanoseconds()
        settings.adjustingFocus = settings.adjustingFocus || extras.adjustingFocusUntil > now
        settings.adjustingExposure = extras.adjustingExposureUntil > now
        settings.adjustingWhiteBalance = extras.adjustingWhiteBalanceUntil > now
        return settings
    }

    /// The ranges of custom exposure and of white-balance temperature, and the
    /// digital zoom of a device without a zoom control.
    static func addRanges(to capabilities: inout Camerad_V1_Capabilities, from controls: [CameraControl]) {
        let byID = controls.byID
        if byID[.zoomAbsolute] == nil {
            capabilities.digitalZoom = true
            capabilities.maxZoomFactor = digitalZoomLimit
        }
        if let time = byID[.exposureAbsolute] {
            capabilities.minExposureDuration = .seconds(UInt32(clamping: max(1, time.minimum)), per: exposureUnitsPerSecond)
            capabilities.maxExposureDuration = .seconds(UInt32(clamping: time.maximum), per: exposureUnitsPerSecond)
        }
        if let sensitivity = byID[.isoSensitivity], !sensitivity.menuItems.isEmpty {
            capabilities.minIso = Float(sensitivity.menuItems.map(\.value).min()!)
            capabilities.maxIso = Float(sensitivity.menuItems.map(\.value).max()!)
        } else if byID[.gain] != nil {
            capabilities.minIso = gainISOFloor
            capabilities.maxIso = gainISOCeiling
        }
        if let temperature = byID[.whiteBalanceTemperature] {
            capabilities.minWhiteBalanceTemperature = Float(temperature.minimum)
            capabilities.maxWhiteBalanceTemperature = Float(temperature.maximum)
        }
    }

    // MARK: - Writing

    /// What a configuration asks of the device: the control changes, in order,
    /// and what camerad keeps beside the controls.
    struct Plan {
        var controls: [Camerad_V1_ControlValue] = []
        var manualExposure: Camerad_V1_ExposureMode?
        var focusPointOfInterest: Camerad_V1_Point?
        var exposurePointOfInterest: Camerad_V1_Point?
        /// camerad's crop, for a device without a zoom control.
        var digitalZoom: Double?
        var adjustsFocus = false
        var adjustsExposure = false
        var adjustsWhiteBalance = false

        var adjusts: Bool { adjustsFocus || adjustsExposure || adjustsWhiteBalance }
    }

    /// The control values that carry out a configuration's AVFoundation-named settings.
    ///
    /// - Parameter capturing: whether a stream runs (the torch needs one).
    /// - Throws: `UNSUPPORTED` for a mode or setting the device lacks, `INVALID_ARGUMENT`
    ///   for a value out of range, `INVALID_STATE` for the torch of an idle device.
    static func plan(
        _ configuration: Camerad_V1_DeviceConfiguration, controls: [CameraControl], capabilities: Camerad_V1_Capabilities,
        of name: String, capturing: Bool
    ) throws -> Plan {
        let byID = controls.byID
        var plan = Plan()
        func set(_ id: ControlID, _ value: Int64) {
            plan.controls.append(Camerad_V1_ControlValue(id, value))
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
        if configuration.focusMode != .unspecified {
            try require(configuration.focusMode, in: capabilities.focusModes, "focus")
            let mode: Automatic = switch configuration.focusMode {
            case .continuousAutoFocus: .continuous
            case .autoFocus: .oneShot
            default: .locked
            }
            automatic(.focusAuto, button: .autoFocusStart, mode)
            plan.adjustsFocus = mode != .locked
        }
        if configuration.hasLensPosition {
            guard let control = byID[.focusAbsolute] else {
                throw CameraError(.unsupported, "\(name) cannot set a lens position (no focus_absolute control)")
            }
            let position = configuration.lensPosition
            guard (0...1).contains(position) else {
                throw CameraError(.invalidArgument, "lens position must be 0 to 1, not \(position)")
            }
            if configuration.focusMode == .unspecified { setIfPresent(.focusAuto, 0) }
            set(.focusAbsolute, scaled(Double(position), onto: control))
        }
        if configuration.hasFocusPointOfInterest {
            guard capabilities.focusPointOfInterestSupported else {
                throw CameraError(.unsupported, "\(name) has no focus point of interest")
            }
            plan.focusPointOfInterest = try checked(configuration.focusPointOfInterest, "focus point of interest")
        }

        // Exposure.
        let custom = configuration.hasExposureDuration || configuration.hasIso
        let exposureMode = custom && configuration.exposureMode == .unspecified ? .custom : configuration.exposureMode
        if exposureMode != .unspecified {
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
        if configuration.hasExposureDuration {
            guard let control = byID[.exposureAbsolute] else {
                throw CameraError(.unsupported, "\(name) cannot set an exposure duration (no exposure_time_absolute control)")
            }
            let duration = configuration.exposureDuration
            guard duration.denominator > 0 else { throw CameraError(.invalidArgument, "exposure duration has a zero denominator") }
            let units = Int64((Double(duration.numerator) * Double(exposureUnitsPerSecond) / Double(duration.denominator)).rounded())
            guard (control.minimum...control.maximum).contains(units) else {
                throw CameraError(.invalidArgument,
                                  "exposure duration \(duration.numerator)/\(duration.denominator) s is outside \(name)'s \(control.minimum)/\(exposureUnitsPerSecond) to \(control.maximum)/\(exposureUnitsPerSecond) s")
            }
            set(.exposureAbsolute, units)
        }
        if configuration.hasIso {
            let iso = configuration.iso
            guard capabilities.minIso > 0 else {
                throw CameraError(.unsupported, "\(name) cannot set ISO (no iso_sensitivity or gain control)")
            }
            guard (capabilities.minIso...capabilities.maxIso).contains(iso) else {
                throw CameraError(.invalidArgument, "ISO \(iso) is outside \(name)'s \(capabilities.minIso) to \(capabilities.maxIso)")
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
        if configuration.hasExposurePointOfInterest {
            guard capabilities.exposurePointOfInterestSupported else {
                throw CameraError(.unsupported, "\(name) has no exposure point of interest")
            }
            plan.exposurePointOfInterest = try checked(configuration.exposurePointOfInterest, "exposure point of interest")
        }

        // White balance.
        if configuration.whiteBalanceMode != .unspecified {
            try require(configuration.whiteBalanceMode, in: capabilities.whiteBalanceModes, "white balance")
            let mode: Automatic = switch configuration.whiteBalanceMode {
            case .continuousAutoWhiteBalance: .continuous
            case .autoWhiteBalance: .oneShot
            default: .locked
            }
            automatic(.autoWhiteBalance, button: .doWhiteBalance, mode)
            plan.adjustsWhiteBalance = mode != .locked
        }
        if configuration.hasWhiteBalanceTemperature {
            guard let control = byID[.whiteBalanceTemperature] else {
                throw CameraError(.unsupported, "\(name) cannot set a white balance temperature (no white_balance_temperature control)")
            }
            let asked = configuration.whiteBalanceTemperature
            guard asked.isFinite, (Float(control.minimum)...Float(control.maximum)).contains(asked.rounded()) else {
                throw CameraError(.invalidArgument,
                                  "white balance temperature \(asked) K is outside \(name)'s \(control.minimum) to \(control.maximum) K")
            }
            let kelvin = Int64(asked.rounded())
            if configuration.whiteBalanceMode == .unspecified { setIfPresent(.autoWhiteBalance, 0) }
            let step = Int64(clamping: max(1, control.step))
            set(.whiteBalanceTemperature, control.minimum + (kelvin - control.minimum) / step * step)
        }

        // Torch.
        if configuration.hasTorchLevel {
            let level = configuration.torchLevel
            guard level > 0 && level <= 1 else {
                throw CameraError(.invalidArgument, "torch level must be above 0 and at most 1, not \(level)")
            }
        }
        let torchMode = configuration.hasTorchLevel && configuration.torchMode == .unspecified ? .on : configuration.torchMode
        if torchMode != .unspecified {
            try require(torchMode, in: capabilities.torchModes, "torch")
            if torchMode == .on && !capturing {
                throw CameraError(.invalidState, "the torch of \(name) can be on only while a session runs on it; start one first")
            }
            set(.flashLEDMode, (torchMode == .on ? FlashLEDMode.torch : .none).rawValue)
        }
        if configuration.hasTorchLevel, let intensity = byID[.flashTorchIntensity] {
            let value = Int64((Double(configuration.torchLevel) * Double(intensity.maximum)).rounded())
            set(.flashTorchIntensity, min(intensity.maximum, max(intensity.minimum, value)))
        }

        // Zoom.
        if configuration.hasVideoZoomFactor {
            let factor = configuration.videoZoomFactor
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
    static func torchOff(_ controls: [CameraControl]) -> [Camerad_V1_ControlValue] {
        guard let led = controls.first(where: { $0.id == .flashLEDMode }),
              led.value == FlashLEDMode.torch.rawValue
        else { return [] }
        return [Camerad_V1_ControlValue(.flashLEDMode, FlashLEDMode.none.rawValue)]
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

    private static func checked(_ point: Camerad_V1_Point, _ what: String) throws -> Camerad_V1_Point {
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
        var manualExposure: Camerad_V1_ExposureMode = .locked
        var focusPointOfInterest: Camerad_V1_Point?
        var exposurePointOfInterest: Camerad_V1_Point?
        var digitalZoom: Double = 1
        var adjustingFocusUntil: Int64 = 0
        var adjustingExposureUntil: Int64 = 0
        var adjustingWhiteBalanceUntil: Int64 = 0
    }

    private let values = Mutex(Values())

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

extension Duration {
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
