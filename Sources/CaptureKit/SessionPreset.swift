import CameraProtocol

/// AVCaptureSession.Preset: the quality a session asks of its device.
public struct SessionPreset: RawRepresentable, Hashable, CaseIterable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let high = SessionPreset(rawValue: "high")
    public static let medium = SessionPreset(rawValue: "medium")
    public static let low = SessionPreset(rawValue: "low")
    public static let photo = SessionPreset(rawValue: "photo")
    public static let vga640x480 = SessionPreset(rawValue: "vga640x480")
    public static let hd1280x720 = SessionPreset(rawValue: "hd1280x720")
    public static let hd1920x1080 = SessionPreset(rawValue: "hd1920x1080")
    public static let hd4K3840x2160 = SessionPreset(rawValue: "hd4K3840x2160")
    public static let inputPriority = SessionPreset(rawValue: "inputPriority")

    public static let allCases: [SessionPreset] = [
        .high, .medium, .low, .photo, .vga640x480, .hd1280x720, .hd1920x1080, .hd4K3840x2160, .inputPriority,
    ]

    public var description: String { rawValue }

    init?(_ preset: Camerad_V1_SessionPreset) {
        guard let name = preset.avFoundationName else { return nil }
        self.init(rawValue: name)
    }

    /// The protocol's preset; `.unspecified` for one camerad does not name.
    var proto: Camerad_V1_SessionPreset { Camerad_V1_SessionPreset(avFoundationName: rawValue) ?? .unspecified }
}
