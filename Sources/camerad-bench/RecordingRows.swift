import Foundation
import Glibc

/// Issue 35's sharing figure: one camera at 1080p30 (its moving, stamped test
/// picture) recorded by 1 and by 3 `camctl record` processes at the same
/// settings — camerad encodes once for all of them, so 3 should cost about
/// what 1 does (goal: at most 1.05×). CPU is camerad's and the recorders'
/// (user + system) over each run's window, after a warm-up; every recorder's
/// frames are accounted for by what it printed at its end.
struct RecordingRow {
    let recorders: Int
    var cpu = CPUSample(server: 0, clients: 0)
    var seconds: Double = 0
    var frames = 0
    var framesDropped = 0

    func adding(_ other: RecordingRow) -> RecordingRow {
        RecordingRow(recorders: recorders, cpu: CPUSample(server: cpu.server + other.cpu.server, clients: cpu.clients + other.cpu.clients),
                     seconds: seconds + other.seconds, frames: frames + other.frames, framesDropped: framesDropped + other.framesDropped)
    }

    /// CPU milliseconds per second of video.
    var millisecondsPerSecond: Double { seconds > 0 ? cpu.total * 1000 / seconds : 0 }

    var line: String {
        String(format: "  %9d  %13.1f  %13.1f  %12.1f  %8d  %7d", recorders, cpu.server * 1000 / max(seconds, 1e-9),
               cpu.clients * 1000 / max(seconds, 1e-9), millisecondsPerSecond, frames, framesDropped)
    }

    static let header = "  recorders  camerad ms/s   recorders ms/s  total ms/s     frames  dropped"
}

extension Bench {
    /// One run: a daemon with a 1080p30 NV12 virtual camera, `recorders`
    /// camctl record processes writing to a temporary folder.
    func recording(recorders: Int) throws -> RecordingRow {
        let directory = NSTemporaryDirectory() + "camerad-bench-record-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/camerad.sock"
        let daemon = try Child(camerad, ["--socket", socket, "--virtual-cameras", "0", "--log-level", "error"])
        defer {
            daemon.signal(SIGTERM)
            _ = daemon.finish()
        }
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) { usleep(20_000) }
        usleep(50_000)
        try run(camctl, ["--socket", socket, "virtual", "add", "--format", "NV12", "--size", "1920x1080", "--fps", "30"])
        let children = try (0..<recorders).map { index in
            try Child(camctl, ["--socket", socket, "record", "0", "\(directory)/movie-\(index).mp4", "--size", "1920x1080",
                               "--fps", "30", "--json"])
        }
        var finished = false
        defer { if !finished { children.forEach { $0.signal(SIGKILL) } } }
        try waitUntil("\(recorders) recordings to start") {
            (0..<recorders).allSatisfy { index in
                ((try? FileManager.default.attributesOfItem(atPath: "\(directory)/movie-\(index).mp4"))?[.size] as? Int ?? 0) > 0
            }
        }
        usleep(Self.warmUp)
        let before = CPUSample(server: daemon.pid, clients: children.map(\.pid))
        usleep(useconds_t(window * 1e6))
        let after = CPUSample(server: daemon.pid, clients: children.map(\.pid))
        for child in children { child.signal(SIGINT) }
        var row = RecordingRow(recorders: recorders, cpu: after - before, seconds: window)
        for child in children {
            let output = child.finish()
            guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
                  let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  json["ending"] as? String == "stopped" else {
                throw BenchError("camctl record printed: \(output)")
            }
            row.frames += json["frames"] as? Int ?? 0
            row.framesDropped += json["framesDropped"] as? Int ?? 0
        }
        finished = true
        return row
    }

    /// 1 and 3 recorders, `rounds` runs each, in turn.
    func recordingShare(rounds: Int) throws -> [Int: RecordingRow] {
        var rows: [Int: RecordingRow] = [:]
        for round in 0..<rounds {
            for recorders in round.isMultiple(of: 2) ? [1, 3] : [3, 1] {
                FileHandle.standardError.write(Data("camerad-bench: recording, \(recorders) recorder(s), round \(round + 1) of \(rounds)\n".utf8))
                let run = try recording(recorders: recorders)
                rows[recorders] = rows[recorders].map { $0.adding(run) } ?? run
            }
        }
        return rows
    }
}

func printRecording(_ bench: Bench, rounds: Int) throws -> [Int: RecordingRow] {
    print("Recording: one virtual camera, NV12 1920x1080 at 30 fps (its moving, stamped picture), recorded to H.264 1080p30")
    print("(libx264 veryfast, CRF 23) by 1 and by 3 camctl record processes at once, \(rounds) runs each in turn; CPU (user +")
    print("system) of camerad and the recorders over each run's \(bench.window) s after a \(Double(Bench.warmUp) / 1e6) s warm-up:")
    let rows = try bench.recordingShare(rounds: rounds)
    print(RecordingRow.header)
    for recorders in [1, 3] { rows[recorders].map { print($0.line) } }
    if let one = rows[1], let three = rows[3], one.millisecondsPerSecond > 0 {
        print(String(format: "  3 recorders ÷ 1, total CPU: %.2f (the goal: at most 1.05; the encoder is shared)",
                     three.millisecondsPerSecond / one.millisecondsPerSecond))
    }
    return rows
}
