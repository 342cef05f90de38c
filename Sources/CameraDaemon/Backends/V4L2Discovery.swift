import CameraIPC
internal import CCameraShims
import Foundation
import Glibc
import Logging
import V4L2

/// Finds the V4L2 cameras: scans /dev/video* at start, then adds and removes
/// devices in the registry as ``DeviceHotplug`` sees nodes come and go.
///
/// Identity comes from sysfs through libudev, never from the node's number:
/// see ``V4L2Identity``.
final class V4L2Discovery: Sendable {
    private let registry: DeviceRegistry
    private let logger: Logger
    private let devicesFolder: String
    /// Where a node that failed is probed again a second later, the work done on a worker.
    private let timers: EventLoop

    init(registry: DeviceRegistry, logger: Logger, devicesFolder: String = "/dev", timers: EventLoop) {
        self.registry = registry
        self.logger = logger
        self.devicesFolder = devicesFolder
        self.timers = timers
    }

    /// Probes every /dev/video* node now, in numeric order; returns the cameras added.
    @discardableResult
    func scan() -> [V4L2Camera] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: devicesFolder)) ?? [])
            .filter { $0.hasPrefix("video") }
            .sorted { (Int($0.dropFirst(5)) ?? .max, $0) < (Int($1.dropFirst(5)) ?? .max, $1) }
        return names.compactMap { add(path: "\(devicesFolder)/\($0)") }
    }

    /// Probes one node and adds it; nil when it is not a camera camerad serves
    /// or is already there.
    @discardableResult
    func add(path: String) -> V4L2Camera? {
        let camera: V4L2Camera?
        do {
            camera = try V4L2Camera.probe(path: path) { [weak self] lostPath in
                self?.lookAgain(at: lostPath)
            }
        } catch {
            logger.debug("\(path): \(error); skipped")
            return nil
        }
        guard let camera else {
            logger.debug("\(path): not a video capture node camerad can stream; skipped")
            return nil
        }
        do {
            try registry.add(camera)
        } catch {
            logger.debug("\(path): \(camera.uniqueID) is already served; skipped")
            return nil
        }
        let busy = camera.describe().unavailableReason.map { " (\($0))" } ?? ""
        logger.info("\(path): \(camera.capability.card) as \(camera.uniqueID), \(camera.formats.count) formats\(busy)")
        return camera
    }

    /// Removes the camera at a node that went away.
    func remove(path: String) {
        for camera in registry.devices.compactMap({ $0 as? V4L2Camera }) where camera.devicePath == path {
            logger.info("\(path): \(camera.uniqueID) unplugged")
            registry.remove(camera.uniqueID)
        }
    }

    /// A stream found its device gone, but the node may still answer (an I/O
    /// error rather than an unplug): probe it again in a second.
    private func lookAgain(at path: String) {
        timers.schedule(after: .seconds(1)) { [weak self] in
            // Probing opens the node: a worker's job, not the loop's.
            Workers.async { [weak self] in
                guard let self, !registry.devices.contains(where: { ($0 as? V4L2Camera)?.devicePath == path }) else { return }
                add(path: path)
            }
        }
    }

    // MARK: - Hotplug (``DeviceHotplug``'s thread)

    /// With kernel or inotify events the node may not answer for a moment (udev
    /// still sets its permissions): try for a second.
    func addWhenReady(_ path: String) {
        for _ in 0..<10 {
            if add(path: path) != nil || registry.devices.contains(where: { ($0 as? V4L2Camera)?.devicePath == path }) {
                return
            }
            usleep(100_000)
        }
    }

    // MARK: - Identity

    /// Who the node at `path` is, from sysfs (`sysfs`: a test's tree): its USB device, or the driver's bus info.
    static func identity(of path: String, busInfo: String, sysfs: String = "/sys") -> V4L2Identity {
        let name = (path as NSString).lastPathComponent
        // Not USB: the bus info ("platform:vivid-001", "PCI:0000:00:05.0") names
        // the device; sysfs parents do not always (vivid hangs every instance on one).
        let byBus = V4L2Identity(
            uniqueID: busInfo.isEmpty ? name : busInfo.replacingOccurrences(of: ":", with: "-"), modelID: "",
            manufacturer: "", isExternal: false, usbDevice: nil)
        let node = "\(sysfs)/class/video4linux/\(name)"
        guard FileManager.default.fileExists(atPath: node) else { return byBus }
        let index = Sysfs.attribute(node, "index").flatMap(Int.init) ?? 0
        let suffix = index > 0 ? "-\(index)" : ""
        if let usb = USBParent.of(node) {
            return V4L2Identity(uniqueID: "usb-\(usb.model)\(usb.place)\(suffix)", modelID: usb.model,
                                manufacturer: usb.manufacturer, isExternal: true, usbDevice: usb.path)
        }
        let driver = (try? FileManager.default.destinationOfSymbolicLink(atPath: node + "/device/driver"))
            .map { ($0 as NSString).lastPathComponent } ?? ""
        return V4L2Identity(uniqueID: byBus.uniqueID + suffix, modelID: driver, manufacturer: "", isExternal: false, usbDevice: nil)
    }
}
