import CameraIPC

/// How much a client may send: camerad refuses more with INVALID_ARGUMENT,
/// and never repeats more than a short prefix of what it was sent.
public enum RequestLimits {
    /// The longest frame a client may send the daemon: 1 MiB (its replies may be
    /// up to ``Frame/maxPayloadLength``). A longer one closes the connection.
    public static let requestLength = 1 << 20

    /// The longest method name, client name, device id or other name, in bytes.
    public static let nameLength = 256

    /// - Throws: INVALID_ARGUMENT when `value` is longer than ``nameLength`` bytes.
    public static func check(name value: String, _ field: String) throws(RPCError) {
        let length = value.utf8.count
        guard length <= nameLength else {
            throw RPCError(.invalidArgument, "\(field) of \(length) bytes is over the \(nameLength)-byte limit; send a shorter one")
        }
    }
}

extension String {
    /// This text as a message or a log line may repeat it: control characters
    /// shown as `?`, and cut after 64 characters with the full length said.
    public var echoed: String {
        let shown = String(String.UnicodeScalarView(unicodeScalars.prefix(64).map { $0.properties.generalCategory == .control ? "?" : $0 }))
        return unicodeScalars.count > 64 ? shown + "…(\(utf8.count) bytes)" : shown
    }
}
