import CameraProtocol

/// One camera as the daemon drives it, whatever it is underneath: a virtual
/// camera, or (later) a V4L2 node. Like libcamera's pipeline handlers, each kind
/// lives in its own file behind this protocol.
///
/// A backend describes itself with the protocol's `Device` message, kept current:
/// the registry sends it to clients as it is.
protocol CameraBackend: AnyObject, Sendable {
    /// Stable across reboots and re-plugging; never /dev/videoN.
    var uniqueID: String { get }

    /// The device as clients see it now (`isConnected` true).
    func describe() -> Camerad_V1_Device
}
