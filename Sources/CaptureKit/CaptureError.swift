import CameraProtocol

/// Every error CaptureKit throws: a code, and one line that says what failed and
/// what to do about it.
///
/// Codes map one-to-one to the protocol's `ErrorReason` (envelope.proto), so a C
/// or Python client sees the same codes.
public struct CaptureError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, CaseIterable, Sendable {
        // Calls and the protocol
        case cancelled
        case invalidArgument
        case unimplemented
        case helloRequired
        case versionMismatch
        case permissionDenied
        case resourceExhausted
        case shuttingDown
        case internalError
        case daemonUnavailable
        case connectionLost
        case alreadyExists
        case timedOut
        // Devices
        case deviceNotFound
        case deviceDisconnected
        case deviceBusy
        case deviceLocked
        case notLocked
        case unsupportedFormat
        case invalidState
        /// The device lacks the feature: a flash, a focus, exposure, white-balance
        /// or torch mode, a lens position… (its `is…Supported` properties say so
        /// beforehand). AVFoundation raises an exception here; CaptureKit throws.
        case unsupported
        /// A status without a reason, from a peer newer or older than this client.
        case unknown
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension CaptureError.Code {
    /// The protocol's reason for this code.
    var reason: Camerad_V1_ErrorReason {
        switch self {
        case .cancelled: .cancelled
        case .invalidArgument: .invalidArgument
        case .unimplemented: .unimplemented
        case .helloRequired: .helloRequired
        case .versionMismatch: .versionMismatch
        case .permissionDenied: .permissionDenied
        case .resourceExhausted: .resourceExhausted
        case .shuttingDown: .shuttingDown
        case .internalError: .internal
        case .daemonUnavailable: .daemonUnavailable
        case .connectionLost: .connectionLost
        case .alreadyExists: .alreadyExists
        case .timedOut: .timedOut
        case .deviceNotFound: .deviceNotFound
        case .deviceDisconnected: .deviceDisconnected
        case .deviceBusy: .deviceBusy
        case .deviceLocked: .deviceLocked
        case .notLocked: .notLocked
        case .unsupportedFormat: .unsupportedFormat
        case .invalidState: .invalidState
        case .unsupported: .unsupported
        case .unknown: .unspecified
        }
    }

    init(_ reason: Camerad_V1_ErrorReason) {
        self = Self.allCases.first { $0.reason == reason } ?? .unknown
    }
}

extension CaptureError {
    init(_ error: RPCError) {
        self.init(Code(error.reason), error.message)
    }

    /// The CaptureError for any error a call can end with.
    init(converting error: any Error) {
        switch error {
        case let error as CaptureError: self = error
        case let error as RPCError: self.init(error)
        case is CancellationError: self.init(.cancelled, "cancelled")
        default: self.init(.internalError, "\(error)")
        }
    }

    /// Runs `body`, turning protocol errors into CaptureErrors.
    static func converting<T>(_ body: () async throws -> T) async throws(CaptureError) -> T {
        do {
            return try await body()
        } catch {
            throw CaptureError(converting: error)
        }
    }
}
