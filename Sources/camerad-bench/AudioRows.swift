import Foundation
import Glibc

/// Issue 34's figures: one virtual microphone (48 kHz stereo float, 10 ms
/// periods) heard by N `camctl listen` processes (CaptureKit), and by N of
/// the C library's `camerad-stream --audio`, against GStreamer's
/// `audiotestsrc ! shmsink` heard by N `shmsrc` processes, measured the same
/// way: all their CPU over a window of steady state, per second of audio.
struct AudioRow {
    let label: String
    let listeners: Int
    /// User + system CPU of every process (server and listeners) over the window.
    let cpu: CPUSample
    let seconds: Double
    /// Periods the listeners got; nil where they do not say (GStreamer's fakesink).
    let periods: Int?
    let drops: Int
    /// From each period's capture to the listener; nil where the listeners do not say.
    let latency: LatencyHistogram?

    /// CPU milliseconds, all processes together, per second of audio.
    var totalMillisecondsPerAudioSecond: Double { cpu.total / seconds * 1e3 }
    var serverMillisecondsPerAudioSecond: Double { cpu.server / seconds * 1e3 }

    func adding(_ other: AudioRow) -> AudioRow {
        AudioRow(label: label, listeners: listeners,
                 cpu: CPUSample(server: cpu.server + other.cpu.server, clients: cpu.clients + other.cpu.clients),
                 seconds: seconds + other.seconds, periods: periods.flatMap { ours in other.periods.map { ours + $0 } },
                 drops: drops + other.drops,
                 latency: latency.flatMap { ours in other.latency.map { ours.adding($0) } })
    }

    static let header = "  \(padded("run", 10)) listeners  periods  drops  latency p50/p99/max ms  server CPU ms/s of audio  total CPU ms/s of audio"

    var line: String {
        let latency = self.latency.map {
            String(format: "%.2f / %.2f / %.2f", $0.milliseconds(atPercentile: 0.5), $0.milliseconds(atPercentile: 0.99),
                   $0.milliseconds(atPercentile: 1))
        } ?? "–"
        return "  \(padded(label, 10)) " + String(format: "%9d  ", listeners) + padded(periods.map(String.init) ?? "–", 7, right: true)
            + String(format: "  %5d  ", drops) + padded(latency, 22)
            + String(format: "  %24.2f  %23.2f", serverMillisecondsPerAudioSecond, totalMillisecondsPerAudioSecond)
    }
}

/// The audio rows, by number of listeners: camerad's to CaptureKit's and to
/// the C library's listeners, and GStreamer's.
struct AudioRows {
    var captureKit: [Int: AudioRow] = [:]
    var c: [Int: AudioRow] = [:]
    var gstreamer: [Int: AudioRow] = [:]

    static func add(_ row: AudioRow, to rows: inout [Int: AudioRow]) {
        rows[row.listeners] = rows[row.listeners].map { $0.adding(row) } ?? row
    }
}

extension Bench {
    static let audioCaps = "audio/x-raw,format=F32LE,rate=48000,channels=2,layout=interleaved"

    /// Who hears camerad's microphone in a row.
    enum AudioListener {
        /// `camctl listen`: CaptureKit's audio data output.
        case camctl
        /// The C library's `camerad-stream --audio` at this path.
        case c(String)
    }

    /// The audio rows at each number of listeners, `rounds` runs each, in turn;
    /// the C rows when `cClient` is built.
    func audioFanOut(rounds: Int, listenerCounts: [Int], gstreamer launcher: String?, cClient: String?) throws -> AudioRows {
        var rows = AudioRows()
        for round in 1...rounds {
            FileHandle.standardError.write(Data("camerad-bench: audio, round \(round) of \(rounds)\n".utf8))
            for listeners in round.isMultiple(of: 2) ? listenerCounts.reversed() : listenerCounts {
                AudioRows.add(try audioListeners(listeners, .camctl), to: &rows.captureKit)
                if let cClient { AudioRows.add(try audioListeners(listeners, .c(cClient)), to: &rows.c) }
                if let launcher {
                    AudioRows.add(try gstreamerAudio(listeners: listeners, launcher: launcher), to: &rows.gstreamer)
                }
            }
        }
        return rows
    }

    /// N listeners on one virtual microphone of a daemon of their own.
    func audioListeners(_ listeners: Int, _ listener: AudioListener) throws -> AudioRow {
        let directory = NSTemporaryDirectory() + "camerad-bench-audio-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/camerad.sock"
        let daemon = try Child(camerad, ["--socket", socket, "--virtual-cameras", "0", "--virtual-microphones", "1",
                                         "--log-level", "error"])
        defer {
            daemon.signal(SIGTERM)
            _ = daemon.finish()
        }
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) { usleep(20_000) }
        usleep(50_000)
        // The warm-up's periods (100 a second) are left out of each listener's figures.
        let skip = String(Int(Double(Self.warmUp) / 1e6 * 100))
        let clients = try (0..<listeners).map { _ in
            switch listener {
            case .camctl:
                try Child(camctl, ["--socket", socket, "listen", "virtual-microphone-0", "--skip", skip, "--json"])
            case .c(let path):
                try Child(path, ["virtual-microphone-0", "--audio", "--count", "0", "--skip", skip, "--json", "--socket", socket])
            }
        }
        var finished = false
        defer { if !finished { clients.forEach { $0.signal(SIGKILL) } } }
        usleep(Self.warmUp)
        let before = CPUSample(server: daemon.pid, clients: clients.map(\.pid))
        usleep(useconds_t(window * 1e6))
        let after = CPUSample(server: daemon.pid, clients: clients.map(\.pid))
        clients.forEach { $0.signal(SIGINT) }
        let reports = try clients.map { client in
            let output = client.finish()
            do {
                return try Self.report(output)
            } catch {
                throw BenchError("a listener printed: \(output)")
            }
        }
        finished = true
        let histograms = reports.compactMap { LatencyHistogram($0["latencyHistogram"]) }
        let label = switch listener {
        case .camctl: "camerad"
        case .c: "camerad C"
        }
        return AudioRow(label: label, listeners: listeners, cpu: after - before, seconds: window,
                        periods: reports.compactMap { $0["frames"] as? Int }.reduce(0, +),
                        drops: reports.compactMap { ($0["drops"] as? [String: Int])?.values.reduce(0, +) }.reduce(0, +),
                        latency: histograms.count == reports.count ? histograms.reduce(LatencyHistogram()) { $0.adding($1) } : nil)
    }

    /// The same through GStreamer: a live 48 kHz stereo float tone in 10 ms
    /// buffers into shmsink, and N shmsrc consumers into fakesink.
    func gstreamerAudio(listeners: Int, launcher: String) throws -> AudioRow {
        let socket = NSTemporaryDirectory() + "camerad-bench-gst-audio-\(getpid()).sock"
        unlink(socket)
        defer { unlink(socket) }
        let caps = Self.audioCaps
        let producer = try Child(launcher, ["-q", "audiotestsrc", "is-live=true", "samplesperbuffer=480", "!", caps, "!",
                                            "shmsink", "socket-path=\(socket)", "shm-size=1048576",
                                            "wait-for-connection=false", "sync=true"])
        defer {
            producer.signal(SIGINT)
            _ = producer.finish()
        }
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) { usleep(20_000) }
        usleep(200_000)
        let consumers = try (0..<listeners).map { _ in
            try Child(launcher, ["-q", "shmsrc", "socket-path=\(socket)", "is-live=true", "do-timestamp=true", "!", caps, "!",
                                 "fakesink", "sync=false"])
        }
        defer { consumers.forEach { $0.signal(SIGKILL); _ = $0.finish() } }
        usleep(Self.warmUp)
        let before = CPUSample(server: producer.pid, clients: consumers.map(\.pid))
        usleep(useconds_t(window * 1e6))
        let after = CPUSample(server: producer.pid, clients: consumers.map(\.pid))
        return AudioRow(label: "GStreamer", listeners: listeners, cpu: after - before, seconds: window,
                        periods: nil, drops: 0, latency: nil)
    }
}

/// The audio table and its ratios, printed by `make bench` and `--audio-only`.
func printAudio(_ bench: Bench, rounds: Int, launcher: String?, cClient: String) throws -> AudioRows {
    let c = FileManager.default.isExecutableFile(atPath: cClient) ? cClient : nil
    print("Microphones: one virtual microphone, 48 kHz stereo float in 10 ms periods, heard in its own format by N")
    print("camctl listen processes (camerad: CaptureKit) and N of the C library's camerad-stream --audio (camerad C);")
    print("GStreamer: audiotestsrc (live, 10 ms buffers) → shmsink → N × shmsrc → fakesink.")
    print("\(rounds) runs each, in turn; CPU (user + system, every process) per second of audio; latency from a period's")
    print("capture (its first sample) to the listener, so one period (10 ms) is its floor:")
    if c == nil { print("  (no C rows: \(cClient) is not built; make -C Clients/c)") }
    let counts = [1, 16]
    let rows = try bench.audioFanOut(rounds: rounds, listenerCounts: counts, gstreamer: launcher, cClient: c)
    print(AudioRow.header)
    for listeners in counts {
        for table in [rows.captureKit, rows.c, rows.gstreamer] { table[listeners].map { print($0.line) } }
    }
    for (name, table) in [("camerad (CaptureKit listeners)", rows.captureKit), ("camerad (C listeners)", rows.c)] where !table.isEmpty {
        let ratios = counts.compactMap { listeners -> String? in
            guard let ours = table[listeners], let theirs = rows.gstreamer[listeners],
                  theirs.totalMillisecondsPerAudioSecond > 0 else { return nil }
            return String(format: "%d listeners: %.2f", listeners, ours.totalMillisecondsPerAudioSecond / theirs.totalMillisecondsPerAudioSecond)
        }
        if !ratios.isEmpty {
            print("\(name) ÷ GStreamer, total CPU per second of audio (the goal: at most 0.7): " + ratios.joined(separator: ", "))
        }
    }
    return rows
}
