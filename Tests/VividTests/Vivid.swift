import CameraMedia
import CameraTestSupport
import Foundation
import V4L2

/// The vivid VM as the tests see it: booted by `scripts/vivid-vm` with
/// ``moduleOptions``, so there are two vivid instances, the first single-planar
/// and the second multi-planar.
enum Vivid {
    static let moduleOptions = "n_devs=2 multiplanar=1,2"

    /// How guest tests start the lines of figures they print, which the host
    /// passes on to CI's log.
    static let figures = "vivid figures: "

    /// Inside the VM (the script sets VIVID_VM=1).
    static let isGuest = ProcessInfo.processInfo.environment["VIVID_VM"] == "1"

    /// One vivid video capture node.
    struct Node: CustomStringConvertible {
        /// "/dev/video0"
        let path: String
        /// vivid's instance number.
        let instance: Int
        /// The uniqueID camerad gives it: from its bus info, "platform:vivid-000".
        var uniqueID: String { "platform-vivid-" + String(repeating: "0", count: 3 - String(instance).count) + String(instance) }
        var description: String { "\(uniqueID) (\(path))" }
    }

    /// The capture nodes, from sysfs names ("vivid-000-vid-cap").
    static func captureNodes() -> [Node] {
        let folder = "/sys/class/video4linux"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { name -> Node? in
            guard let label = try? String(contentsOfFile: "\(folder)/\(name)/name", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines),
                label.hasPrefix("vivid-"), label.hasSuffix("-vid-cap"),
                let instance = Int(label.dropFirst(6).prefix(3))
            else { return nil }
            return Node(path: "/dev/\(name)", instance: instance)
        }.sorted { $0.instance < $1.instance }
    }

    static var singlePlanar: Node { captureNodes()[0] }
    static var multiPlanar: Node { captureNodes()[1] }

    static func v4l2ctl(_ arguments: [String], timeout: Duration = .seconds(30)) async throws -> ProcessResult {
        try await runProcess("/usr/bin/v4l2-ctl", arguments, timeout: timeout)
    }

    /// Sets a node's format and frame rate from outside camerad, as another
    /// program would; camerad streams in the mode the node is set to. (Not with
    /// v4l2-ctl: its --set-parm uses the single-planar buffer type, which
    /// vivid's multi-planar nodes refuse.)
    static func setMode(_ node: Node, _ fourcc: String, width: UInt32 = 640, height: UInt32 = 480, fps: UInt32 = 25) throws {
        let device = try V4L2Device(path: node.path)
        let format = try device.setFormat(fourcc: PixelFormat(code: fourcc)!.fourcc, width: width, height: height)
        let interval = try device.setFrameInterval(V4L2Fraction(1, fps))
        guard format.width == width, format.height == height, interval == V4L2Fraction(1, fps) else {
            throw DaemonFailure("vivid took \(format) at \(interval), not \(fourcc) \(width)x\(height) at \(fps) fps")
        }
    }

    /// camerad with V4L2 on (and no virtual camera asked for) on a temporary socket.
    static func withDaemon<T>(arguments: [String] = [], _ body: (DaemonProcess) async throws -> T) async throws -> T {
        try await withRunningDaemon(virtualCameras: nil, arguments: arguments, timeout: .seconds(60), body)
    }

    /// `camctl ... --json` decoded.
    static func json(_ result: ProcessResult) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8))
    }
}
