import CameraProtocol

/// Why something the daemon was asked to do failed, in camerad's own terms: a
/// code and one line that says what to do. The daemon's parts throw it; the
/// handler edge gives it to the client as the protocol's reason and status
/// (`Handlers/ProtocolMapping.swift`), as CaptureKit's `CaptureError` gives it
/// to an app.
struct CameraError: Error, Equatable, Sendable, CustomStringConvertible {
    enum Code: Equatable, Sendable, CaseIterable {
        /// A value out of range or malformed; the message names the allowed ones.
        case invalidArgument
        /// The device has no such format, size or frame rate.
        case unsupportedFormat
        /// The device lacks the feature: a flash, a mode, a lens position…
        case unsupported
        /// Not now: the torch of an idle device, defaults with nowhere to go.
        case invalidState
        case notLocked
        case deviceLocked
        case deviceNotFound
        /// Held by a program outside camerad.
        case deviceBusy
        case deviceDisconnected
        /// A limit: streams, variants, pools, memory.
        case resourceExhausted
        case permissionDenied
        case timedOut
        case alreadyExists
        case shuttingDown
        /// A bug in camerad; the message says where.
        case internalError
    }

    let code: Code
    let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }

    /// DEVICE_NOT_FOUND for a uniqueID no device has.
    static func noDevice(_ uniqueID: String) -> CameraError {
        CameraError(.deviceNotFound, "no device '\(uniqueID.echoed)'; 'camctl list' shows the devices")
    }
}
