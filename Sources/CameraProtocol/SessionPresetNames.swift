/// The session presets the protocol names, each with AVFoundation's name for
/// it (the `AVCaptureSession.Preset` member): the one table that CaptureKit's
/// `SessionPreset` and camerad's own map through.
extension Camerad_V1_SessionPreset {
    public static let avFoundationNames: [(preset: Camerad_V1_SessionPreset, name: String)] = [
        (.inputPriority, "inputPriority"),
        (.high, "high"),
        (.medium, "medium"),
        (.low, "low"),
        (.photo, "photo"),
        (.vga640X480, "vga640x480"),
        (.hd1280X720, "hd1280x720"),
        (.hd1920X1080, "hd1920x1080"),
        (.hd4K3840X2160, "hd4K3840x2160"),
    ]

    /// The preset AVFoundation calls `name`; nil for a name it has not.
    public init?(avFoundationName name: String) {
        guard let entry = Self.avFoundationNames.first(where: { $0.name == name }) else { return nil }
        self = entry.preset
    }

    /// AVFoundation's name for it; nil for `.unspecified` and values this build does not know.
    public var avFoundationName: String? {
        Self.avFoundationNames.first { $0.preset == self }?.name
    }
}
