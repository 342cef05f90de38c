/// An error of another layer that knows which RPCError it is: a handler may
/// throw it, and the call ends with ``rpcError``.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

/// How a call failed: camerad's reason, its gRPC canonical code, and one line
/// that says what to do. Handlers throw it; clients receive it.
public struct RPCError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: Camerad_V1_ErrorReason
    public var code: Camerad_V1_StatusCode
    public var message: String

    /// An error whose code follows from its reason.
    public init(_ reason: Camerad_V1_ErrorReason, _ message: String) {
        self.reason = reason
        self.code = reason.statusCode
        self.message = message
    }

    /// The error a peer's status describes; nil for OK.
    public init?(status: Camerad_V1_Status) {
        guard status.code != .ok else { return nil }
        reason = status.reason
        code = status.code
        message = status.message.isEmpty ? "call failed with status \(status.code)" : status.message
    }

    /// This error as a status for the wire.
    public var status: Camerad_V1_Status {
        var status = Camerad_V1_Status()
        status.code = code
        status.reason = reason
        status.message = message
        return status
    }

    public var description: String { message }

    // The errors the RPC layer itself gives.

    public static func unimplemented(_ method: String) -> RPCError {
        RPCError(.unimplemented, "no method '\(method.echoed)' on this camerad; update camerad or the client")
    }

    public static func helloRequired(_ method: String) -> RPCError {
        RPCError(.helloRequired, "'\(method.echoed)' came before Hello; call Hello first on every connection")
    }

    public static func undecodableRequest(_ method: String, _ detail: String) -> RPCError {
        RPCError(.invalidArgument, "request to '\(method.echoed)' is not a valid message (\(detail.echoed)); check the client's .proto files")
    }

    public static func undecodableResponse(_ method: String, _ detail: String) -> RPCError {
        RPCError(.internal, "response to \(method) does not decode (\(detail)); client and camerad versions differ")
    }

    public static let cancelled = RPCError(.cancelled, "call cancelled by the client")

    /// DEVICE_NOT_FOUND for a uniqueID no device has.
    public static func noDevice(_ uniqueID: String) -> RPCError {
        RPCError(.deviceNotFound, "no device '\(uniqueID.echoed)'; 'camctl list' shows the devices")
    }
}

extension Camerad_V1_ErrorReason {
    /// The canonical code each reason always travels with (see envelope.proto).
    public var statusCode: Camerad_V1_StatusCode {
        switch self {
        case .unspecified: .unknown
        case .cancelled: .cancelled
        case .invalidArgument, .unsupportedFormat, .unsupported: .invalidArgument
        case .unimplemented: .unimplemented
        case .helloRequired, .versionMismatch, .deviceLocked, .notLocked, .invalidState: .failedPrecondition
        case .permissionDenied: .permissionDenied
        case .resourceExhausted: .resourceExhausted
        case .shuttingDown, .daemonUnavailable, .connectionLost, .deviceDisconnected, .deviceBusy: .unavailable
        case .internal: .internal
        case .alreadyExists: .alreadyExists
        case .timedOut: .deadlineExceeded
        case .deviceNotFound: .notFound
        case .UNRECOGNIZED: .unknown
        }
    }
}
