/// camerad's control namespace: the controls the daemon itself reasons about —
/// those behind the AVFoundation-named settings (focus, exposure, white
/// balance, ISO, torch, flash, zoom) and a webcam's picture controls.
///
/// Every backend speaks it: the V4L2 backend passes the driver's controls
/// through (a control camerad has no name for keeps its driver's id and is
/// only ever set by id), and virtual cameras implement these controls
/// themselves. The numbers are V4L2's for the same control
/// (`ControlNamespaceTests` checks them against the kernel's header), so a
/// control has one id on the wire whatever the backend, and `v4l2-ctl` users
/// recognise it. Only the V4L2 target and `CV4L2` see `linux/videodev2.h`.
struct ControlID: RawRepresentable, Hashable, Sendable {
    let rawValue: UInt32

    init(rawValue: UInt32) { self.rawValue = rawValue }

    // The user class (V4L2_CID_BASE, 0x00980900).
    static let brightness = ControlID(rawValue: 0x0098_0900)
    static let contrast = ControlID(rawValue: 0x0098_0901)
    static let saturation = ControlID(rawValue: 0x0098_0902)
    static let autoWhiteBalance = ControlID(rawValue: 0x0098_090c)
    /// A button: balance once, now.
    static let doWhiteBalance = ControlID(rawValue: 0x0098_090d)
    static let gain = ControlID(rawValue: 0x0098_0913)
    static let horizontalFlip = ControlID(rawValue: 0x0098_0914)
    static let verticalFlip = ControlID(rawValue: 0x0098_0915)
    static let powerLineFrequency = ControlID(rawValue: 0x0098_0918)
    /// Kelvin.
    static let whiteBalanceTemperature = ControlID(rawValue: 0x0098_091a)

    // The camera class (0x009a0900).
    /// A menu of ``ExposureAutoMode``.
    static let exposureAuto = ControlID(rawValue: 0x009a_0901)
    /// In units of 100 µs.
    static let exposureAbsolute = ControlID(rawValue: 0x009a_0902)
    static let focusAbsolute = ControlID(rawValue: 0x009a_090a)
    /// Continuous autofocus on or off.
    static let focusAuto = ControlID(rawValue: 0x009a_090c)
    static let zoomAbsolute = ControlID(rawValue: 0x009a_090d)
    /// An integer menu of ISO values.
    static let isoSensitivity = ControlID(rawValue: 0x009a_0917)
    /// A menu: ``isoSensitivityManual`` or auto.
    static let isoSensitivityAuto = ControlID(rawValue: 0x009a_0918)
    /// A button: focus once, now.
    static let autoFocusStart = ControlID(rawValue: 0x009a_091c)
    /// Bits; ``autoFocusStatusBusy`` while focusing.
    static let autoFocusStatus = ControlID(rawValue: 0x009a_091e)

    // The flash class (0x009c0900).
    /// A menu of ``FlashLEDMode``.
    static let flashLEDMode = ControlID(rawValue: 0x009c_0901)
    /// A button: fire the flash (in ``FlashLEDMode/flash``).
    static let flashStrobe = ControlID(rawValue: 0x009c_0903)
    static let flashTorchIntensity = ControlID(rawValue: 0x009c_0908)

    /// Every control named here, for the check against V4L2's numbers.
    static let named: [(name: String, id: ControlID)] = [
        ("brightness", .brightness), ("contrast", .contrast), ("saturation", .saturation),
        ("autoWhiteBalance", .autoWhiteBalance), ("doWhiteBalance", .doWhiteBalance), ("gain", .gain),
        ("horizontalFlip", .horizontalFlip), ("verticalFlip", .verticalFlip),
        ("powerLineFrequency", .powerLineFrequency), ("whiteBalanceTemperature", .whiteBalanceTemperature),
        ("exposureAuto", .exposureAuto), ("exposureAbsolute", .exposureAbsolute), ("focusAbsolute", .focusAbsolute),
        ("focusAuto", .focusAuto), ("zoomAbsolute", .zoomAbsolute), ("isoSensitivity", .isoSensitivity),
        ("isoSensitivityAuto", .isoSensitivityAuto), ("autoFocusStart", .autoFocusStart),
        ("autoFocusStatus", .autoFocusStatus), ("flashLEDMode", .flashLEDMode), ("flashStrobe", .flashStrobe),
        ("flashTorchIntensity", .flashTorchIntensity),
    ]

    /// ``autoFocusStatus``'s bit while a focus runs.
    static let autoFocusStatusBusy: Int64 = 1
    /// ``isoSensitivityAuto``'s entry for a manual ISO.
    static let isoSensitivityManual: Int64 = 0
}

/// The entries of ``ControlID/exposureAuto``.
enum ExposureAutoMode: Int64, CaseIterable {
    case auto = 0
    case manual = 1
    case shutterPriority = 2
    case aperturePriority = 3
}

/// The entries of ``ControlID/flashLEDMode``.
enum FlashLEDMode: Int64, CaseIterable {
    case none = 0
    case flash = 1
    case torch = 2
}

/// A control's flags (V4L2's bits, as the wire carries them).
struct ControlFlags: OptionSet, Sendable {
    let rawValue: UInt32

    static let disabled = ControlFlags(rawValue: 0x0001)
    static let readOnly = ControlFlags(rawValue: 0x0004)
    /// Its automatic control is on, so setting it does nothing now.
    static let inactive = ControlFlags(rawValue: 0x0010)
    static let writeOnly = ControlFlags(rawValue: 0x0040)
    /// A button: setting it acts, whatever the value.
    static let executeOnWrite = ControlFlags(rawValue: 0x0200)
}
