/// AVMediaType: the kind of media a device captures. camerad serves video (cameras) and audio (microphones).
public struct MediaType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let video = MediaType(rawValue: "vide")
    public static let audio = MediaType(rawValue: "soun")

    public var description: String { self == .video ? "video" : self == .audio ? "audio" : rawValue }
}
