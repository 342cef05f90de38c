import CameraMedia
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
    /// `camctl record --sync`: nil for the default (every fragment).
    var sync: String?
    var cpu = CPUSample(server: 0, clients: 0)
    var seconds: Double = 0
    var frames = 0
    var framesDropped = 0
    /// The files' fdatasync calls, and the longest of them.
    var fileSyncs = 0
    var longestSyncMilliseconds = 0.0

    func adding(_ other: RecordingRow) -> RecordingRow {
        RecordingRow(recorders: recorders, sync: sync,
                     cpu: CPUSample(server: cpu.server + other.cpu.server, clients: cpu.clients + other.cpu.clients),
                     seconds: seconds + other.seconds, frames: frames + other.frames, framesDropped: framesDropped + other.framesDropped,
                     fileSyncs: fileSyncs + other.fileSyncs, longestSyncMilliseconds: max(longestSyncMilliseconds, other.longestSyncMilliseconds))
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
    func recording(recorders: Int, sync: String? = nil) throws -> RecordingRow {
        try withDaemon(size: "1920x1080", stillPicture: false) { daemon, socket, directory in
            try recording(recorders: recorders, sync: sync, daemon: daemon, socket: socket, directory: directory)
        }
    }

    private func recording(recorders: Int, sync: String?, daemon: Child, socket: String, directory: String) throws -> RecordingRow {
        let children = try (0..<recorders).map { index in
            try Child(camctl, ["--socket", socket, "record", "0", "\(directory)/movie-\(index).mp4", "--size", "1920x1080",
                               "--fps", "30", "--json"] + (sync.map { ["--sync", $0] } ?? []))
        }
        var finished = false
        defer { if !finished { children.forEach { $0.signal(SIGKILL) } } }
        try waitUntil("\(recorders) recordings to start") {
            (0..<recorders).allSatisfy { index in
                fileSize("\(directory)/movie-\(index).mp4") > 0
            }
        }
        usleep(Self.warmUp)
        let before = CPUSample(server: daemon.pid, clients: children.map(\.pid))
        usleep(useconds_t(window * 1e6))
        let after = CPUSample(server: daemon.pid, clients: children.map(\.pid))
        for child in children { child.signal(SIGINT) }
        var row = RecordingRow(recorders: recorders, sync: sync, cpu: after - before, seconds: window)
        for child in children {
            let output = child.finish()
            guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
                  let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  json["ending"] as? String == "stopped" else {
                throw BenchError("camctl record printed: \(output)")
            }
            row.frames += json["frames"] as? Int ?? 0
            row.framesDropped += json["framesDropped"] as? Int ?? 0
            row.fileSyncs += json["fileSyncs"] as? Int ?? 0
            row.longestSyncMilliseconds = max(row.longestSyncMilliseconds, json["longestSyncMilliseconds"] as? Double ?? 0)
        }
        finished = true
        return row
    }

    /// One recorder synced every fragment (the default) and one not (`--sync none`), `rounds` runs each, in turn.
    func recordingSync(rounds: Int) throws -> (synced: RecordingRow, unsynced: RecordingRow) {
        var rows: [String: RecordingRow] = [:]
        for round in 0..<rounds {
            for sync in round.isMultiple(of: 2) ? ["fragment", "none"] : ["none", "fragment"] {
                FileHandle.standardError.write(Data("camerad-bench: recording synced: \(sync), round \(round + 1) of \(rounds)\n".utf8))
                let run = try recording(recorders: 1, sync: sync)
                rows[sync] = rows[sync].map { $0.adding(run) } ?? run
            }
        }
        return (rows["fragment"]!, rows["none"]!)
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

func printRecording(_ bench: Bench, rounds: Int) throws -> (share: [Int: RecordingRow], synced: RecordingRow, unsynced: RecordingRow) {
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
    print("Durability: one recorder as above, its file synced after every fragment (fdatasync on the recording's syncer")
    print("thread; the default) against --sync none, \(rounds) runs each in turn:")
    let (synced, unsynced) = try bench.recordingSync(rounds: rounds)
    print("  sync       total ms/s  fdatasync calls  longest (the last fragment's wait to be on the disk)")
    for row in [synced, unsynced] {
        print("  " + (row.sync ?? "fragment").padding(toLength: 9, withPad: " ", startingAt: 0)
              + String(format: "  %10.1f  %15d  %.1f ms", row.millisecondsPerSecond, row.fileSyncs, row.longestSyncMilliseconds))
    }
    if unsynced.millisecondsPerSecond > 0 {
        print(String(format: "  synced ÷ unsynced, total CPU: %.2f", synced.millisecondsPerSecond / unsynced.millisecondsPerSecond))
    }
    return (rows, synced, unsynced)
}

/// Issue 35's mixed load: one camera at 1080p30 with one recording (H.264 +
/// AAC from a microphone) and two clients (one native NV12 1080p, one BGRA
/// 640x360), against one GStreamer process doing the same with a `tee`
/// (`x264enc` + `avenc_aac` + `mp4mux`, two `shmsink`s, each with a `shmsrc`
/// consumer process). Both sides encode one picture, the virtual camera's
/// still one (camerad makes it; GStreamer reads the same frames from files), each its own tone.
/// Goal: camerad's total CPU at most GStreamer's. Later features (a QR scan,
/// a preview) join both sides as they land.
struct MixedLoadRow {
    var camerad = CPUSample(server: 0, clients: 0)
    var gstreamer = CPUSample(server: 0, clients: 0)
    var seconds: Double = 0
    /// Every client's frames over the run: delivered, and reported dropped.
    var cameradFrames = 0, cameradDropped = 0, recordedFrames = 0
    var gstreamerFrames = 0

    func adding(_ other: MixedLoadRow) -> MixedLoadRow {
        var sum = self
        sum.camerad = CPUSample(server: camerad.server + other.camerad.server, clients: camerad.clients + other.camerad.clients)
        sum.gstreamer = CPUSample(server: gstreamer.server + other.gstreamer.server, clients: gstreamer.clients + other.gstreamer.clients)
        sum.seconds += other.seconds
        sum.cameradFrames += other.cameradFrames
        sum.cameradDropped += other.cameradDropped
        sum.recordedFrames += other.recordedFrames
        sum.gstreamerFrames += other.gstreamerFrames
        return sum
    }
}

extension Bench {
    /// camerad's side of one run.
    func mixedLoadCamerad(into row: inout MixedLoadRow) throws {
        try withDaemon(size: "1920x1080", stillPicture: true, microphones: 1) { daemon, socket, directory in
            try mixedLoadCamerad(daemon: daemon, socket: socket, directory: directory, into: &row)
        }
    }

    private func mixedLoadCamerad(daemon: Child, socket: String, directory: String, into row: inout MixedLoadRow) throws {
        let skip = String(Int(Double(Self.warmUp) / 1e6 * 30))
        let movie = directory + "/movie.mp4"
        let children = [
            try Child(camctl, ["--socket", socket, "record", "0", movie, "--audio", "virtual-microphone-0", "--size", "1920x1080",
                               "--fps", "30", "--json"]),
            try Child(camctl, ["--socket", socket, "stream", "0", "--skip", skip, "--json"]),
            try Child(camctl, ["--socket", socket, "stream", "0", "--pixel-format", "bgra", "--size", "640x360", "--skip", skip, "--json"]),
        ]
        var finished = false
        defer { if !finished { children.forEach { $0.signal(SIGKILL) } } }
        try waitUntil("the recording and two streams") {
            let streams = try statistics(socket).streams
            return fileSize(movie) > 0 && streams >= 3
        }
        usleep(Self.warmUp)
        let before = CPUSample(server: daemon.pid, clients: children.map(\.pid))
        usleep(useconds_t(window * 1e6))
        let after = CPUSample(server: daemon.pid, clients: children.map(\.pid))
        children.forEach { $0.signal(SIGINT) }
        let outputs = children.map { $0.finish() }
        finished = true
        row.camerad = CPUSample(server: row.camerad.server + (after - before).server, clients: row.camerad.clients + (after - before).clients)
        let recorded = try Self.report(outputs[0])
        guard recorded["ending"] as? String == "stopped" else { throw BenchError("camctl record printed: \(outputs[0])") }
        row.recordedFrames += recorded["frames"] as? Int ?? 0
        row.cameradDropped += recorded["framesDropped"] as? Int ?? 0
        for output in outputs.dropFirst() {
            let report = try Self.report(output)
            row.cameradFrames += report["frames"] as? Int ?? 0
            row.cameradDropped += (report["drops"] as? [String: Int])?.values.reduce(0, +) ?? 0
        }
    }

    /// GStreamer's side of one run: one pipeline with a tee, two consumer
    /// processes. Its picture is camerad's, frame for frame: the still frames
    /// in `frames` (``writeStillPicture(frames:to:)``, one file each), looped by
    /// multifilesrc, timestamped at 30 fps by rawvideoparse and paced to the clock by clocksync.
    func mixedLoadGStreamer(launcher: String, frames: String, into row: inout MixedLoadRow) throws {
        let directory = NSTemporaryDirectory() + "camerad-bench-mixed-gst-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (native, small) = (directory + "/native.sock", directory + "/small.sock")
        let nativeCaps = CameradBench.caps
        let smallCaps = "video/x-raw,format=BGRA,width=640,height=360,framerate=30/1"
        let pipeline = try Child(launcher, ["-q", "-e",
            "multifilesrc", "location=\(frames)", "index=0", "stop-index=\(Self.stillFrames - 1)", "loop=true", "caps=\(nativeCaps)", "!",
            "rawvideoparse", "use-sink-caps=true", "!", "clocksync", "!", "tee", "name=t",
            "t.", "!", "queue", "!", "x264enc", "speed-preset=veryfast", "pass=qual", "quantizer=23", "bframes=0", "key-int-max=60", "!",
            "h264parse", "!", "mp4mux", "name=mux", "fragment-duration=10000", "!", "filesink", "location=\(directory)/movie.mp4", "async=false",
            "audiotestsrc", "is-live=true", "!", "audio/x-raw,rate=48000,channels=2", "!", "audioconvert", "!", "avenc_aac", "!", "mux.",
            "t.", "!", "queue", "!", "shmsink", "socket-path=\(native)", "shm-size=\(CameradBench.frameBytes * 8)",
            "wait-for-connection=false", "sync=false", "async=false",
            "t.", "!", "queue", "!", "videoconvert", "!", "videoscale", "!", smallCaps, "!", "shmsink", "socket-path=\(small)",
            "shm-size=\(640 * 360 * 4 * 8)", "wait-for-connection=false", "sync=false", "async=false",
        ])
        // async=false on every sink: with x264enc's lookahead in one branch, the live pipeline's asynchronous
        // state change never completed and no branch ran (the shmsinks sent nothing).
        // Its EOS may never come through a shmsink its consumer left: interrupted, then killed.
        defer { _ = pipeline.stop() }
        try waitUntil("GStreamer's pipeline") { FileManager.default.fileExists(atPath: native) && FileManager.default.fileExists(atPath: small) }
        let consumers = try [(native, nativeCaps), (small, smallCaps)].map { socket, caps in
            try Child(launcher, Self.plainConsumer(socket, caps: caps))
        }
        var finished = false
        defer { if !finished { consumers.forEach { $0.signal(SIGKILL) } } }
        try waitUntil("GStreamer's consumers") { consumers.allSatisfy { Self.counted($0.outputSoFar) != nil } }
        usleep(Self.warmUp)
        let before = (cpu: CPUSample(server: pipeline.pid, clients: consumers.map(\.pid)), counts: consumers.map { Self.counted($0.outputSoFar) })
        usleep(useconds_t(window * 1e6))
        let after = (cpu: CPUSample(server: pipeline.pid, clients: consumers.map(\.pid)), counts: consumers.map { Self.counted($0.outputSoFar) })
        consumers.forEach { _ = $0.stop() }
        finished = true
        let cpu = after.cpu - before.cpu
        row.gstreamer = CPUSample(server: row.gstreamer.server + cpu.server, clients: row.gstreamer.clients + cpu.clients)
        let rates = zip(before.counts, after.counts).map { Self.framesPerSecond(from: $0, to: $1) }
        row.gstreamerFrames += Int((rates.reduce(0, +) * window).rounded())
    }

    func mixedLoad(rounds: Int, launcher: String) throws -> MixedLoadRow {
        let folder = NSTemporaryDirectory() + "camerad-bench-still-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Self.writeStillPicture(frames: Self.stillFrames, to: folder + "/frame-%03d.nv12")
        var row = MixedLoadRow()
        for round in 0..<rounds {
            FileHandle.standardError.write(Data("camerad-bench: mixed load, round \(round + 1) of \(rounds)\n".utf8))
            if round.isMultiple(of: 2) {
                try mixedLoadCamerad(into: &row)
                try mixedLoadGStreamer(launcher: launcher, frames: folder + "/frame-%03d.nv12", into: &row)
            } else {
                try mixedLoadGStreamer(launcher: launcher, frames: folder + "/frame-%03d.nv12", into: &row)
                try mixedLoadCamerad(into: &row)
            }
            row.seconds += window
        }
        return row
    }
}

func printMixedLoad(_ bench: Bench, rounds: Int, launcher: String?) throws -> MixedLoadRow? {
    print("Mixed load: one camera at NV12 1080p30 with one recording (H.264 1080p30 + AAC from a microphone) and two clients")
    print("(native NV12 1080p; BGRA 640x360): camerad (camctl record, 2 × camctl stream) against one GStreamer pipeline with a")
    print("tee (x264enc veryfast quality 23 + avenc_aac + mp4mux; 2 shmsinks, each read by a shmsrc process), both the same")
    print("picture (camerad's still one; GStreamer reads its frames from files); \(rounds) runs each in turn, CPU (user + system,")
    print("every process) over each run's \(bench.window) s:")
    guard let launcher else {
        print("  not measured: gst-launch-1.0 not found (make bench installs it)")
        return nil
    }
    let row = try bench.mixedLoad(rounds: rounds, launcher: launcher)
    let seconds = max(row.seconds, 1e-9)
    print(String(format: "  camerad:   %.1f ms/s (camerad %.1f, clients %.1f); streamed %d frames, %d reported dropped; recorded %d frames",
                 row.camerad.total * 1000 / seconds, row.camerad.server * 1000 / seconds, row.camerad.clients * 1000 / seconds,
                 row.cameradFrames, row.cameradDropped, row.recordedFrames))
    print(String(format: "  GStreamer: %.1f ms/s (pipeline %.1f, consumers %.1f); %d frames consumed (shmsink drops none)",
                 row.gstreamer.total * 1000 / seconds, row.gstreamer.server * 1000 / seconds, row.gstreamer.clients * 1000 / seconds,
                 row.gstreamerFrames))
    if row.gstreamer.total > 0 {
        print(String(format: "  camerad ÷ GStreamer, total CPU: %.2f (the goal: at most 1.0)", row.camerad.total / row.gstreamer.total))
    }
    return row
}

/// Issue 47's end-to-end figure: `camctl record` of a 1080p30 NV12 camera —
/// camerad's capture, its encoder reading the camera's NV12 in place, the
/// recorder's muxing, camctl — against the ffmpeg CLI encoding the same
/// pictures at the same pace with the same x264 settings (veryfast, CRF 23,
/// no B-frames, a keyframe every 2 s, fragmented MP4, no file sync on either
/// side). The picture is the virtual camera's still one (its bars drawn once,
/// the stamp blocks redrawn each frame), which costs nearly nothing to make;
/// ffmpeg reads the same frames, made by the same ``TestPattern``, from a raw
/// file looped at 30 fps (`-re -stream_loop -1`). CPU is every process's over
/// the window after a warm-up. Goal: at most 1.0×.
struct EndToEndRecordingRow {
    var camerad = CPUSample(server: 0, clients: 0)
    var ffmpeg = 0.0
    var seconds = 0.0
    var recordedFrames = 0
    var framesDropped = 0
}

extension Bench {
    func endToEndRecording(rounds: Int) throws -> EndToEndRecordingRow {
        let folder = NSTemporaryDirectory() + "camerad-bench-end-to-end-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let raw = folder + "/still.nv12"
        try Self.writeStillPicture(frames: Self.stillFrames, to: raw)
        var row = EndToEndRecordingRow()
        for round in 0..<rounds {
            FileHandle.standardError.write(Data("camerad-bench: recording end to end, round \(round + 1) of \(rounds)\n".utf8))
            if round.isMultiple(of: 2) {
                try endToEndCamerad(into: &row)
                row.ffmpeg += try endToEndFFmpeg(raw: raw, output: folder + "/ffmpeg.mp4")
            } else {
                row.ffmpeg += try endToEndFFmpeg(raw: raw, output: folder + "/ffmpeg.mp4")
                try endToEndCamerad(into: &row)
            }
            row.seconds += window
        }
        return row
    }

    /// Frames of the still picture the peers of camerad read (two seconds, looped).
    static let stillFrames = 60

    /// `frames` NV12 1080p frames of the virtual camera's still picture, as it makes them: the bars drawn
    /// once, then only the stamp blocks that change. One raw file, or with a `%03d` in `path` a file a frame.
    static func writeStillPicture(frames: Int, to path: String) throws {
        let (width, height) = (CameradBench.width, CameradBench.height)
        let pattern = TestPattern(width: width, height: height)
        var frame = [UInt8](repeating: 0, count: pattern.frameSize(.nv12))
        let perFrame = path.contains("%03d")
        var file: FileHandle?
        defer { try? file?.close() }
        var drawn: FrameStamp?
        for index in 0..<frames {
            let stamp = FrameStamp(sequence: UInt32(index), timestampNanoseconds: Int64(index) * 33_333_333)
            frame.withUnsafeMutableBytes { pattern.render(stamp, format: .nv12, into: $0, over: drawn) }
            drawn = stamp
            if file == nil || perFrame {
                try? file?.close()
                let name = perFrame ? path.replacingOccurrences(of: "%03d", with: String(format: "%03d", index)) : path
                guard FileManager.default.createFile(atPath: name, contents: nil), let opened = FileHandle(forWritingAtPath: name) else {
                    throw BenchError("cannot write \(name)")
                }
                file = opened
            }
            file?.write(Data(frame))
        }
    }

    private func endToEndCamerad(into row: inout EndToEndRecordingRow) throws {
        try withDaemon(size: "1920x1080", stillPicture: true) { daemon, socket, directory in
            let movie = directory + "/movie.mp4"
            let recorder = try Child(camctl, ["--socket", socket, "record", "0", movie, "--size", "1920x1080", "--fps", "30",
                                              "--keyframe-interval", "60", "--sync", "none", "--json"])
            var finished = false
            defer { if !finished { recorder.signal(SIGKILL) } }
            try waitUntil("the recording") { fileSize(movie) > 0 }
            usleep(Self.warmUp)
            let before = CPUSample(server: daemon.pid, clients: [recorder.pid])
            usleep(useconds_t(window * 1e6))
            let after = CPUSample(server: daemon.pid, clients: [recorder.pid])
            recorder.signal(SIGINT)
            let report = try Self.report(recorder.finish())
            finished = true
            guard report["ending"] as? String == "stopped" else { throw BenchError("camctl record printed: \(report)") }
            let cpu = after - before
            row.camerad = CPUSample(server: row.camerad.server + cpu.server, clients: row.camerad.clients + cpu.clients)
            row.recordedFrames += report["frames"] as? Int ?? 0
            row.framesDropped += report["framesDropped"] as? Int ?? 0
        }
    }

    /// ffmpeg's side of one run: its CPU seconds over the window.
    private func endToEndFFmpeg(raw: String, output: String) throws -> Double {
        unlink(output)
        let ffmpeg = try Child("/usr/bin/ffmpeg", [
            "-v", "error", "-y", "-re", "-stream_loop", "-1", "-f", "rawvideo", "-pix_fmt", "nv12",
            "-s", "\(CameradBench.width)x\(CameradBench.height)", "-r", "30", "-i", raw,
            "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-bf", "0", "-g", "60",
            "-movflags", "frag_keyframe+empty_moov+default_base_moof", output,
        ])
        defer { _ = ffmpeg.stop() }
        try waitUntil("ffmpeg's recording") { fileSize(output) > 0 }
        usleep(Self.warmUp)
        let before = ProcessMeter.cpuSeconds(ffmpeg.pid)
        usleep(useconds_t(window * 1e6))
        return ProcessMeter.cpuSeconds(ffmpeg.pid) - before
    }
}

func printEndToEndRecording(_ bench: Bench, rounds: Int) throws -> EndToEndRecordingRow {
    print("Recording end to end: camctl record of a virtual camera's NV12 1080p30 still picture (H.264 veryfast, CRF 23,")
    print("no B-frames, a keyframe every 2 s, fragmented MP4, --sync none) against ffmpeg -re encoding the same pictures")
    print("from a raw NV12 file with the same settings, \(rounds) runs each in turn; CPU of every process over each run's \(bench.window) s:")
    let row = try bench.endToEndRecording(rounds: rounds)
    let seconds = max(row.seconds, 1e-9)
    print(String(format: "  camerad:  %.1f ms/s (camerad %.1f, camctl %.1f); recorded %d frames, %d dropped",
                 row.camerad.total * 1000 / seconds, row.camerad.server * 1000 / seconds, row.camerad.clients * 1000 / seconds,
                 row.recordedFrames, row.framesDropped))
    print(String(format: "  ffmpeg:   %.1f ms/s", row.ffmpeg * 1000 / seconds))
    if row.ffmpeg > 0 {
        print(String(format: "  camerad ÷ ffmpeg, total CPU: %.2f (the goal: at most 1.0)", row.camerad.total / row.ffmpeg))
    }
    return row
}
