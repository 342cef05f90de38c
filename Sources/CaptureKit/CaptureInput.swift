import Synchronization

/// AVCaptureInput: a source of media for a session.
public class CaptureInput: @unchecked Sendable {
    init() {}
}

/// AVCaptureDeviceInput: a camera as a session's input.
public final class CaptureDeviceInput: CaptureInput, @unchecked Sendable, CustomStringConvertible {
    public let device: CaptureDevice

    /// - Throws: `deviceDisconnected` when the device is known to be gone.
    public init(device: CaptureDevice) throws(CaptureError) {
        guard device.isConnected else {
            throw CaptureError(.deviceDisconnected, "\(device) is disconnected; pick another device or plug it back in")
        }
        self.device = device
    }

    public var description: String { "input \(device)" }
}
