internal import CUDev
import Foundation
import Glibc

/// Where camerad learns that a /dev/video* node came or went.
public enum HotplugSource: String, Sendable, CaseIterable {
    /// libudev's monitor, else inotify on /dev when netlink is refused.
    case automatic = "auto"
    /// libudev's monitor only: udevd's events where udevd runs, else the kernel's.
    case udev
    /// inotify on /dev only: for containers and sandboxes without netlink, where
    /// /dev is still a devtmpfs (or a bind of the host's).
    case inotify
    /// No hotplug: the devices found at start are all there will be.
    case off
}

/// A node added or removed.
struct HotplugEvent: Equatable {
    enum Action { case add, remove }
    let action: Action
    let path: String
}

/// One open source of hotplug events: a descriptor to poll, and a reader of
/// what it says once it is readable.
protocol HotplugMonitor: AnyObject {
    /// Polled for POLLIN.
    var fileDescriptor: Int32 { get }
    /// A short description for the log ("udev events", "inotify on /dev").
    var name: String { get }
    /// The events waiting; call when ``fileDescriptor`` is readable.
    func read() -> [HotplugEvent]
}

/// libudev's monitor of the video4linux subsystem.
final class UDevHotplugMonitor: HotplugMonitor {
    private let udev: OpaquePointer
    private let monitor: OpaquePointer
    let name: String

    /// - Throws: ``DaemonError`` when netlink is refused (a sandbox, a container).
    init() throws {
        guard let udev = udev_new() else { throw DaemonError.invalidConfiguration("libudev: udev_new failed") }
        // Without udevd (a container, a minimal VM) nodes come from devtmpfs and
        // only the kernel's events are sent.
        let source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel"
        guard let monitor = udev_monitor_new_from_netlink(udev, source),
              udev_monitor_filter_add_match_subsystem_devtype(monitor, "video4linux", nil) >= 0,
              udev_monitor_enable_receiving(monitor) >= 0
        else {
            let reason = String(cString: strerror(errno))
            udev_unref(udev)
            throw DaemonError.invalidConfiguration("libudev cannot listen to \(source) events: \(reason)")
        }
        self.udev = udev
        self.monitor = monitor
        name = "\(source) events"
    }

    deinit {
        udev_monitor_unref(monitor)
        udev_unref(udev)
    }

    var fileDescriptor: Int32 { udev_monitor_get_fd(monitor) }

    func read() -> [HotplugEvent] {
        guard let device = udev_monitor_receive_device(monitor) else { return [] }
        defer { udev_device_unref(device) }
        guard let action = udev_device_get_action(device).map({ String(cString: $0) }),
              let node = udev_device_get_devnode(device).map({ String(cString: $0) })
        else { return [] }
        switch action {
        case "add": return [HotplugEvent(action: .add, path: node)]
        case "remove": return [HotplugEvent(action: .remove, path: node)]
        default: return []
        }
    }
}

/// inotify on the devices folder: a `video*` name created or deleted.
///
/// Node creation and removal on devtmpfs reach inotify like any file's, so
/// this needs no netlink; it does not see a node replaced by a rename.
final class INotifyHotplugMonitor: HotplugMonitor {
    let fileDescriptor: Int32
    let name: String
    private let folder: String

    /// - Throws: ``DaemonError`` when the folder cannot be watched.
    init(folder: String) throws {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else {
            throw DaemonError.invalidConfiguration("inotify: \(String(cString: strerror(errno)))")
        }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM)
        guard inotify_add_watch(descriptor, folder, mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw DaemonError.invalidConfiguration("inotify cannot watch \(folder): \(reason)")
        }
        fileDescriptor = descriptor
        self.folder = folder
        name = "inotify on \(folder)"
    }

    deinit { close(fileDescriptor) }

    func read() -> [HotplugEvent] {
        var events: [HotplugEvent] = []
        let size = 16 * (MemoryLayout<inotify_event>.size + Int(NAME_MAX) + 1)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let count = Glibc.read(fileDescriptor, buffer.baseAddress, size)
            guard count > 0 else { return events }
            events += Self.parse(UnsafeRawBufferPointer(rebasing: buffer[..<count]), folder: folder)
        }
    }

    /// The `video*` events in a block read from an inotify descriptor.
    static func parse(_ bytes: UnsafeRawBufferPointer, folder: String) -> [HotplugEvent] {
        var events: [HotplugEvent] = []
        var offset = 0
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= bytes.count {
            let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
            let nameBytes = bytes[(offset + header)..<min(bytes.count, offset + header + Int(event.len))]
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            offset += header + Int(event.len)
            guard name.hasPrefix("video"), event.mask & UInt32(IN_ISDIR) == 0 else { continue }
            let path = "\(folder)/\(name)"
            if event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                events.append(HotplugEvent(action: .add, path: path))
            } else if event.mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
                events.append(HotplugEvent(action: .remove, path: path))
            }
        }
        return events
    }
}
