import CameraTestSupport
import Foundation
import Testing

/// A daemon with one NV12 640x480 virtual camera at 30 fps.
func withStreamingDaemon(_ body: (DaemonProcess) async throws -> Void) async throws {
    try await withRunningDaemon(virtualCameras: 0) { daemon in
        let added = try await camctl(["virtual", "add", "--format", "NV12", "--size", "640x480", "--fps", "30"],
                                     socket: daemon.socketPath)
        #expect(added.lines == ["virtual-0"])
        try await body(daemon)
    }
}

/// Streams from camctl processes. A loaded machine makes clients late, so
/// drops are allowed; what must hold is the accounting (every frame delivered
/// or reported dropped with a reason), the frames' integrity (their stamps)
/// and the device's rate measured from its own timestamps.
@Suite struct StreamProcessTests {
    @Test func eightProcessesEachGetTheirFramesIntactInOrderAndAccountedFor() async throws {
        try await withStreamingDaemon { daemon in
            let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await camctl(["stream", "virtual-0", "--count", "300", "--check", "--json"], socket: daemon.socketPath,
                                         timeout: .seconds(60))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for result in results {
                let report = try StreamReport(result)
                print("eight processes, one of them: \(report)")
                #expect(report.frames == 300)
                #expect(report.accountsForEveryFrame, "\(report)")
                #expect(report.check?.intact == 300, "every frame's two bands agree and name the frame")
                #expect(report.check?.torn == 0 && report.check?.mismatched == 0)
                #expect(abs(report.deviceFramesPerSecond - 30) < 0.3, "\(report)")
            }
            let stats = try await StatsReport.of("virtual-0", daemon)
            #expect(stats.streams == 0)
        }
    }

    /// One client streams 3840x2160 BGRA turned to portrait, the costliest
    /// output there is, while another streams the camera's own NV12: each output
    /// converts on a worker of its own, so the costly one costs only its own
    /// frames (FRAME_WAS_LATE when it falls behind), never the other's. Both
    /// streams account for every frame; the native one's frames are intact.
    /// Whether it loses none depends on the machine having a core for it (in a
    /// debug build beside the other suites it may not): the graph's part is
    /// proved deterministically by `DeviceStreamerTests.aSlowVariantNeverDelaysAnother`,
    /// and `make bench` prints the native stream's drops and latency with and
    /// without the costly one beside it.
    @Test func aCostly4KRotatedOutputBesideTheNativeOne() async throws {
        try await withRunningDaemon(virtualCameras: 0) { daemon in
            let added = try await camctl(["virtual", "add", "--format", "NV12", "--size", "3840x2160", "--fps", "30",
                                          "--static-picture"], socket: daemon.socketPath)
            #expect(added.lines == ["virtual-0"])
            let costly = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", "virtual-0",
                                                              "--pixel-format", "bgra", "--size", "3840x2160",
                                                              "--orientation", "portrait", "--json"])
            #expect(try await waitUntil(timeout: .seconds(60)) {
                try await StatsReport.of("virtual-0", daemon).variants.contains { $0.conversions > 3 }
            }, "the costly output is being made")
            let native = try StreamReport(try await camctl(["stream", "virtual-0", "--count", "90", "--check", "--json"],
                                                           socket: daemon.socketPath, timeout: .seconds(120)))
            let costlyVariant = try await StatsReport.of("virtual-0", daemon).variants
            let beside = try StreamReport(await costly.stop())
            print("the costly output: \(costlyVariant.map { "\($0.conversions) made, \($0.framesSkipped) skipped" })")
            print("native beside 4K rotated BGRA: \(native); latency \(native.latencyMilliseconds)")
            print("4K rotated BGRA: \(beside); latency \(beside.latencyMilliseconds)")
            #expect(native.format == "420v 3840x2160" && native.frames == 90, "\(native)")
            #expect(native.accountsForEveryFrame, "\(native)")
            #expect(native.check?.intact == 90 && native.check?.torn == 0, "\(native)")
            #expect(beside.format == "BGRA 2160x3840" && beside.frames > 0, "\(beside)")
            #expect(beside.accountsForEveryFrame, "\(beside)")
        }
    }

    @Test func aStoppedClientCostsOnlyItselfAndGivesItsSlotsBackWhenKilled() async throws {
        try await withStreamingDaemon { daemon in
            let stalled = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", "virtual-0", "--json"])
            #expect(await stalled.wait(timeout: .seconds(30)) { _ in
                ((try? await StatsReport.of("virtual-0", daemon))?.framesCaptured ?? 0) > 10
            })
            kill(stalled.process.processIdentifier, SIGSTOP)
            // Stopped, it keeps the three frames it may hold, and gets no more.
            #expect(try await waitUntil { try await StatsReport.of("virtual-0", daemon).variants.first?.slotsInUse == 3 })
            let memoryBefore = residentKilobytes(daemon.pid)

            // Three clients stream while the daemon's memory is sampled.
            let streams = try (0..<3).map { _ in
                try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", "virtual-0", "--count", "120",
                                                     "--check", "--json"])
            }
            var peak = memoryBefore
            _ = await waitUntil(timeout: .seconds(120), every: .milliseconds(100)) {
                peak = max(peak, residentKilobytes(daemon.pid))
                return streams.allSatisfy { !$0.process.isRunning }
            }
            for stream in streams {
                let report = try StreamReport(await stream.stop(signal: 0))
                print("beside a stopped client: \(report)")
                #expect(report.frames == 120 && report.accountsForEveryFrame, "\(report)")
                #expect(report.check?.torn == 0 && report.check?.intact == 120, "\(report)")
                #expect(abs(report.deviceFramesPerSecond - 30) < 0.3, "the camera's rate, from its stamps: \(report)")
            }
            #expect(peak - memoryBefore < 32 * 1024, "the daemon's memory stays bounded while a client is stopped")
            // Its frames stay in the pool it took them from (the others' joining grew the variant's).
            #expect(try await StatsReport.of("virtual-0", daemon).streams == 1)

            kill(stalled.process.processIdentifier, SIGKILL)
            _ = await stalled.stop()
            #expect(try await waitUntil {
                let after = try await StatsReport.of("virtual-0", daemon)
                return after.streams == 0 && after.variants.isEmpty && !after.isCapturing
            }, "its slots and stream are gone")

            let fresh = try StreamReport(try await camctl(["stream", "virtual-0", "--count", "30", "--check", "--json"],
                                                          socket: daemon.socketPath))
            #expect(fresh.frames == 30 && fresh.check?.intact == 30 && fresh.accountsForEveryFrame, "\(fresh)")
        }
    }

    /// A client that holds each frame 50 ms takes at most 20 of the camera's 30
    /// a second, however fast the machine: some frames must drop, and each
    /// one is reported, ahead of the next frame, whichever way it was dropped.
    @Test(arguments: [[], ["--keep-late-frames"], ["--keep-late-frames", "--frames-in-flight", "1"], ["--inline"]])
    func aSlowClientHasEveryFrameAccountedFor(options: [String]) async throws {
        try await withStreamingDaemon { daemon in
            let result = try await camctl(["stream", "virtual-0", "--count", "60", "--hold-milliseconds", "50", "--check",
                                           "--json"] + options, socket: daemon.socketPath, timeout: .seconds(120))
            let report = try StreamReport(result)
            print("a slow client \(options): \(report)")
            #expect(report.frames == 60 && report.check?.intact == 60, "\(report)")
            #expect(report.accountsForEveryFrame, "\(report)")
            if !options.contains("--inline") {
                // Inline frames are not held in the daemon: they wait in this process instead.
                #expect(report.accounting.dropped > 0, "\(report)")
            }
        }
    }

    @Test func aStreamEndsWithStatusOneWhenItsDeviceIsRemoved() async throws {
        try await withStreamingDaemon { daemon in
            let stream = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", "virtual-0", "--stats"])
            #expect(await stream.wait(timeout: .seconds(30)) { _ in
                let stats = try? await StatsReport.of("virtual-0", daemon)
                return stats?.streams == 1 && (stats?.variants.first?.framesMade ?? 0) > 5
            })
            #expect(try await camctl(["virtual", "remove", "virtual-0"], socket: daemon.socketPath).status == 0)
            #expect(await stream.wait(timeout: .seconds(30)) { !$0.process.isRunning })
            let result = await stream.stop()
            #expect(result.status == 1)
            #expect(result.standardError.contains("virtual-0 was disconnected"))
            #expect(result.standardOutput.contains("frames of 420v 640x480"), "the statistics still print")
        }
    }

    @Test func streamMistakesAreStatusOneWithTheReason() async throws {
        try await withStreamingDaemon { daemon in
            let odd = try await camctl(["stream", "virtual-0", "--pixel-format", "nv12", "--size", "321x241", "--count", "1"],
                                       socket: daemon.socketPath)
            #expect(odd.status == 1)
            #expect(odd.standardError.contains("even"))
            let missing = try await camctl(["stream", "virtual-7", "--count", "1"], socket: daemon.socketPath)
            #expect(missing.status == 1)
            #expect(missing.standardError.contains("no device 'virtual-7'"))
            let usage = try await camctl(["stream", "virtual-0", "--count", "1", "--duration", "1"], socket: daemon.socketPath)
            #expect(usage.status == 2)
        }
    }

    /// --skip leaves the first frames out of everything, as v4l2-ctl's
    /// --stream-skip: the 20 counted come after 30 others (the camera starts
    /// at sequence 0 for this stream), and the accounting starts with them.
    @Test func skipLeavesTheFirstFramesOut() async throws {
        try await withStreamingDaemon { daemon in
            let report = try StreamReport(try await camctl(["stream", "virtual-0", "--skip", "30", "--count", "20", "--check", "--json"],
                                                           socket: daemon.socketPath))
            #expect(report.frames == 20 && report.check?.intact == 20, "\(report)")
            #expect((report.firstSequence ?? 0) >= 30, "\(report)")
            #expect(report.accountsForEveryFrame, "\(report)")
            let negative = try await camctl(["stream", "virtual-0", "--skip", "-1", "--count", "1"], socket: daemon.socketPath)
            #expect(negative.status == 2 && negative.standardError.contains("--skip"), "\(negative.standardError)")
        }
    }

    /// --json's latency histogram holds every frame once, in ascending 10 µs
    /// buckets, and agrees with the percentiles beside it: the p99's bucket is
    /// the one the 99th-percentile frame falls in.
    @Test func theLatencyHistogramHoldsEveryFrame() async throws {
        try await withStreamingDaemon { daemon in
            let report = try StreamReport(try await camctl(["stream", "virtual-0", "--count", "50", "--json"],
                                                           socket: daemon.socketPath))
            let histogram = report.latencyHistogram
            #expect(histogram.allSatisfy { $0.count == 2 && $0[0] % 10 == 0 && $0[1] > 0 }, "\(histogram)")
            #expect(histogram.map { $0[1] }.reduce(0, +) == 50, "\(histogram)")
            #expect(zip(histogram, histogram.dropFirst()).allSatisfy { $0[0] < $1[0] }, "ascending: \(histogram)")
            for (percentile, name) in [(0.5, "p50"), (0.99, "p99"), (1.0, "max")] {
                let rank = Int64((50 * percentile).rounded(.up))
                var seen: Int64 = 0
                let bucket = histogram.first { seen += $0[1]; return seen >= rank }!
                let microseconds = (report.latencyMilliseconds[name] ?? -1) * 1000
                #expect(Double(bucket[0]) <= microseconds && microseconds < Double(bucket[0] + 10),
                        "\(name) \(microseconds) µs lies in bucket \(bucket[0]) µs: \(histogram)")
            }
        }
    }

    /// Without --stats or --json, stream is not silent: one progress line on stderr.
    @Test func streamWithoutStatsEndsWithOneProgressLine() async throws {
        try await withStreamingDaemon { daemon in
            let result = try await camctl(["stream", "-d", "virtual-0", "--count", "10"], socket: daemon.socketPath)
            #expect(result.status == 0)
            #expect(result.standardOutput.isEmpty)
            let lines = result.standardError.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("virtual-0: 10 frames of ") && lines[0].contains(" fps, "),
                    "\(result.standardError)")
        }
    }

    /// Pixel formats by camctl's names in any case, or by CoreVideo's codes:
    /// '420f' is full-range NV12, and its stamps still read (--check).
    /// ARGB is CoreVideo's number 32, named 32ARGB.
    @Test func pixelFormatsByNameOrCoreVideoCode() async throws {
        try await withStreamingDaemon { daemon in
            for (argument, shown) in [("NV12-full", "420f"), ("420f", "420f"), ("BGRA", "BGRA"), ("y420", "y420"), ("Yuyv", "yuvs"), ("argb", "32ARGB")] {
                let result = try await camctl(["stream", "virtual-0", "--count", "3", "--pixel-format", argument, "--check"],
                                              socket: daemon.socketPath)
                #expect(result.status == 0 && result.standardError.contains("3 frames of \(shown) "), "\(argument): \(result.standardError)")
            }
            let unknown = try await camctl(["stream", "virtual-0", "--count", "1", "--pixel-format", "x420"], socket: daemon.socketPath)
            #expect(unknown.status != 0 && unknown.standardError.contains("nv12-full"), "\(unknown.standardError)")
        }
    }

    @Test func outputWritesTheRawFrames() async throws {
        try await withStreamingDaemon { daemon in
            try await withTemporaryDirectory { directory in
                let file = directory + "/frames.raw"
                let result = try await camctl(["stream", "virtual-0", "--count", "5", "--pixel-format", "bgra", "--size", "64x48",
                                               "--output", file], socket: daemon.socketPath)
                #expect(result.status == 0)
                let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int
                #expect(size == 5 * 64 * 48 * 4)
            }
        }
    }
}
