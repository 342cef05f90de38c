import SwiftProtobuf

/// The shapes of call the protocol carries.
public enum MethodKind: Sendable {
    /// One request, one response.
    case unary
    /// One request, any number of responses.
    case serverStreaming
    /// Requests and responses both ways, until either side ends.
    case bidirectionalStreaming
}

/// One method of a service: its wire name, its shape and its message types.
public struct Method<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>: Sendable {
    /// The full name on the wire, "/camerad.v1.Camera/ListDevices".
    public let name: String
    public let kind: MethodKind

    public init(service: String, method: String, kind: MethodKind) {
        self.name = "/\(service)/\(method)"
        self.kind = kind
    }
}
