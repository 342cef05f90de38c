import CameraMedia

/// camerad's own types for the AVFoundation-named settings: the modes, what a
/// device can do (``DeviceCapabilities``), what it does now
/// (``CameraSettings``) and what a client asks of it
/// (``DeviceConfiguration``). ``CameraSettingsMapping`` turns them into
/// controls and back; the protocol's messages are made from them at the
/// handler edge (`Handlers/ProtocolMapping.swift`).

/// AVCaptureDevice.FocusMode.
enum FocusMode: Sendable, Hashable, CaseIterable {
    case locked, autoFocus, continuousAutoFocus
}

/// AVCaptureDevice.ExposureMode.
enum ExposureMode: Sendable, Hashable, CaseIterable {
    case locked, autoExpose, continuousAutoExposure, custom
}

/// AVCaptureDevice.WhiteBalanceMode.
enum WhiteBalanceMode: Sendable, Hashable, CaseIterable {
    case locked, autoWhiteBalance, continuousAutoWhiteBalance
}

/// AVCaptureDevice.TorchMode.
enum TorchMode: Sendable, Hashable, CaseIterable {
    case off, on, auto
}

/// AVCaptureDevice.FlashMode.
enum FlashMode: Sendable, Hashable, CaseIterable {
    case off, on, auto
}

/// A point in the frame, (0, 0) top left to (1, 1) bottom right, as
/// AVFoundation's points of interest.
struct NormalizedPoint: Sendable, Hashable {
    var x: Double
    var y: Double
}

/// What the AVFoundation-named settings can do on a device (AVCaptureDevice's
/// `isFocusModeSupported`, `hasTorch`, `minISO`...). Derived from its controls
/// by ``init(controls:pointsOfInterest:)``.
struct DeviceCapabilities: Sendable, Equatable {
    var focusModes: [FocusMode] = []
    var isFocusPointOfInterestSupported = false
    /// Whether a lens position can be set (`setFocusModeLocked(lensPosition:)`).
    var isLensPositionSupported = false
    var exposureModes: [ExposureMode] = []
    var isExposurePointOfInterestSupported = false
    var whiteBalanceModes: [WhiteBalanceMode] = []
    var torchModes: [TorchMode] = []
    var flashModes: [FlashMode] = []
    var minZoomFactor: Double = 1
    var maxZoomFactor: Double = 1
    /// camerad crops for the zoom: the device has no zoom control.
    var isDigitalZoom = false
    /// The custom exposure durations; nil: none can be set.
    var exposureDurations: ClosedRange<Duration>?
    /// The ISO range; nil: ISO cannot be set.
    var isoRange: ClosedRange<Float>?
    /// White-balance temperatures in kelvin; nil: none can be set.
    var whiteBalanceTemperatures: ClosedRange<Float>?

    var hasTorch: Bool { !torchModes.isEmpty }
    var hasFlash: Bool { !flashModes.isEmpty }
}

/// The AVFoundation-named settings as a device has them now (AVCaptureDevice's
/// `focusMode`, `lensPosition`, `isAdjustingFocus`...). Nil: the device has no
/// such setting.
struct CameraSettings: Sendable, Equatable {
    var focusMode: FocusMode?
    /// 0 (nearest) to 1 (farthest).
    var lensPosition: Float?
    var focusPointOfInterest: NormalizedPoint?
    var isAdjustingFocus = false
    var exposureMode: ExposureMode?
    var exposureDuration: Duration?
    var iso: Float?
    var exposurePointOfInterest: NormalizedPoint?
    var isAdjustingExposure = false
    var whiteBalanceMode: WhiteBalanceMode?
    /// Kelvin.
    var whiteBalanceTemperature: Float?
    var isAdjustingWhiteBalance = false
    var torchMode: TorchMode?
    /// 0 to 1; 0 while the torch is off.
    var torchLevel: Float = 0
    var videoZoomFactor: Double = 1
}

/// A control's new value, by id (or by name, for one the client knows only by
/// its name), not yet checked: ``ControlChange`` finds and checks it.
struct ControlValue: Sendable, Hashable {
    enum Key: Sendable, Hashable {
        case id(ControlID)
        case name(String)
    }

    var key: Key
    var value: Int64

    init(_ id: ControlID, _ value: Int64) {
        key = .id(id)
        self.value = value
    }

    init(_ key: Key, _ value: Int64) {
        self.key = key
        self.value = value
    }
}

/// What a client asks of a device under its configuration lock (or what the
/// stored defaults ask as it connects): a format and frame durations, the
/// AVFoundation-named settings, and controls by value. Nil: left as it is.
struct DeviceConfiguration: Sendable, Equatable {
    /// A format by what it is, as a client names it.
    struct FormatChoice: Sendable, Equatable {
        var pixelFormat: PixelFormat
        var width: UInt32
        var height: UInt32
    }

    var activeFormat: FormatChoice?
    var activeMinFrameDuration: FrameDuration?
    var activeMaxFrameDuration: FrameDuration?
    var focusMode: FocusMode?
    var lensPosition: Float?
    var focusPointOfInterest: NormalizedPoint?
    var exposureMode: ExposureMode?
    var exposureDuration: Duration?
    var iso: Float?
    var exposurePointOfInterest: NormalizedPoint?
    var whiteBalanceMode: WhiteBalanceMode?
    var whiteBalanceTemperature: Float?
    var torchMode: TorchMode?
    var torchLevel: Float?
    var videoZoomFactor: Double?
    var controls: [ControlValue] = []

    /// `newer` over this one, as the stored defaults keep them: what `newer`
    /// sets wins; a new format drops the old frame durations (they may not fit
    /// it); the torch is never kept; each control keeps its last value.
    func merging(_ newer: DeviceConfiguration) -> DeviceConfiguration {
        var merged = self
        if newer.activeFormat != nil {
            merged.activeMinFrameDuration = nil
            merged.activeMaxFrameDuration = nil
        }
        merged.activeFormat = newer.activeFormat ?? activeFormat
        merged.activeMinFrameDuration = newer.activeMinFrameDuration ?? merged.activeMinFrameDuration
        merged.activeMaxFrameDuration = newer.activeMaxFrameDuration ?? merged.activeMaxFrameDuration
        merged.focusMode = newer.focusMode ?? focusMode
        merged.lensPosition = newer.lensPosition ?? lensPosition
        merged.focusPointOfInterest = newer.focusPointOfInterest ?? focusPointOfInterest
        merged.exposureMode = newer.exposureMode ?? exposureMode
        merged.exposureDuration = newer.exposureDuration ?? exposureDuration
        merged.iso = newer.iso ?? iso
        merged.exposurePointOfInterest = newer.exposurePointOfInterest ?? exposurePointOfInterest
        merged.whiteBalanceMode = newer.whiteBalanceMode ?? whiteBalanceMode
        merged.whiteBalanceTemperature = newer.whiteBalanceTemperature ?? whiteBalanceTemperature
        merged.videoZoomFactor = newer.videoZoomFactor ?? videoZoomFactor
        merged.torchMode = nil
        merged.torchLevel = nil
        merged.controls = []
        for value in controls + newer.controls {
            merged.controls.removeAll { $0.key == value.key }
            merged.controls.append(value)
        }
        return merged
    }
}

extension Duration {
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }

    /// In seconds, as a floating-point number.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
