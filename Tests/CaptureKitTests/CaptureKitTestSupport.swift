import CameraTestSupport
import CaptureKit
import Foundation
import Synchronization

/// Runs `body` with CaptureKit pointed at a fresh camerad.
func withCaptureKitDaemon<T>(
    virtualCameras: Int = 2, arguments: [String] = [], environment: [String: String] = [:],
    _ body: (DaemonProcess) async throws -> T
) async throws -> T {
    try await withRunningDaemon(virtualCameras: virtualCameras, arguments: arguments, environment: environment) { daemon in
        CaptureDaemon.socketPath = daemon.socketPath
        defer { CaptureDaemon.disconnect() }
        return try await body(daemon)
    }
}

/// Collects notifications of some names from NotificationCenter.default.
final class NotificationRecorder: @unchecked Sendable {
    final class Log: Sendable {
        let entries = Mutex<[(name: Notification.Name, uniqueID: String?, error: CaptureError?)]>([])
    }

    private let log = Log()
    // Touched only in init and deinit.
    private var observers: [NSObjectProtocol] = []

    init(_ names: [Notification.Name]) {
        let log = self.log
        observers = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { note in
                let uniqueID = (note.object as? CaptureDevice)?.uniqueID
                let error = note.userInfo?[CaptureDevice.configurationErrorKey] as? CaptureError
                log.entries.withLock { $0.append((note.name, uniqueID, error)) }
            }
        }
    }

    var notifications: [(name: Notification.Name, uniqueID: String?, error: CaptureError?)] { log.entries.withLock { $0 } }

    func wait(for count: Int, timeout: Duration = .seconds(30)) async -> Bool {
        await waitUntil(timeout: timeout) { notifications.count >= count }
    }

    deinit {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }
}
