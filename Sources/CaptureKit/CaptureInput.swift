import Foundation
import Synchronization

/// AVCaptureInput: a source of media for a session.
public class CaptureInput: @unchecked Sendable {
    init() {}

    /// AVCaptureInput.Port. camerad's inputs have one video port each, so
    /// CaptureKit has no port objects: only the notification.
    public enum Port {
        /// Posted on `NotificationCenter.default` when the frames' format changed
        /// because the device's mode did (its lock holder set another
        /// `activeFormat`); every output keeps its own pixel format and size.
        /// The object is the ``CaptureDeviceInput`` (Apple's is the port).
        public static let formatDescriptionDidChangeNotification =
            Notification.Name("CaptureInputPortFormatDescriptionDidChangeNotification")
    }
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
