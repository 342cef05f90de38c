import Foundation
import Glibc

/// `make bench`: camerad's fan-out measured against GStreamer's shmsink/shmsrc
/// (plain consumers), in the same run, and a memcpy's cost for scale. Prints tables; asserts nothing.
@main
enum CameradBench {
    static let width = 1920
    static let height = 1080
    static let frameBytes = width * height * 3 / 2
    static let caps = "video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1"

    static let usage = """
        usage: camerad-bench [options]   (make bench: the release build, from the repository)

        camerad's fan-out against GStreamer's shmsink/shmsrc (plain consumers), in the same run; prints tables and,
        last, one JSON object. Asserts nothing.

          --duration S         seconds per row, split over the rounds (10)
          --rounds N           runs per row, interleaved with the other rows' (4)
          --clients LIST       numbers of clients, comma-separated (1,4,16)
          --bin DIR            where camerad and camctl are (beside camerad-bench)
          --vivid-vm PATH      the VM script for the V4L2 row (scripts/vivid-vm)
          --c-client PATH      the C client's camerad-stream (Clients/c/build/camerad-stream)
          --python-package DIR the Python client (Clients/python)
          --wake-floor-only    only what one frame signal raise waking 1 and 16 processes costs its writer
          --isolation-only     only a native 4K stream beside a costly one
          --audio-only         only the microphone rows (1 and 16 listeners, CaptureKit and C, against GStreamer)
          --encoding-only      only the H.264 encoding row (camerad's encoder against ffmpeg's, same frames)
          --recording-only     only the recording rows (1 and 3 recorders; synced or not; end to end against ffmpeg; the mixed load)
          --help               this
        """

    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.contains("--help") || arguments.contains("-h") { return print(usage) }
        if arguments.count == 3, arguments[0] == "--encode-raw" {
            // The encoding row's camerad side, in a process of its own.
            return try EncodingRow.encodeRaw(arguments[1], arguments[2])
        }
        let flagNames: Set = ["--v4l2-guest", "--wake-waiter", "--wake-floor-only", "--isolation-only", "--audio-only", "--encoding-only",
                              "--recording-only"]
        let optionNames: Set = ["--bin", "--duration", "--clients", "--vivid-vm", "--c-client", "--python-package", "--rounds"]
        var flags: Set<String> = []
        var values: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if optionNames.contains(argument), index + 1 < arguments.count {
                values[argument] = arguments[index + 1]
                index += 2
            } else if flagNames.contains(argument) {
                flags.insert(argument)
                index += 1
            } else {
                FileHandle.standardError.write(Data("camerad-bench: '\(argument)' is not an option or lacks its value; see camerad-bench --help\n".utf8))
                exit(64)
            }
        }
        func option(_ name: String) -> String? { values[name] }
        let bin = option("--bin") ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let seconds = Double(option("--duration") ?? "10") ?? 10
        let clientCounts = (option("--clients") ?? "1,4,16").split(separator: ",").compactMap { Int($0) }
        let vividVM = option("--vivid-vm") ?? "scripts/vivid-vm"
        let cClient = option("--c-client") ?? "Clients/c/build/camerad-stream"
        let pythonPackage = option("--python-package") ?? "Clients/python"
        let rounds = max(1, Int(option("--rounds") ?? "4") ?? 4)
        let bench = Bench(bin: bin, seconds: seconds, window: seconds / Double(rounds))
        if flags.contains("--v4l2-guest") {
            // Inside the VM scripts/vivid-vm boots: the V4L2 row's figures only.
            return try bench.v4l2Guest()
        }

        if flags.contains("--wake-waiter") {
            // One of the processes WakeFloor wakes.
            WakeFloor.waitAsAClient()
        }

        if flags.contains("--wake-floor-only") {
            // The kernel's part of waking 1 and 16 clients, for repeating it.
            let wake = try WakeFloor.measure(many: 16, rounds: rounds, writes: Int(bench.window * 30))
            return print(String(format: "one frame signal raise waking 1 process: %.1f µs; 16: %.1f µs", wake.one, wake.many))
        }

        if flags.contains("--isolation-only") {
            // Issue 13's figure alone, for repeating it: a native 4K stream beside a costly one.
            return try printIsolation(bench)
        }

        let launcher = Bench.which("gst-launch-1.0")
        if flags.contains("--audio-only") {
            _ = try printAudio(bench, rounds: rounds, launcher: launcher, cClient: cClient)
            return
        }
        if flags.contains("--encoding-only") {
            _ = try printEncoding(rounds: rounds)
            return
        }
        if flags.contains("--recording-only") {
            _ = try printRecording(bench, rounds: rounds)
            print("")
            _ = try printEndToEndRecording(bench, rounds: rounds)
            print("")
            _ = try printMixedLoad(bench, rounds: rounds, launcher: launcher)
            return
        }
        let otherCounts = clientCounts.filter { [1, 16].contains($0) }
        let framesPerClient = Int(bench.window * 30)
        print("""
            camerad fan-out: NV12 \(width)x\(height) at 30 fps, a still picture on both sides. Every row below (camerad,
            GStreamer, the C and Python clients, at each number of clients) is measured in \(rounds) runs, one of each in
            turn, round after round (every other round backwards), so that this shared machine's drift reaches every
            row alike. Each run streams \(Double(Bench.warmUp) / 1e6) s to warm up (the clients leave those frames out), then CPU (user +
            system, every process) is measured over \(bench.window) s; a row adds up its runs' CPU and frames (\(seconds) s in all)
            and its clients' latency histograms: its p50/p99/max are over all its frames, about \(framesPerClient) per client and run.
            """)
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores\n")
        let measured = try bench.fanOut(rounds: rounds, clientCounts: clientCounts, gstreamer: launcher,
                                        otherClients: otherCounts.isEmpty ? clientCounts : otherCounts,
                                        cClient: cClient, pythonPackage: pythonPackage)
        let camerad = measured.camerad
        let gstreamer = measured.gstreamer
        print(Row.header)
        for clients in clientCounts { camerad[clients].map { print($0.line) } }
        let perSourceFrame = clientCounts.compactMap { clients in
            camerad[clients]?.serverCPUPerSourceFrame.map { (clients, $0) }
        }
        print("  camerad's own CPU per frame the camera made: "
            + perSourceFrame.map { String(format: "%.1f µs at %d", $1 * 1e6, $0) }.joined(separator: ", "))
        print("  copies per frame the camera made (the camera's buffers are shared): "
            + clientCounts.compactMap { clients in
                camerad[clients]?.copiesPerSourceFrame.map { String(format: "%.2f at %d", $0, clients) }
            }.joined(separator: ", "))
        let growth = camerad[16]?.serverCPUPerSourceFrame.flatMap { sixteen in
            camerad[1]?.serverCPUPerSourceFrame.map { sixteen / $0 }
        }
        // Each source frame goes to every client: a producer's CPU per frame it sent, times the clients.
        let gstreamerGrowth = gstreamer[16].flatMap { sixteen in
            gstreamer[1].map { one in sixteen.serverCPUPerFrame * 16 / one.serverCPUPerFrame }
        }
        if let gstreamerGrowth, let sixteen = gstreamer[16], let one = gstreamer[1] {
            print(String(format: "  GStreamer's producer, CPU per frame it made: %.1f µs at 1, %.1f µs at 16 (%.2f×; camerad: %.2f×)",
                         one.serverCPUPerFrame * 1e6, sixteen.serverCPUPerFrame * 16e6, gstreamerGrowth, growth ?? 0))
        }
        var wakeFloor: Double?
        if let one = camerad[1]?.serverCPUPerSourceFrame, camerad[16] != nil {
            let wake = try WakeFloor.measure(many: 16, rounds: rounds, writes: Int(bench.window * 30))
            wakeFloor = (one * 1e6 + wake.many - wake.one) / (one * 1e6)
            print(String(format: "  the kernel's part of waking the clients, measured apart: camerad's one frame signal raise per frame costs its writer %.1f µs",
                         wake.one) + String(format: " with 1 process waiting, %.1f µs with 16;", wake.many))
            print(String(format: "  so at 16 clients camerad's CPU per frame stands on its figure at 1 plus about %.1f µs that only fewer wake-ups",
                         wake.many - wake.one) + String(format: " could save: a floor of about %.2f×", wakeFloor!))
        }

        print("\nOne client, the camera unthrottled (as fast as frames can be made and delivered):")
        let unthrottled = try bench.unthrottled()
        let memcpy = Bench.memcpyGigabytesPerSecond(bytes: frameBytes)
        let copyMicroseconds = Double(frameBytes) / (memcpy * 1e9) * 1e6
        print(String(format: "  camerad: %.0f frames/s to the client, made as fast as the virtual camera can, none copied on the way",
                     unthrottled))
        print(String(format: "  for scale, not compared: one memcpy of a %d-byte frame (into 7 slots in turn) takes %.0f µs here (%.2f GB/s),",
                     frameBytes, copyMicroseconds, memcpy) + " what a relay that copies each frame once pays per frame and client")

        print("")
        try printIsolation(bench)

        print("")
        let audio = try printAudio(bench, rounds: rounds, launcher: launcher, cClient: cClient)

        print("")
        let encoding = try? printEncoding(rounds: rounds)

        print("")
        let recording = try? printRecording(bench, rounds: rounds)
        print("")
        let endToEnd = try? printEndToEndRecording(bench, rounds: rounds)
        print("")
        let mixedLoad = try? printMixedLoad(bench, rounds: rounds, launcher: launcher)

        var v4l2: V4L2Figures?
        let mode = Bench.v4l2Mode
        print("\nV4L2, the driver's own buffers shared: vivid \(mode.fourcc) \(mode.width)x\(mode.height) at \(mode.fps) fps in the VM")
        print("scripts/vivid-vm boots (software emulation, so its figures compare only with each other), one client:")
        if FileManager.default.isExecutableFile(atPath: vividVM) {
            do {
                v4l2 = try bench.v4l2(vm: vividVM)
                print(v4l2!.lines)
            } catch {
                print("  not measured: \(error)")
            }
        } else {
            print("  not measured: \(vividVM) not found; run make bench from the repository, or pass --vivid-vm PATH")
        }

        if launcher != nil {
            print("\nGStreamer shmsink → shmsrc (one producer process, N consumer processes), same frames, measured the same way,")
            print("each of its runs next to camerad's with as many clients:")
            print(Row.header)
            for clients in clientCounts { gstreamer[clients].map { print($0.line) } }
            let ratios = clientCounts.compactMap { clients -> String? in
                guard let ours = camerad[clients], let theirs = gstreamer[clients], theirs.totalCPUPerFrame > 0 else { return nil }
                return String(format: "%d clients: %.2f", clients, ours.totalCPUPerFrame / theirs.totalCPUPerFrame)
            }
            print("\ncamerad ÷ GStreamer, total CPU per delivered frame (below 1: camerad is cheaper): " + ratios.joined(separator: ", "))
        } else {
            print("\nGStreamer: gst-launch-1.0 not found; install gstreamer1.0-tools, -plugins-base and -plugins-bad for the comparison")
        }

        print("\nThe same frames to the C library's camerad-stream and to python -m camerad stream (\(cClient), \(pythonPackage)):")
        print(Row.header)
        var others = measured.others
        for rows in [others.c, others.python] {
            for clients in rows.keys.sorted() { print(rows[clients]!.line) }
        }
        for line in measured.notMeasured { print("  " + line) }
        if !others.python.isEmpty {
            others.pythonView = try? bench.pythonViewVersusCopy(package: pythonPackage)
        }
        for (label, rows) in [("C client", others.c), ("Python", others.python)] where !rows.isEmpty {
            let versus = rows.keys.sorted().map { clients -> String in
                let total = rows[clients]!.totalCPUPerFrame
                let swift = camerad[clients]?.totalCPUPerFrame ?? 0
                let gst = gstreamer[clients]?.totalCPUPerFrame ?? 0
                return String(format: "%d clients: %.2f × CaptureKit's, %.2f × GStreamer's", clients,
                              swift > 0 ? total / swift : 0, gst > 0 ? total / gst : 0)
            }
            print("  \(label), total CPU per delivered frame: " + versus.joined(separator: "; "))
        }
        if let view = others.pythonView {
            print(String(format: "  Python, 1080p NV12: frame.array() (a view, no copy) %.1f µs, frame.copy() %.1f µs per frame (%.0f×)",
                         view.view, view.copy, view.view > 0 ? view.copy / view.view : 0))
        }

        // The last line: every headline figure, for scripts.
        print(Summary(camerad: camerad, gstreamer: gstreamer, daemonPerSourceFrame16Over1: growth,
                      gstreamerProducer16Over1: gstreamerGrowth, wakeFloor16Over1: wakeFloor,
                      unthrottledFramesPerSecond: unthrottled, memcpyMicrosecondsPerFrame: copyMicroseconds, v4l2: v4l2, others: others, audio: audio, encoding: encoding,
                      recording: recording, endToEnd: endToEnd, mixedLoad: mixedLoad ?? nil).json)
    }
}

/// A native 4K stream alone, then beside a client converting the same camera at great cost (issue 13's figure).
func printIsolation(_ bench: Bench) throws {
    print("A native stream beside a costly one: a still NV12 3840x2160 camera at 30 fps streamed as it is, alone and")
    print("then beside a client that streams it as BGRA 3840x2160 turned to portrait (each output converts on its own worker):")
    let isolation = try bench.nativeBesideCostly()
    print(StreamFigures.header)
    print(isolation.alone.line("native, alone"))
    print(isolation.beside.line("native, beside"))
    print(isolation.costly.line("costly BGRA"))
    print(isolation.besideRecorder.line("native, recording"))
    print(String(format: "  native latency p99 beside the costly stream − alone: %+.2f ms (the goal: within 2 ms); frames it lost beside it: %d",
                 isolation.beside.latencyP99 - isolation.alone.latencyP99, isolation.beside.drops))
    print(String(format: "  native latency p99 beside a 1080p recording − alone: %+.2f ms (the goal: within 2 ms); frames it lost beside it: %d",
                 isolation.besideRecorder.latencyP99 - isolation.alone.latencyP99, isolation.besideRecorder.drops))
}

/// `text` padded with spaces to `width` characters (String(format:)'s %-10@
/// does not pad on Linux), on the right unless `right` says to right-align.
func padded(_ text: String, _ width: Int, right: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? padding + text : text + padding
}

/// The headline figures as one JSON object (null where a figure is missing).
struct Summary {
    let camerad: [Int: Row]
    let gstreamer: [Int: Row]
    let daemonPerSourceFrame16Over1: Double?
    /// GStreamer's producer's CPU per frame it made, 16 clients over 1.
    let gstreamerProducer16Over1: Double?
    /// The least ``daemonPerSourceFrame16Over1`` can be: waking 15 more processes (``WakeFloor``).
    let wakeFloor16Over1: Double?
    /// One client's frames a second from an unthrottled camera (none copied on the way).
    let unthrottledFramesPerSecond: Double
    /// What copying a frame once costs on this machine, for scale (a relay that copies pays it per frame and client).
    let memcpyMicrosecondsPerFrame: Double
    let v4l2: V4L2Figures?
    let others: ClientFigures
    let audio: AudioRows
    let encoding: EncodingRow.Figures?
    let recording: (share: [Int: RecordingRow], synced: RecordingRow, unsynced: RecordingRow)?
    let endToEnd: EndToEndRecordingRow?
    let mixedLoad: MixedLoadRow?

    /// Per number of listeners: CPU ms per second of audio on each side (camerad
    /// to CaptureKit's listeners and to C's), the ratios to GStreamer, camerad's latency p99.
    var audioJSON: String {
        func number(_ value: Double?, _ digits: Int = 2) -> String {
            value.map { String(format: "%.\(digits)f", $0) } ?? "null"
        }
        return "{" + audio.captureKit.keys.sorted().map { listeners -> String in
            let ours = audio.captureKit[listeners]?.totalMillisecondsPerAudioSecond
            let c = audio.c[listeners]?.totalMillisecondsPerAudioSecond
            let theirs = audio.gstreamer[listeners]?.totalMillisecondsPerAudioSecond
            func ratio(_ ours: Double?) -> Double? { ours.flatMap { ours in theirs.flatMap { $0 > 0 ? ours / $0 : nil } } }
            return "\"\(listeners)\": {\"camerad_ms_per_s\": \(number(ours)), \"camerad_c_ms_per_s\": \(number(c)), "
                + "\"gstreamer_ms_per_s\": \(number(theirs)), \"ratio\": \(number(ratio(ours))), \"c_ratio\": \(number(ratio(c))), "
                + "\"latency_p99_ms\": \(number(audio.captureKit[listeners]?.latency?.milliseconds(atPercentile: 0.99)))}"
        }.joined(separator: ", ") + "}"
    }

    var json: String {
        func number(_ value: Double?, _ digits: Int = 2) -> String {
            value.map { String(format: "%.\(digits)f", $0) } ?? "null"
        }
        let clients = camerad.keys.sorted().map { count -> String in
            let ours = camerad[count]?.totalCPUPerFrame
            let theirs = gstreamer[count]?.totalCPUPerFrame
            let ratio = ours.flatMap { ours in theirs.flatMap { $0 > 0 ? ours / $0 : nil } }
            return "\"\(count)\": {\"camerad_us\": \(number(ours.map { $0 * 1e6 }, 1)), "
                + "\"gstreamer_us\": \(number(theirs.map { $0 * 1e6 }, 1)), \"ratio\": \(number(ratio)), "
                + "\"latency_p99_ms\": \(number(camerad[count]?.latency?.milliseconds(atPercentile: 0.99)))}"
        }
        let v4l2 = self.v4l2.map { v4l2 in
            "{\"copies_per_frame\": \(number(v4l2.copiesPerFrame)), \"camerad_us\": \(number(v4l2.cameradMicroseconds, 1)), "
                + "\"v4l2_ctl_us\": \(number(v4l2.floorMicroseconds, 1)), \"ratio\": \(number(v4l2.ratio))}"
        } ?? "null"
        func rows(_ rows: [Int: Row]) -> String {
            "{" + rows.keys.sorted().map { "\"\($0)\": \(number(rows[$0].map { $0.totalCPUPerFrame * 1e6 }, 1))" }
                .joined(separator: ", ") + "}"
        }
        let view = others.pythonView.map { "{\"view_us\": \(number($0.view, 1)), \"copy_us\": \(number($0.copy, 1))}" } ?? "null"
        let recordingJSON = recording.map { recording -> String in
            let one = recording.share[1]?.millisecondsPerSecond, three = recording.share[3]?.millisecondsPerSecond
            return "{\"one_ms_per_s\": \(number(one, 1)), \"three_ms_per_s\": \(number(three, 1)), "
                + "\"three_over_one\": \(number(one.flatMap { one in three.map { one > 0 ? $0 / one : 0 } })), "
                + "\"synced_ms_per_s\": \(number(recording.synced.millisecondsPerSecond, 1)), "
                + "\"unsynced_ms_per_s\": \(number(recording.unsynced.millisecondsPerSecond, 1)), "
                + "\"longest_sync_ms\": \(number(recording.synced.longestSyncMilliseconds, 1))}"
        } ?? "null"
        return "{\"clients\": {\(clients.joined(separator: ", "))}, "
            + "\"c_client_us\": \(rows(others.c)), \"python_us\": \(rows(others.python)), \"python_view\": \(view), "
            + "\"daemon_per_source_frame_16_over_1\": \(number(daemonPerSourceFrame16Over1)), "
            + "\"gstreamer_producer_16_over_1\": \(number(gstreamerProducer16Over1)), "
            + "\"wake_floor_16_over_1\": \(number(wakeFloor16Over1)), "
            + "\"unthrottled_frames_per_second\": \(number(unthrottledFramesPerSecond)), "
            + "\"memcpy_us_per_frame\": \(number(memcpyMicrosecondsPerFrame)), \"v4l2\": \(v4l2), \"audio\": \(audioJSON), "
            + "\"encoding\": \(encoding.map { "{\"camerad_cpu_s\": \(number($0.camerad, 3)), \"ffmpeg_cpu_s\": \(number($0.ffmpeg, 3)), \"ratio\": \(number($0.ffmpeg > 0 ? $0.camerad / $0.ffmpeg : nil))}" } ?? "null"), "
            + "\"recording\": \(recordingJSON), "
            + "\"recording_end_to_end\": \(endToEnd.map { "{\"camerad_ms_per_s\": \(number($0.camerad.total * 1000 / max($0.seconds, 1e-9), 1)), \"ffmpeg_ms_per_s\": \(number($0.ffmpeg * 1000 / max($0.seconds, 1e-9), 1)), \"ratio\": \(number($0.ffmpeg > 0 ? $0.camerad.total / $0.ffmpeg : nil))}" } ?? "null"), "
            + "\"mixed_load\": \(mixedLoad.map { "{\"camerad_ms_per_s\": \(number($0.camerad.total * 1000 / max($0.seconds, 1e-9), 1)), \"gstreamer_ms_per_s\": \(number($0.gstreamer.total * 1000 / max($0.seconds, 1e-9), 1)), \"ratio\": \(number($0.gstreamer.total > 0 ? $0.camerad.total / $0.gstreamer.total : nil))}" } ?? "null")}"
    }
}

/// One line of the table: CPU and frames over the measured window.
struct Row {
    var label: String
    var clients: Int
    var fpsPerClient: [Double]
    var drops: Int
    /// Every delivered frame's latency, all clients' and runs' together; nil where the clients do not say.
    var latency: LatencyHistogram?
    var cpu: CPUSample
    var framesDelivered: Int
    /// Frames the source made in the window, where the server says.
    var sourceFrames: Int?
    /// Frames the server wrote into a slot in the window (copies or conversions), where it says.
    var copies: Int?
    var serverPeakMiB: Double

    var serverCPUPerFrame: Double { framesDelivered > 0 ? cpu.server / Double(framesDelivered) : 0 }
    var totalCPUPerFrame: Double { framesDelivered > 0 ? cpu.total / Double(framesDelivered) : 0 }
    var serverCPUPerSourceFrame: Double? { sourceFrames.flatMap { $0 > 0 ? cpu.server / Double($0) : nil } }
    var copiesPerSourceFrame: Double? {
        guard let sourceFrames, let copies, sourceFrames > 0 else { return nil }
        return Double(copies) / Double(sourceFrames)
    }

    /// This row and another run's of the same configuration as one: CPU,
    /// frames, drops, copies and latencies added up; the larger peak memory.
    func adding(_ other: Row) -> Row {
        func sum(_ a: Int?, _ b: Int?) -> Int? { a.flatMap { a in b.map { a + $0 } } }
        return Row(label: label, clients: clients, fpsPerClient: fpsPerClient + other.fpsPerClient, drops: drops + other.drops,
                   latency: latency.flatMap { ours in other.latency.map { ours.adding($0) } },
                   cpu: CPUSample(server: cpu.server + other.cpu.server, clients: cpu.clients + other.cpu.clients),
                   framesDelivered: framesDelivered + other.framesDelivered, sourceFrames: sum(sourceFrames, other.sourceFrames),
                   copies: sum(copies, other.copies), serverPeakMiB: max(serverPeakMiB, other.serverPeakMiB))
    }

    static let header = "  \(padded("run", 10)) clients  fps/client (min–max)  drops  latency p50/p99/max ms  server CPU/frame  total CPU/frame  server peak RSS"

    var line: String {
        let latency = self.latency.map {
            String(format: "%.2f / %.2f / %.2f", $0.milliseconds(atPercentile: 0.5), $0.milliseconds(atPercentile: 0.99),
                   $0.milliseconds(atPercentile: 1))
        } ?? "–"
        return "  \(padded(label, 10)) "
            + String(format: "%7d  %8.1f – %-9.1f  %5d  ", clients, fpsPerClient.min() ?? 0, fpsPerClient.max() ?? 0, drops)
            + padded(latency, 22)
            + String(format: "  %13.1f µs  %12.1f µs  %12.1f MiB", serverCPUPerFrame * 1e6, totalCPUPerFrame * 1e6, serverPeakMiB)
    }
}

/// Frames' latencies in the 10 µs buckets a client's `--json` prints
/// (`latencyHistogram`): many clients' and runs' add up to one, whose
/// percentiles are those of all their frames together.
struct LatencyHistogram {
    static let bucketMicroseconds: Int64 = 10
    /// Frames per bucket, by the bucket's lower bound in µs.
    private(set) var frames: [Int64: Int] = [:]

    init() {}

    /// From a report's `latencyHistogram`: [lower bound µs, frames] pairs; nil when it has none.
    init?(_ pairs: Any?) {
        guard let pairs = pairs as? [[Int]] else { return nil }
        for pair in pairs where pair.count == 2 { frames[Int64(pair[0]), default: 0] += pair[1] }
    }

    func adding(_ other: LatencyHistogram) -> LatencyHistogram {
        var sum = self
        sum.frames.merge(other.frames, uniquingKeysWith: +)
        return sum
    }

    /// The latency below which `percentile` of the frames came (the top of the
    /// bucket holding the frame at that rank: at most 10 µs over), in ms.
    func milliseconds(atPercentile percentile: Double) -> Double {
        let total = frames.values.reduce(0, +)
        guard total > 0 else { return 0 }
        let rank = max(1, Int((Double(total) * percentile).rounded(.up)))
        var seen = 0
        for bucket in frames.keys.sorted() {
            seen += frames[bucket]!
            if seen >= rank { return Double(bucket + Self.bucketMicroseconds) / 1000 }
        }
        return 0
    }
}

/// User plus system CPU seconds of a server and its clients, all alive, now.
struct CPUSample {
    var server: Double
    var clients: Double
    var total: Double { server + clients }

    init(server: Double, clients: Double) {
        self.server = server
        self.clients = clients
    }

    init(server: Int32, clients: [Int32]) {
        self.init(server: ProcessMeter.cpuSeconds(server), clients: clients.map(ProcessMeter.cpuSeconds).reduce(0, +))
    }

    static func - (after: CPUSample, before: CPUSample) -> CPUSample {
        CPUSample(server: after.server - before.server, clients: after.clients - before.clients)
    }
}

/// One stream's figures, from `camctl stream --json`.
struct StreamFigures {
    let frames: Int
    let drops: Int
    let latencyP50: Double
    let latencyP99: Double

    init(_ report: [String: Any]) {
        frames = report["frames"] as? Int ?? 0
        drops = (report["drops"] as? [String: Int])?.values.reduce(0, +) ?? 0
        let latency = report["latencyMilliseconds"] as? [String: Double] ?? [:]
        latencyP50 = latency["p50"] ?? 0
        latencyP99 = latency["p99"] ?? 0
    }

    static let header = "  \(padded("stream", 16))  frames  drops  latency p50/p99 ms"

    func line(_ label: String) -> String {
        "  \(padded(label, 16)) " + String(format: "%7d  %5d  %8.2f / %.2f", frames, drops, latencyP50, latencyP99)
    }
}

struct Bench {
    let bin: String
    /// How long a figure is measured: the V4L2 row's and the isolation's at once, the fan-out's rows over all their runs.
    let seconds: Double
    /// How long each run of a fan-out row is measured (``seconds`` over the rounds).
    let window: Double

    var camerad: String { bin + "/camerad" }
    var camctl: String { bin + "/camctl" }

    /// A daemon with one still NV12 virtual camera (1080p unless `size` says).
    func withDaemon<T>(size: String = "\(CameradBench.width)x\(CameradBench.height)", unthrottled: Bool = false,
                               _ body: (Child, String) throws -> T) throws -> T {
        try withDaemon(size: size, stillPicture: true, unthrottled: unthrottled) { daemon, socket, _ in try body(daemon, socket) }
    }

    /// A daemon of its own in a temporary folder (given to `body`, removed
    /// after), with one NV12 virtual camera at 30 fps — a still picture, or
    /// its moving stamped one — and `microphones` virtual microphones.
    func withDaemon<T>(size: String, stillPicture: Bool, unthrottled: Bool = false, microphones: Int = 0,
                       _ body: (Child, String, String) throws -> T) throws -> T {
        let directory = NSTemporaryDirectory() + "camerad-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/camerad.sock"
        let daemon = try Child(camerad, ["--socket", socket, "--virtual-cameras", "0", "--virtual-microphones", "\(microphones)",
                                         "--log-level", "error"])
        defer {
            daemon.signal(SIGTERM)
            _ = daemon.finish()
        }
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) { usleep(20_000) }
        usleep(50_000)
        try run(camctl, ["--socket", socket, "virtual", "add", "--format", "NV12", "--size", size, "--fps", "30"]
            + (stillPicture ? ["--static-picture"] : []) + (unthrottled ? ["--unthrottled"] : []))
        return try body(daemon, socket, directory)
    }

    /// One run of N `client`s (camctl unless it says) streaming the camera's
    /// own frames from a daemon of their own. CPU is measured over ``window``
    /// of steady state: after every client has streamed for the warm-up,
    /// before any of them stops.
    func fanOut(clients: Int, client: StreamClient? = nil, patience: Int = 20) throws -> Row {
        try withDaemon { daemon, socket in
            try streams(of: "virtual-0", clients: clients, daemon: daemon, socket: socket, client: client,
                        seconds: window, patience: patience)
        }
    }

    /// N clients streaming `device`'s own frames from a running daemon: CPU
    /// and the daemon's counts over `seconds` of steady state, after the
    /// warm-up, before any client stops.
    func streams(of device: String, clients: Int, daemon: Child, socket: String, client: StreamClient? = nil,
                 seconds: Double, patience: Int = 20) throws -> Row {
        let client = client ?? .camctl(camctl)
        let streams = try (0..<clients).map { _ in
            try Child(client.executable, client.arguments(device, socket))
        }
        var finished = false
        defer { if !finished { streams.forEach { $0.signal(SIGKILL) } } }
        try waitUntil("\(clients) streams on \(device)", seconds: patience) {
            try statistics(socket, device: device).streams == clients
        }
        usleep(Self.warmUp)
        let before = (cpu: CPUSample(server: daemon.pid, clients: streams.map(\.pid)), stats: try statistics(socket, device: device))
        usleep(useconds_t(seconds * 1e6))
        let after = (cpu: CPUSample(server: daemon.pid, clients: streams.map(\.pid)), stats: try statistics(socket, device: device))
        streams.forEach { $0.signal(SIGINT) }
        let outputs = streams.map { $0.finish() }
        finished = true
        let reports = try outputs.map(Self.report)
        let histograms = reports.compactMap { LatencyHistogram($0["latencyHistogram"]) }
        let drops = reports.compactMap { ($0["drops"] as? [String: Int])?.values.reduce(0, +) }.reduce(0, +)
        let sourceFrames = Int(after.stats.framesCaptured - before.stats.framesCaptured)
        return Row(
            label: client.label, clients: clients,
            fpsPerClient: reports.compactMap { $0["framesPerSecond"] as? Double },
            drops: drops,
            latency: histograms.count == reports.count ? histograms.reduce(LatencyHistogram()) { $0.adding($1) } : nil,
            cpu: after.cpu - before.cpu,
            // Every client gets every frame but those it was told it lost
            // (counted from the warm-up's end to the run's: the window's share is at most that).
            framesDelivered: max(0, sourceFrames * clients - drops), sourceFrames: sourceFrames,
            copies: Int(after.stats.copies - before.stats.copies), serverPeakMiB: ProcessMeter.peakResidentMiB(daemon.pid))
    }

    /// What camerad says it does for the bench's camera (`camctl stats --json`):
    /// copies are frames written into a slot (conversions, and copies of the
    /// camera's own format; none when its buffers are shared).
    func statistics(_ socket: String, device: String = "virtual-0") throws -> (streams: Int, framesCaptured: UInt64, copies: UInt64) {
        let output = try run(camctl, ["--socket", socket, "stats", device, "--json"])
        guard let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
              let streams = object["streams"] as? Int, let frames = object["framesCaptured"] as? Int,
              let variants = object["variants"] as? [[String: Any]]
        else { throw BenchError("camctl stats printed: \(output)") }
        let copies = variants.compactMap { $0["conversions"] as? Int }.reduce(0, +)
        return (streams, UInt64(frames), UInt64(copies))
    }

    /// How long every run streams before it is measured: process start-up,
    /// the first frames and the pools' growth are not steady state.
    static let warmUp: useconds_t = 2_000_000

    /// Polls `condition` for up to `seconds`.
    func waitUntil(_ what: String, seconds: Int = 20, _ condition: () throws -> Bool) throws {
        for _ in 0..<seconds * 10 {
            if try condition() { return }
            usleep(100_000)
        }
        throw BenchError("gave up waiting for \(what)")
    }

    /// Frames per second one client gets from an unthrottled camera.
    func unthrottled() throws -> Double {
        try withDaemon(unthrottled: true) { _, socket in
            let output = try run(camctl, ["--socket", socket, "stream", "virtual-0", "--duration", "\(min(seconds, 5))", "--json"])
            guard let fps = try Self.report(output)["framesPerSecond"] as? Double else {
                throw BenchError("camctl stream printed: \(output)")
            }
            return fps
        }
    }

    /// The JSON object `camctl stream --json` printed last.
    static func report(_ output: String) throws -> [String: Any] {
        guard let line = output.split(separator: "\n").last,
              let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { throw BenchError("camctl stream printed: \(output)") }
        return object
    }

    /// The camera's own frames, 4K, streamed alone and then beside a client
    /// streaming them as BGRA turned to portrait, the costliest conversion.
    func nativeBesideCostly() throws -> (alone: StreamFigures, beside: StreamFigures, costly: StreamFigures, besideRecorder: StreamFigures) {
        try withDaemon(size: "3840x2160") { _, socket in
            let native = ["--socket", socket, "stream", "virtual-0", "--duration", "\(seconds)", "--json"]
            let alone = try StreamFigures(Self.report(run(camctl, native)))
            let costly = try Child(camctl, ["--socket", socket, "stream", "virtual-0", "--pixel-format", "bgra",
                                            "--size", "3840x2160", "--orientation", "portrait", "--json"])
            usleep(500_000)
            let beside = try StreamFigures(Self.report(run(camctl, native)))
            costly.signal(SIGINT)
            let costlyFigures = try StreamFigures(Self.report(costly.finish()))
            // Issue 35: a recording (H.264 1080p from its I420 variant, encoded on a worker of its own) beside it.
            let movie = NSTemporaryDirectory() + "camerad-bench-isolation-\(getpid()).mp4"
            defer { unlink(movie) }
            let recorder = try Child(camctl, ["--socket", socket, "record", "virtual-0", movie, "--size", "1920x1080", "--force", "--json"])
            try waitUntil("the recording") { fileSize(movie) > 0 }
            let besideRecorder = try StreamFigures(Self.report(run(camctl, native)))
            _ = recorder.stop(within: 10)
            return (alone, beside, costlyFigures, besideRecorder)
        }
    }

    /// One run of the same fan-out through GStreamer, measured over ``window``:
    /// a still picture (imagefreeze) into shmsink, and N plain shmsrc consumers
    /// (``plainConsumer(_:caps:)``).
    func gstreamer(clients: Int, launcher: String) throws -> Row {
        let socket = NSTemporaryDirectory() + "camerad-bench-gst-\(getpid()).sock"
        unlink(socket)
        defer { unlink(socket) }
        let caps = CameradBench.caps
        let producer = try Child(launcher, (["-q", "videotestsrc", "num-buffers=1", "pattern=smpte", "!", caps, "!",
                                             "imagefreeze", "is-live=true", "!", caps, "!", "shmsink", "socket-path=\(socket)",
                                             "shm-size=\(CameradBench.frameBytes * 8)", "wait-for-connection=false", "sync=true"]))
        defer {
            producer.signal(SIGINT)
            _ = producer.finish()
        }
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) { usleep(20_000) }
        usleep(200_000)
        let consumers = try (0..<clients).map { _ in try Child(launcher, Self.plainConsumer(socket, caps: caps)) }
        var finished = false
        defer { if !finished { consumers.forEach { $0.signal(SIGKILL) } } }
        try waitUntil("\(clients) GStreamer consumers") { consumers.allSatisfy { Self.counted($0.outputSoFar) != nil } }
        usleep(Self.warmUp)
        let before = (cpu: CPUSample(server: producer.pid, clients: consumers.map(\.pid)), counts: consumers.map { Self.counted($0.outputSoFar) })
        usleep(useconds_t(window * 1e6))
        let after = (cpu: CPUSample(server: producer.pid, clients: consumers.map(\.pid)), counts: consumers.map { Self.counted($0.outputSoFar) })
        let serverPeak = ProcessMeter.peakResidentMiB(producer.pid)
        for consumer in consumers { consumer.signal(SIGINT) }
        consumers.forEach { _ = $0.finish() }
        finished = true
        let rates = zip(before.counts, after.counts).map { Self.framesPerSecond(from: $0, to: $1) }
        // shmsink waits for its slowest consumer rather than dropping: a consumer misses no frame.
        return Row(label: "GStreamer", clients: clients, fpsPerClient: rates, drops: 0, latency: nil, cpu: after.cpu - before.cpu,
                   framesDelivered: Int((rates.reduce(0, +) * window).rounded()), sourceFrames: nil, copies: nil, serverPeakMiB: serverPeak)
    }

    /// A plain GStreamer consumer of a shmsink at `socket`: shmsrc into
    /// fakesink, through progressreport, which counts the buffers passing and
    /// prints the count once a second ("progressreport0 (00:00:05): 151
    /// buffers") — the per-frame work of the consumer a GStreamer user writes
    /// (no fpsdisplaysink, no -v printing ten times a second, which cost
    /// GStreamer a fifth more and flattered camerad).
    static func plainConsumer(_ socket: String, caps: String) -> [String] {
        ["-q", "-e", "shmsrc", "socket-path=\(socket)", "is-live=true", "do-timestamp=true", "!", caps, "!",
         "progressreport", "format=buffers", "do-query=false", "update-freq=1", "!", "fakesink", "sync=false"]
    }

    /// The last count ``plainConsumer(_:caps:)`` printed: its second, and the buffers by then.
    static func counted(_ output: String) -> (second: Int, frames: Int)? {
        for line in output.split(separator: "\n").reversed() where line.hasSuffix(" buffers") {
            guard let open = line.firstIndex(of: "("), let close = line.firstIndex(of: ")"), open < close else { continue }
            let clock = line[line.index(after: open)..<close].split(separator: ":").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard clock.count == 3, let frames = Int(line[line.index(after: close)...].dropFirst(2).prefix { $0.isNumber }) else { continue }
            return (clock[0] * 3600 + clock[1] * 60 + clock[2], frames)
        }
        return nil
    }

    /// A consumer's frame rate between two of its counts (whole seconds apart, each printed as a frame came).
    static func framesPerSecond(from start: (second: Int, frames: Int)?, to end: (second: Int, frames: Int)?) -> Double {
        guard let start, let end, end.second > start.second else { return 0 }
        return Double(end.frames - start.frames) / Double(end.second - start.second)
    }

    /// memcpy throughput for frames of `bytes` copied into `slots` destinations in
    /// turn, as camerad copies each frame into the next free slot of a pool: the
    /// same working set, so the same caches. The best of a few rounds.
    static func memcpyGigabytesPerSecond(bytes: Int, slots: Int = 7) -> Double {
        let source = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let destinations = (0..<slots).map { _ in UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64) }
        defer {
            source.deallocate()
            destinations.forEach { $0.deallocate() }
        }
        memset(source, 0x5A, bytes)
        destinations.forEach { memset($0, 0, bytes) }
        var best = 0.0
        var checksum = 0
        for _ in 0..<5 {
            let rounds = 700
            let start = DispatchTime.now().uptimeNanoseconds
            for round in 0..<rounds {
                copy(destinations[round % slots], source, bytes)
                // Change the source a little each time, as a camera does, so no copy is redundant.
                source.storeBytes(of: UInt8(truncatingIfNeeded: round), toByteOffset: round % bytes, as: UInt8.self)
                checksum &+= Int(destinations[round % slots].load(fromByteOffset: (round * 4099) % bytes, as: UInt8.self))
            }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            best = max(best, Double(bytes * rounds) / elapsed / 1e9)
        }
        if checksum == -1 { print("") }  // keeps the copies observable
        return best
    }

    @inline(never)
    static func copy(_ destination: UnsafeMutableRawPointer, _ source: UnsafeRawPointer, _ bytes: Int) {
        memcpy(destination, source, bytes)
    }

    static func which(_ tool: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(directory)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}
