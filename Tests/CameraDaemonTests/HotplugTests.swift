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

    /// A microphone's node is `snd/pcmC<card>D<device>c`; the `snd` folder comes
    /// with the first sound card, and what it holds then is reported as added.
    @Test func inotifyFollowsCapturePCMsInTheSoundFolderOnceItAppears() async throws {
        try await withTemporaryDirectory { folder in
            let monitor = try INotifyHotplugMonitor(folder: folder)
            try FileManager.default.createDirectory(atPath: "\(folder)/snd", withIntermediateDirectories: false)
            // Made before the monitor watches the folder: found when it does.
            #expect(FileManager.default.createFile(atPath: "\(folder)/snd/pcmC0D0c", contents: nil))
            #expect(Self.readAll(monitor) == [HotplugEvent(action: .add, path: "\(folder)/snd/pcmC0D0c")])
            for name in ["pcmC1D2c", "pcmC1D2p", "controlC1", "timer"] {
                #expect(FileManager.default.createFile(atPath: "\(folder)/snd/\(name)", contents: nil))
            }
            try FileManager.default.removeItem(atPath: "\(folder)/snd/pcmC0D0c")
            #expect(Self.readAll(monitor) == [
                HotplugEvent(action: .add, path: "\(folder)/snd/pcmC1D2c"),
                HotplugEvent(action: .remove, path: "\(folder)/snd/pcmC0D0c"),
            ])
            // The folder goes with the last card, and comes back with the next.
            try FileManager.default.removeItem(atPath: "\(folder)/snd")
            _ = Self.readAll(monitor)
            try FileManager.default.createDirectory(atPath: "\(folder)/snd", withIntermediateDirectories: false)
            #expect(Self.readAll(monitor).isEmpty)
            #expect(FileManager.default.createFile(atPath: "\(folder)/snd/pcmC2D0c", contents: nil))
            #expect(Self.readAll(monitor) == [HotplugEvent(action: .add, path: "\(folder)/snd/pcmC2D0c")])
        }
    }

    @Test func aNodesPathSaysWhatItIs() {
        #expect(HotplugPath.isCamera("/dev/video12"))
        #expect(!HotplugPath.isCamera("/dev/snd/pcmC0D0c"))
        #expect(HotplugPath.capturePCM("/dev/snd/pcmC3D12c").map { [$0.card, $0.device] } == [3, 12])
        for path in ["/dev/snd/pcmC0D0p", "/dev/snd/controlC0", "/dev/snd/pcmCD0c", "/dev/snd/pcmC0D0D1c", "/dev/snd/pcmC-1D0c", "/dev/video0"] {
            #expect(HotplugPath.capturePCM(path) == nil, "\(path)")
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
