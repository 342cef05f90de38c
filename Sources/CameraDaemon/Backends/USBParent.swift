import Foundation

/// The USB device a device node hangs from, read from sysfs: what names a
/// USB camera or microphone for good (vendor, product, serial or port,
/// never a number the kernel hands out), and what pairs a webcam's
/// microphone with its camera — both hang from one USB device.
struct USBParent: Equatable, Sendable {
    /// The USB device's folder in sysfs, symbolic links resolved: equal for
    /// the interfaces of one device (a webcam's video and audio).
    let path: String
    /// "vvvv:pppp".
    let model: String
    /// "-SERIAL", or "@<port>" (its sysfs name, "1-1.2") when it has no serial.
    let place: String
    let manufacturer: String

    /// The USB device above `classDevice` (`/sys/class/sound/card1`,
    /// `/sys/class/video4linux/video0`): the nearest folder up from its
    /// `device` link with an idVendor and an idProduct; nil when it is not on USB.
    static func of(_ classDevice: String) -> USBParent? {
        var folder = URL(fileURLWithPath: classDevice + "/device").resolvingSymlinksInPath()
        guard FileManager.default.fileExists(atPath: folder.path) else { return nil }
        while folder.path.count > 1 {
            if let vendor = Sysfs.attribute(folder.path, "idVendor"), let product = Sysfs.attribute(folder.path, "idProduct") {
                return USBParent(path: folder.path, model: "\(vendor):\(product)",
                                 place: Sysfs.attribute(folder.path, "serial").map { "-\($0)" } ?? "@\(folder.lastPathComponent)",
                                 manufacturer: Sysfs.attribute(folder.path, "manufacturer") ?? "")
            }
            folder.deleteLastPathComponent()
        }
        return nil
    }

}

enum Sysfs {
    /// A sysfs attribute's value (`folder`/`name`), trimmed; nil when absent or empty.
    static func attribute(_ folder: String, _ name: String) -> String? {
        (try? String(contentsOfFile: folder + "/" + name, encoding: .utf8))
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
    }
}
