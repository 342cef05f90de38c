@testable import CameraDaemon
import CameraTestSupport
import Foundation
import Glibc
import Testing

/// The inotify fallback against a real inotify descriptor on a scratch folder
/// (the udev monitor and inotify on a devtmpfs /dev are exercised against vivid
/// in ``VividGuestTests``).
@Suite struct HotplugTests {
    @Test func inotifyReportsVideoNodesCreatedAndDeletedAndNothingElse() async throws {
        try await withTemporaryDirectory { folder in
            let monitor = try INotifyHotplugMonitor(folder: folder)
            #expect(monitor.read().isEmpty, "nothing happened yet")
            for name in ["video3", "media0", "video10"] {
                #expect(FileManager.default.createFile(atPath: "\(folder)/\(name)", contents: nil))
            }
            try FileManager.default.createDirectory(atPath: "\(folder)/video-dir", withIntermediateDirectories: false)
            try FileManager.default.removeItem(atPath: "\(folder)/video3")
            try FileManager.default.moveItem(atPath: "\(folder)/video10", toPath: "\(folder)/video11")
            #expect(Self.readAll(monitor) == [
                HotplugEvent(action: .add, path: "\(folder)/video3"),
                HotplugEvent(action: .add, path: "\(folder)/video10"),
                HotplugEvent(action: .remove, path: "\(folder)/video3"),
                HotplugEvent(action: .remove, path: "\(folder)/video10"),
                HotplugEvent(action: .add, path: "\(folder)/video11"),
            ])
        }
    }

    @Test func inotifyOnAMissingFolderIsAClearError() {
        #expect(throws: DaemonError.self) { try INotifyHotplugMonitor(folder: "/nonexistent/camerad-dev") }
    }

    /// Polls the monitor until it has been quiet for a moment.
    static func readAll(_ monitor: INotifyHotplugMonitor) -> [HotplugEvent] {
        var events: [HotplugEvent] = []
        var descriptor = pollfd(fd: monitor.fileDescriptor, events: Int16(POLLIN), revents: 0)
        while poll(&descriptor, 1, 200) > 0 {
            events += monitor.read()
        }
        return events
    }
}
