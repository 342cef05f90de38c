internal import CUDev
import Foundation
import Glibc
import Logging

/// Where camerad learns that a device node came or went: a camera's
/// /dev/video*, a microphone's /dev/snd/pcmC*D*c.
public enum HotplugSource: String, Sendable, CaseIterable {
    /// libudev's monitor, else inotify on /dev when netlink is refused.
    case automatic = "auto"
    /// libudev's monitor only: udevd's events where udevd runs, else the kernel's.
    case udev
    /// inotify on /dev (and /dev/snd) only: for containers and sandboxes without
    /// netlink, where /dev is still a devtmpfs (or a bind of the host's).
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

/// Follows hotplug on a thread of its own (`camerad-hotplug`) and hands each
/// node to whoever serves its kind: cameras' nodes to ``V4L2Discovery``,
/// capture PCMs' to ``ALSADiscovery``. One monitor for both, so udev's
/// netlink socket and the thread are there once.
final class DeviceHotplug: Sendable {
    private let thread: PollingThread

    /// Starts following hotplug through `source`; nil for `.off`.
    ///
    /// - Throws: ``DaemonError`` when `source` cannot be listened to (no
    ///   netlink for libudev, no inotify); `.automatic` throws only when neither works.
    init?(_ source: HotplugSource, cameras: V4L2Discovery?, microphones: ALSADiscovery?, devicesFolder: String = "/dev",
          logger: Logger) throws {
        let subsystems = (cameras == nil ? [] : ["video4linux"]) + (microphones == nil ? [] : ["sound"])
        guard source != .off, !subsystems.isEmpty else { return nil }
        let monitor: any HotplugMonitor
        switch source {
        case .off: return nil
        case .udev: monitor = try UDevHotplugMonitor(subsystems: subsystems)
        case .inotify: monitor = try INotifyHotplugMonitor(folder: devicesFolder)
        case .automatic:
            do {
                monitor = try UDevHotplugMonitor(subsystems: subsystems)
            } catch {
                logger.info("\(error); following hotplug through inotify instead")
                monitor = try INotifyHotplugMonitor(folder: devicesFolder)
            }
        }
        logger.debug("following hotplug through \(monitor.name)")
        let name = monitor.name
        do {
            thread = try PollingThread(name: "camerad-hotplug", watching: monitor.fileDescriptor)
            try thread.start { [cameras, microphones] thread in
                Self.follow(monitor, on: thread, cameras: cameras, microphones: microphones)
            }
        } catch {
            throw DaemonError.invalidConfiguration("no thread to follow \(name) on: \(error)")
        }
    }

    /// Ends the monitor thread and waits for it.
    func stop() {
        thread.wake()
        thread.join()
    }

    private static func follow(_ monitor: any HotplugMonitor, on thread: PollingThread,
                               cameras: V4L2Discovery?, microphones: ALSADiscovery?) {
        while true {
            let ready = thread.wait()
            if ready.woken { return }
            guard ready.descriptorIsReady else { continue }
            for event in monitor.read() {
                if let cameras, HotplugPath.isCamera(event.path) {
                    switch event.action {
                    case .add: cameras.addWhenReady(event.path)
                    case .remove: cameras.remove(path: event.path)
                    }
                } else if let microphones, let pcm = HotplugPath.capturePCM(event.path) {
                    switch event.action {
                    case .add: microphones.addWhenReady(card: pcm.card, device: pcm.device)
                    case .remove: microphones.remove(card: pcm.card, device: pcm.device)
                    }
                }
            }
        }
    }
}

/// What a device node's path names.
enum HotplugPath {
    /// A V4L2 node: `…/video<n>`.
    static func isCamera(_ path: String) -> Bool {
        (path as NSString).lastPathComponent.hasPrefix("video")
    }

    /// A capture PCM's node, `…/snd/pcmC<card>D<device>c`: its card and device.
    static func capturePCM(_ path: String) -> (card: Int32, device: Int32)? {
        let name = Substring((path as NSString).lastPathComponent)
        guard name.hasPrefix("pcmC"), name.hasSuffix("c") else { return nil }
        let numbers = name.dropFirst(4).dropLast().split(separator: "D", omittingEmptySubsequences: false)
        guard numbers.count == 2, let card = Int32(numbers[0]), let device = Int32(numbers[1]), card >= 0, device >= 0 else { return nil }
        return (card, device)
    }
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

/// libudev's monitor of some subsystems (video4linux, sound).
final class UDevHotplugMonitor: HotplugMonitor {
    private let udev: OpaquePointer
    private let monitor: OpaquePointer
    let name: String

    /// - Throws: ``DaemonError`` when netlink is refused (a sandbox, a container).
    init(subsystems: [String]) throws {
        guard let udev = udev_new() else { throw DaemonError.invalidConfiguration("libudev: udev_new failed") }
        // Without udevd (a container, a minimal VM) nodes come from devtmpfs and
        // only the kernel's events are sent.
        let source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel"
        guard let monitor = udev_monitor_new_from_netlink(udev, source),
              subsystems.allSatisfy({ udev_monitor_filter_add_match_subsystem_devtype(monitor, $0, nil) >= 0 }),
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

/// inotify on the devices folder and its `snd` folder: a `video*` or
/// `snd/pcmC*D*c` node created or deleted.
///
/// Node creation and removal on devtmpfs reach inotify like any file's, so
/// this needs no netlink; it does not see a node replaced by a rename. The
/// `snd` folder appears with the first sound card: watched from then on, and
/// the nodes already in it reported as added.
final class INotifyHotplugMonitor: HotplugMonitor {
    let fileDescriptor: Int32
    let name: String
    private let folder: String
    /// The `snd` folder's watch, once it exists.
    private var soundWatch: Int32?
    private static let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM)

    /// - Throws: ``DaemonError`` when the folder cannot be watched.
    init(folder: String) throws {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else {
            throw DaemonError.invalidConfiguration("inotify: \(String(cString: strerror(errno)))")
        }
        guard inotify_add_watch(descriptor, folder, Self.mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw DaemonError.invalidConfiguration("inotify cannot watch \(folder): \(reason)")
        }
        fileDescriptor = descriptor
        self.folder = folder
        name = "inotify on \(folder)"
        _ = watchSound()
    }

    deinit { close(fileDescriptor) }

    /// Watches the `snd` folder if it is there and not yet watched; the capture PCMs it holds already.
    private func watchSound() -> [HotplugEvent] {
        guard soundWatch == nil else { return [] }
        let watch = inotify_add_watch(fileDescriptor, folder + "/snd", Self.mask)
        guard watch >= 0 else { return [] }
        soundWatch = watch
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/snd")) ?? []
        return names.sorted().filter { HotplugPath.capturePCM($0) != nil }.map { HotplugEvent(action: .add, path: "\(folder)/snd/\($0)") }
    }

    func read() -> [HotplugEvent] {
        var events: [HotplugEvent] = []
        let size = 16 * (MemoryLayout<inotify_event>.size + Int(NAME_MAX) + 1)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let count = Glibc.read(fileDescriptor, buffer.baseAddress, size)
            guard count > 0 else { return events }
            for event in Self.parse(UnsafeRawBufferPointer(rebasing: buffer[..<count])) {
                if event.watch == soundWatch {
                    guard HotplugPath.capturePCM(event.name) != nil, !event.isFolder else { continue }
                    events.append(HotplugEvent(action: event.added ? .add : .remove, path: "\(folder)/snd/\(event.name)"))
                } else if event.name == "snd" && event.isFolder {
                    if event.added {
                        events += watchSound()
                    } else {
                        // Its watch went with it (IN_IGNORED).
                        soundWatch = nil
                    }
                } else if event.name.hasPrefix("video") && !event.isFolder {
                    events.append(HotplugEvent(action: event.added ? .add : .remove, path: "\(folder)/\(event.name)"))
                }
            }
        }
    }

    /// One inotify event, as far as hotplug cares.
    struct Event {
        let watch: Int32
        let name: String
        let isFolder: Bool
        /// Created or moved in; else deleted or moved out.
        let added: Bool
    }

    /// The creations and deletions in a block read from an inotify descriptor.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> [Event] {
        var events: [Event] = []
        var offset = 0
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= bytes.count {
            let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
            let nameBytes = bytes[(offset + header)..<min(bytes.count, offset + header + Int(event.len))]
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            offset += header + Int(event.len)
            let added = event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0
            guard added || event.mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 else { continue }
            events.append(Event(watch: event.wd, name: name, isFolder: event.mask & UInt32(IN_ISDIR) != 0, added: added))
        }
        return events
    }
}
