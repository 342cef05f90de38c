import Foundation
import Synchronization

/// Where CaptureKit says what went wrong when an app may not be listening:
/// a refused `startRunning()` or a configuration dropped at
/// `unlockForConfiguration()` also print one line to stderr, so that code
/// written for AVFoundation (which raises or logs) never fails in silence.
/// Foundation cannot tell whether anyone observes a notification, so the line
/// is printed unless the app turns it off. Linux only.
public enum CaptureDiagnostics {
    private static let enabled = Atomic<Bool>(true)

    /// Whether failures posted as notifications are also printed to stderr
    /// (default true). Set it false once the app observes
    /// `CaptureSession.runtimeErrorNotification` and
    /// `CaptureDevice.configurationDidFailNotification` itself.
    public static var printsFailures: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }

    /// The last lines reported, printed or not (tests read them).
    static let recent = Mutex<[String]>([])

    /// One line to stderr: "CaptureKit: <what>: <the error> (<code>)".
    static func report(_ what: String, _ error: CaptureError) {
        let line = "CaptureKit: \(what): \(error.message) (\(error.code))"
        recent.withLock { recent in
            recent.append(line)
            if recent.count > 32 { recent.removeFirst() }
        }
        guard printsFailures else { return }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
