import Foundation
import Glibc

/// The V4L2 row of `make bench`: camerad sharing a real driver's buffers with
/// one client (vivid, in the VM `scripts/vivid-vm` boots), against
/// `v4l2-ctl --stream-mmap` reading the same node alone — the floor for any
/// program that takes a camera's frames. Both run in the same VM, one after
/// the other; its CPU is emulated, so its figures compare only with each other.
struct V4L2Figures: Codable {
    /// "YUYV 640x480 at 30 fps"
    var mode: String
    /// Frames v4l2-ctl read in the measured window, and its CPU per frame.
    var floorFrames: Int
    var floorMicroseconds: Double
    /// Frames the client got in the window; CPU per frame of camerad and the
    /// client together, and of camerad alone.
    var frames: Int
    var cameradMicroseconds: Double
    var daemonMicroseconds: Double
    /// Frames camerad copied (or converted) per frame the driver made.
    var copiesPerFrame: Double

    var ratio: Double { floorMicroseconds > 0 ? cameradMicroseconds / floorMicroseconds : 0 }

    var lines: String {
        """
          run                            frames  copies/frame  CPU/frame (all processes)
          \(padded("v4l2-ctl --stream-mmap, alone", 30)) \(String(format: "%6d", floorFrames))  \(padded("–", 12, right: true))  \(String(format: "%10.1f µs", floorMicroseconds))
          \(padded("camerad + camctl stream", 30)) \(String(format: "%6d  %12.2f  %10.1f µs  (camerad's own: %.1f µs)", frames, copiesPerFrame, cameradMicroseconds, daemonMicroseconds))
          camerad ÷ v4l2-ctl, CPU per frame: \(String(format: "%.2f", ratio))
        """
    }
}

extension Bench {
    /// How the guest's figures reach the host: the line that starts with this.
    static let v4l2Marker = "v4l2 figures: "
    static let v4l2Mode = (fourcc: "YUYV", width: 640, height: 480, fps: 30)

    /// On the host: boots the VM with `script` and measures there.
    func v4l2(vm script: String) throws -> V4L2Figures {
        let output = try run(script, ["--timeout", "600", "--", bin + "/camerad-bench", "--v4l2-guest",
                                      "--duration", "\(Int(seconds))"])
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix(Self.v4l2Marker) }) else {
            throw BenchError("the VM printed no figures: \(output.suffix(2000))")
        }
        return try JSONDecoder().decode(V4L2Figures.self, from: Data(line.dropFirst(Self.v4l2Marker.count).utf8))
    }

    /// Inside the VM: measures, then prints the figures as one line for the host.
    func v4l2Guest() throws {
        let figures = try measureV4L2()
        print(Self.v4l2Marker + String(decoding: try JSONEncoder().encode(figures), as: UTF8.self))
    }

    private func measureV4L2() throws -> V4L2Figures {
        guard let (node, uniqueID) = Self.vividNode() else {
            throw BenchError("no vivid capture node in /sys/class/video4linux")
        }
        let mode = Self.v4l2Mode
        try run("/usr/bin/v4l2-ctl", ["-d", node, "--set-fmt-video=width=\(mode.width),height=\(mode.height),pixelformat=\(mode.fourcc)",
                                      "--set-parm=\(mode.fps)"])

        // The floor: v4l2-ctl prints a '<' for each frame it dequeues.
        let reader = try Child("/usr/bin/v4l2-ctl", ["-d", node, "--stream-mmap", "--stream-count=100000000"])
        func framesRead() -> Int { reader.outputSoFar.reduce(0) { $0 + ($1 == "<" ? 1 : 0) } }
        try waitUntil("v4l2-ctl's first frame", seconds: 60) { framesRead() > 0 }
        usleep(Self.warmUp)
        let floorBefore = (cpu: ProcessMeter.cpuSeconds(reader.pid), frames: framesRead())
        usleep(useconds_t(seconds * 1e6))
        let floorAfter = (cpu: ProcessMeter.cpuSeconds(reader.pid), frames: framesRead())
        reader.signal(SIGINT)
        _ = reader.finish()
        let floorFrames = floorAfter.frames - floorBefore.frames

        // camerad, the node's own format shared with one client.
        let directory = NSTemporaryDirectory() + "camerad-bench-v4l2-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/camerad.sock"
        let daemon = try Child(camerad, ["--socket", socket, "--virtual-cameras", "0", "--log-level", "error",
                                         "--state-dir", directory + "/state"])
        defer {
            daemon.signal(SIGTERM)
            _ = daemon.finish()
        }
        try waitUntil("camerad to serve \(uniqueID)", seconds: 120) { (try? statistics(socket, device: uniqueID)) != nil }
        let row = try streams(of: uniqueID, clients: 1, daemon: daemon, socket: socket, seconds: seconds, patience: 60)
        return V4L2Figures(
            mode: "\(mode.fourcc) \(mode.width)x\(mode.height) at \(mode.fps) fps",
            floorFrames: floorFrames,
            floorMicroseconds: floorFrames > 0 ? (floorAfter.cpu - floorBefore.cpu) / Double(floorFrames) * 1e6 : 0,
            frames: row.framesDelivered,
            cameradMicroseconds: row.totalCPUPerFrame * 1e6,
            daemonMicroseconds: row.serverCPUPerFrame * 1e6,
            copiesPerFrame: row.copiesPerSourceFrame ?? 0)
    }

    /// The first vivid capture node and the uniqueID camerad gives it (from
    /// its bus info: "platform:vivid-000" → "platform-vivid-000").
    static func vividNode() -> (path: String, uniqueID: String)? {
        let folder = "/sys/class/video4linux"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.sorted().compactMap { name -> (String, String)? in
            guard let label = try? String(contentsOfFile: "\(folder)/\(name)/name", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines),
                label.hasPrefix("vivid-"), label.hasSuffix("-vid-cap") else { return nil }
            return ("/dev/\(name)", "platform-" + label.dropLast("-vid-cap".count))
        }.first
    }
}
