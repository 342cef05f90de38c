import CameraIPC
import CameraProtocol
import CameraTestSupport
import Foundation
import Glibc
import Testing

/// Issue 46's probes, kept, as the hostile-client suite's heavier half: what
/// costs camerad a thread — an encoder, an audio variant, a check of a client's
/// file, a close — is bounded per connection and per user; another user still
/// gets its share; and once the client goes, camerad's threads, descriptors
/// and memory come back to where they were. Storms on purpose: `make test` runs
/// this suite on its own, after the host suites (scripts/run-tests), so that
/// its load neither slows the others nor is slowed by them.
@Suite struct ResourceBoundsTests {
    /// camerad's footprint once a first recording (`recording` on a client of
    /// its own) came and went: what the first encoder loads (libx264's tables) stays.
    static func warmedUp(_ daemon: DaemonProcess,
                         recording: (RPCClient) throws -> RecordProtocolTests.RecordCall) async throws -> DaemonFootprint {
        let idle = DaemonFootprint(daemon)
        let (warm, warmLoop) = try await connectClient(daemon, name: "warm-up")
        let first = try recording(warm)
        #expect(await waitUntil(timeout: .seconds(60)) { first.started != nil })
        try first.stop()
        #expect(await first.waitForEnd())
        // Closed before the measure: its connection is not camerad's own.
        warm.close()
        warmLoop.stop()
        return await DaemonFootprint.quiet(daemon, threadsOf: idle)
    }

    /// Stops the recordings, closes their clients, and expects camerad back to its footprint.
    static func stop(_ calls: [RecordProtocolTests.RecordCall], _ clients: [(RPCClient, EventLoop)], andExpect daemon: DaemonProcess,
                     backTo baseline: DaemonFootprint) async throws {
        for call in calls where call.end == nil { try call.stop() }
        for call in calls { #expect(await call.waitForEnd()) }
        for (client, loop) in clients {
            client.close()
            loop.stop()
        }
        let after = await DaemonFootprint.settling(daemon, to: baseline)
        print("hostile: after they stopped: \(after)")
        #expect(after.isBack(to: baseline), "back to \(baseline): \(after)")
    }

    /// Whether a test can be a second user: root and setpriv(1).
    static let canBeNobody = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// camctl as uid 65534, against `daemon` (whose socket it must reach).
    static func camctlAsNobody(_ arguments: [String], _ daemon: DaemonProcess, timeout: Duration = .seconds(60)) async throws -> ProcessResult {
        try await runProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.camctl,
                                                  "--socket", daemon.socketPath] + arguments, timeout: timeout)
    }

    /// A daemon another user can reach (its folder 0755, its socket 0666), with
    /// glibc's caches off so that its memory tells a leak (`StreamingTests`).
    static func withDaemonForTwoUsers(_ arguments: [String], _ body: (DaemonProcess, String) async throws -> Void) async throws {
        try await withTemporaryDirectory { folder in
            chmod(folder, 0o755)
            let daemon = try await DaemonProcess(socketPath: folder + "/camerad.sock", arguments: arguments + ["--socket-mode", "0666"],
                                                 environment: DaemonFootprint.allocatorWithoutCaches)
            do {
                try await body(daemon, folder)
                await daemon.stop()
            } catch {
                await daemon.stop()
                throw error
            }
        }
    }

    // MARK: - Encoders

    /// Recordings at distinct settings each make an encoder (its thread, its
    /// megabytes): a connection gets 4, a user 8, the next refused naming the
    /// limit; a microphone's AAC encoders alike; another user still records;
    /// and once they stop, camerad is back where it was. (Measured before: one
    /// connection got 64 encoders, 394 threads and 1.9 GB, 1.4 GB kept.)
    @Test(.enabled(if: canBeNobody, "needs root and setpriv(1) to be a second user"), .timeLimit(.minutes(5)))
    func encodersAreBoundedPerConnectionAndUserAndGoWithTheirClients() async throws {
        try await Self.withDaemonForTwoUsers(["--virtual-cameras", "1", "--virtual-microphones", "5"]) { daemon, folder in
            func start(_ client: RPCClient, bitRate: UInt32, microphone: String = "", _ name: String) throws -> RecordProtocolTests.RecordCall {
                var start = RecordProtocolTests.start(microphone: microphone)
                start.video.averageBitRate = bitRate
                // Five frames a second: thirteen encoders at once cost the other tests little.
                start.video.frameRate = 5
                return try RecordProtocolTests.RecordCall(client, start, descriptors: [try RecordProtocolTests.file("\(folder)/\(name).mp4")])
            }
            let baseline = try await Self.warmedUp(daemon) { try start($0, bitRate: 99_000, "warm-up") }

            var clients: [(RPCClient, EventLoop)] = []
            var calls: [RecordProtocolTests.RecordCall] = []
            /// `count` recordings on a new connection, each started or refused.
            func onANewConnection(_ count: Int, _ bitRate: (Int) -> UInt32, microphone: (Int) -> String = { _ in "" }) async throws
                -> [RecordProtocolTests.RecordCall] {
                let (client, loop) = try await connectClient(daemon, name: "greedy-\(clients.count)")
                clients.append((client, loop))
                let made = try (0..<count).map { try start(client, bitRate: bitRate($0), microphone: microphone($0), "greedy-\(clients.count)-\($0)") }
                calls += made
                #expect(await waitUntil(timeout: .seconds(90)) { made.allSatisfy { $0.started != nil || $0.end != nil } })
                return made
            }
            /// Started in any order: `started` of `calls` start, the others are refused saying `words`.
            func expect(_ calls: [RecordProtocolTests.RecordCall], started: Int, refusedSaying words: String = "") {
                let refusals = calls.compactMap { $0.end ?? nil }
                #expect(calls.filter { $0.started != nil }.count == started && refusals.count == calls.count - started
                        && refusals.allSatisfy { $0.reason == .resourceExhausted && $0.message.contains(words) }, "\(refusals)")
            }
            expect(try await onANewConnection(5) { 100_000 + UInt32($0) * 1000 }, started: 4,
                   refusedSaying: "this connection uses 4 video encoders, the most one may (4)")
            expect(try await onANewConnection(4) { 200_000 + UInt32($0) * 1000 }, started: 4)
            expect(try await onANewConnection(1) { _ in 300_000 }, started: 0,
                   refusedSaying: "uid 0's clients use 8 video encoders, the most one user may (8)")
            // Sound from five microphones at one picture's settings (of the eight): four AAC encoders, no more.
            expect(try await onANewConnection(5, { _ in 100_000 }, microphone: { "virtual-microphone-\($0)" }), started: 4,
                   refusedSaying: "this connection uses 4 audio encoders, the most one may (4)")
            let busy = DaemonFootprint(daemon)
            print("hostile: one user's encoders at their bounds (8 video, 4 audio): \(busy), from \(baseline)")

            // Another user records at settings of its own: a ninth encoder, its.
            mkdir(folder + "/nobody", 0o777)
            chmod(folder + "/nobody", 0o777)
            let nobody = try await Self.camctlAsNobody(["record", "virtual-0", folder + "/nobody/movie.mp4", "--bitrate", "400000", "--fps", "5",
                                                         "--duration", "1", "--json"], daemon, timeout: .seconds(120))
            #expect(nobody.status == 0 && nobody.standardOutput.contains("\"recordingSuccessfullyFinished\":true"),
                    "\(nobody.standardOutput) \(nobody.standardError)")
            #expect(MovieProbe.frames(try await MovieProbe.videoStream(folder + "/nobody/movie.mp4")) > 0)

            try await Self.stop(calls, clients, andExpect: daemon, backTo: baseline)
            try await expectServes(daemon, devices: 6)
        }
    }

    /// Recordings each cost a recorder's thread: a connection gets 8, a user 32
    /// (here on eight encoders of four recordings each), the next refused
    /// naming the bound; another user still records; once they stop, camerad
    /// is back where it was.
    @Test(.enabled(if: canBeNobody, "needs root and setpriv(1) to be a second user"), .timeLimit(.minutes(5)))
    func recordingsAreBoundedPerConnectionAndUser() async throws {
        try await Self.withDaemonForTwoUsers(["--virtual-cameras", "1"]) { daemon, folder in
            var made = 0
            func record(on client: RPCClient, bitRate: UInt32) throws -> RecordProtocolTests.RecordCall {
                made += 1
                var start = RecordProtocolTests.start()
                start.video.averageBitRate = bitRate
                start.video.frameRate = 5
                return try RecordProtocolTests.RecordCall(client, start, descriptors: [try RecordProtocolTests.file("\(folder)/\(made).mp4")])
            }
            let baseline = try await Self.warmedUp(daemon) { try record(on: $0, bitRate: 99_000) }

            var clients: [(RPCClient, EventLoop)] = [], calls: [RecordProtocolTests.RecordCall] = []
            for connection in 0..<4 {
                let (client, loop) = try await connectClient(daemon, name: "greedy-\(connection)")
                clients.append((client, loop))
                // Four recordings on each of two encoders: a connection's eight.
                let eight = try (0..<8).map { try record(on: client, bitRate: 100_000 + UInt32(connection * 2 + $0 / 4) * 1000) }
                calls += eight
                #expect(await waitUntil(timeout: .seconds(90)) { eight.allSatisfy { $0.started != nil || $0.end != nil } })
                #expect(eight.allSatisfy { $0.started != nil }, "\(eight.compactMap { $0.end ?? nil })")
                if connection == 0 {
                    let ninth = try record(on: client, bitRate: 100_000)
                    #expect(await ninth.waitForEnd())
                    let error = ninth.end ?? nil
                    #expect(error?.reason == .resourceExhausted && error?.message.contains("this connection uses 8 recordings, the most one may (8)") == true,
                            "\(String(describing: error))")
                }
            }
            let (extra, extraLoop) = try await connectClient(daemon, name: "one-more")
            clients.append((extra, extraLoop))
            let beyond = try record(on: extra, bitRate: 100_000)
            #expect(await beyond.waitForEnd())
            let error = beyond.end ?? nil
            #expect(error?.reason == .resourceExhausted && error?.message.contains("uid 0's clients use 32 recordings, the most one user may (32)") == true,
                    "\(String(describing: error))")
            let busy = DaemonFootprint(daemon)
            print("hostile: one user's 32 recordings on 8 encoders: \(busy), from \(baseline)")

            mkdir(folder + "/nobody", 0o777)
            chmod(folder + "/nobody", 0o777)
            let nobody = try await Self.camctlAsNobody(["record", "virtual-0", folder + "/nobody/movie.mp4", "--fps", "5", "--duration", "1",
                                                         "--json"], daemon, timeout: .seconds(120))
            #expect(nobody.status == 0 && nobody.standardOutput.contains("\"recordingSuccessfullyFinished\":true"),
                    "another user records: \(nobody.standardOutput) \(nobody.standardError)")

            try await Self.stop(calls, clients, andExpect: daemon, backTo: baseline)
        }
    }

    // MARK: - Audio variants

    /// Listeners in layouts of their own each make a variant (a resampler's
    /// thread, a pool, a wake-up): a connection gets 8, a user 16; another user
    /// still listens; ten rounds of the storm leave camerad's descriptors,
    /// threads and memory where the first left them. (Measured before: 384
    /// variants from one client, and 11 → 192 → 861 descriptors over two rounds.)
    @Test(.enabled(if: canBeNobody, "needs root and setpriv(1) to be a second user"), .timeLimit(.minutes(5)))
    func audioVariantsAreBoundedAndTenStormsLeaveNothingBehind() async throws {
        try await Self.withDaemonForTwoUsers(["--virtual-cameras", "0", "--virtual-microphones", "1"]) { daemon, _ in
            /// Opens listeners in new layouts on new connections until the user's are refused; their refusals.
            func storm() async throws -> (connections: [RawProtocolClient], opened: Int, refusals: [String]) {
                var connections: [RawProtocolClient] = [], opened = 0, refusals: [String] = []
                for connection in 0..<3 {
                    let raw = try RawProtocolClient(path: daemon.socketPath)
                    try await raw.hello()
                    connections.append(raw)
                    for index in 0..<9 {
                        var format = Camerad_V1_AudioFormat()
                        format.periodFrames = UInt32(96 + connection * 16 + index)
                        let stream = try await RawStream(raw, callID: UInt64(100 + index))
                        try await stream.send(MicrophoneProtocolTests.open("virtual-microphone-0", format))
                        switch try await stream.next() {
                        case .success((let response, _)) where response.kind.map({ if case .started = $0 { true } else { false } }) == true:
                            opened += 1
                        case .success(let other): Issue.record("a listener's first answer: \(other)")
                        case .failure(let error):
                            #expect(error.reason == .resourceExhausted, "\(error)")
                            refusals.append(error.message)
                        }
                    }
                }
                return (connections, opened, refusals)
            }
            let idle = DaemonFootprint(daemon)
            // The first round warms up (glibc's arenas, the user's frame signal: kept while camerad runs).
            do {
                let first = try await storm()
                #expect(first.opened == 16 && first.refusals.count == 11, "\(first.opened) opened, refused: \(first.refusals)")
                #expect(first.refusals.first?.contains("this connection uses 8 audio variants and meters") == true, "\(first.refusals)")
                #expect(first.refusals.last?.contains("uid 0's clients use 16 audio variants and meters") == true, "\(first.refusals)")
                let nobody = try await Self.camctlAsNobody(["listen", "virtual-microphone-0", "--rate", "16000", "--duration", "1", "--stats",
                                                             "--json"], daemon)
                #expect(nobody.status == 0 && !nobody.standardOutput.isEmpty, "another user listens: \(nobody.standardError)")
                withExtendedLifetime(first.connections) {}
            }
            let baseline = await DaemonFootprint.quiet(daemon, threadsOf: idle)
            var rounds: [DaemonFootprint] = []
            for _ in 0..<10 {
                do {
                    let round = try await storm()
                    #expect(round.opened == 16, "\(round.refusals)")
                    withExtendedLifetime(round.connections) {}
                }
                rounds.append(await DaemonFootprint.settling(daemon, to: baseline))
            }
            print("hostile: ten audio-variant storms after a first: \(rounds.map(\.description)), from \(baseline)")
            #expect(rounds.allSatisfy { $0.isBack(to: baseline) }, "flat after the first round: \(rounds) from \(baseline)")
        }
    }

    // MARK: - Files that hang

    /// A hundred StartRecordings whose files hang at camerad's check, and a
    /// hundred descriptors of such a file whose every close hangs, from one
    /// client (five connections): the checks hold 16 threads at most (a user's
    /// bound) and are refused past it at once, the closes one thread per
    /// connection and four for the user; another client's recording runs on,
    /// another user records; SIGTERM still ends camerad — its socket gone at
    /// once, the process once the kernel lets its stuck threads go (the files'
    /// connection aborted). The client is a process of its own holding the
    /// files: a process that forks while it holds one would hang at exec.
    @Test(.enabled(if: HangingFile.isAvailable && canBeNobody, "needs root, /dev/fuse and setpriv(1)"), .timeLimit(.minutes(4)))
    func aHundredHungChecksAndClosesHoldUpNobodyAndSIGTERMStillEndsCamerad() async throws {
        try await Self.withDaemonForTwoUsers(["--virtual-cameras", "1"]) { daemon, folder in
            let file = try HangingFile(at: folder + "/hangs")
            defer { file.close() }
            let (other, otherLoop) = try await connectClient(daemon, name: "bystander")
            defer { other.close(); otherLoop.stop() }
            let bystander = try RecordProtocolTests.RecordCall(other, RecordProtocolTests.start(),
                                                               descriptors: [try RecordProtocolTests.file(folder + "/bystander.mp4")])
            #expect(await waitUntil(timeout: .seconds(60)) { bystander.started != nil })
            let baseline = DaemonFootprint(daemon)

            let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Clients/python").standardizedFileURL.path
            let hostile = try RunningProcess("/usr/bin/env", ["python3", "-c", Self.hungFilesClient, clients, daemon.socketPath, file.path, "100", "100", "5"])
            defer { kill(hostile.process.processIdentifier, SIGKILL) }
            #expect(await hostile.wait(timeout: .seconds(60)) { $0.lines.contains("opened") }, "\(hostile.standardError)")
            file.hang(closes: true)
            kill(hostile.process.processIdentifier, SIGUSR1)
            #expect(await hostile.wait(timeout: .seconds(120)) { $0.lines.count >= 2 }, "\(hostile.standardError)")
            let outcomes = try JSONDecoder().decode([String: Int].self, from: Data((hostile.lines.last ?? "{}").utf8))
            let stuck = DaemonFootprint(daemon)
            print("hostile: 100 starts on files that hang: \(outcomes); 100 closes that hang; camerad \(stuck), from \(baseline)")
            #expect((outcomes["TIMED_OUT"] ?? 0) <= 16 && (outcomes["TIMED_OUT"] ?? 0) >= 8
                    && (outcomes["TIMED_OUT"] ?? 0) + (outcomes["RESOURCE_EXHAUSTED"] ?? 0) == 100, "\(outcomes)")
            #expect(stuck.threads <= baseline.threads + 16 + DescriptorCloser.threadsPerUser + 4, "threads bounded: \(stuck) from \(baseline)")
            #expect(stuck.descriptors <= baseline.descriptors + 16 + DescriptorCloser.backlogPerUser + 32, "descriptors bounded: \(stuck)")
            #expect((outcomes["sent after"] ?? 0) < 2000, "a connection sending files while its user's closes hang is closed")

            let before = bystander.lastProgress?.frames ?? 0
            #expect(await waitUntil(timeout: .seconds(60)) { (bystander.lastProgress?.frames ?? 0) >= before + 30 }, "another client records on")
            mkdir(folder + "/nobody", 0o777)
            chmod(folder + "/nobody", 0o777)
            let nobody = try await Self.camctlAsNobody(["record", "virtual-0", folder + "/nobody/movie.mp4", "--duration", "1", "--json"],
                                                        daemon, timeout: .seconds(120))
            #expect(nobody.status == 0 && nobody.standardOutput.contains("\"recordingSuccessfullyFinished\":true"), "another user records: \(nobody.standardError)")

            // SIGTERM with threads stuck in the files' requests: the socket goes at once, calls end.
            kill(daemon.pid, SIGTERM)
            #expect(await waitUntil(timeout: .seconds(30)) { !FileManager.default.fileExists(atPath: daemon.socketPath) },
                    "camerad shut down beside its stuck threads")
            #expect(await bystander.waitForEnd(), "the bystander's call ended")
            // The kernel lets the stuck threads go once the files' connection is aborted: then camerad is gone.
            kill(hostile.process.processIdentifier, SIGKILL)
            file.close()
            #expect(await daemon.stop(timeout: .seconds(30)) == 0, "camerad exited 0: \(daemon.logText.suffix(2000))")
        }
    }

    /// The hostile client of the test above, in Python with the project's
    /// client: opens the FUSE file for every start and close, says so, waits
    /// for SIGUSR1 (the file hangs), starts a recording into each of the first
    /// across its connections, sends the rest with messages that claim none
    /// (camerad closes them), then the file again and again on another
    /// connection until camerad closes it, prints how the starts ended and how
    /// many more it sent, and holds its files.
    static let hungFilesClient = #"""
        import json, os, signal, sys
        sys.path.insert(0, sys.argv[1])
        import camerad
        from camerad import _protocol as wire
        sock, path, starts, closes, connections = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        files = [os.open(path, os.O_WRONLY | os.O_CLOEXEC) for _ in range(starts + closes)]
        print("opened", flush=True)
        signal.sigwait({signal.SIGUSR1})
        clients = [camerad.Client(socket=sock, client_name=f"hung-{n}") for n in range(connections)]
        recordings = [clients[n % connections].record("virtual-0", files[n], file_type="mp4") for n in range(starts)]
        for fd in files[starts:]:
            clients[0]._send_with_descriptor(wire.message_with_descriptor(999999, b""), fd)
        outcomes = {}
        for recording in recordings:
            try:
                recording.wait(timeout=120)
                code = "OK"
            except camerad.CaptureError as error:
                code = error.code.name
            outcomes[code] = outcomes.get(code, 0) + 1
        more, sent = camerad.Client(socket=sock, client_name="more"), 0
        try:
            for _ in range(2000):
                more._send_with_descriptor(wire.message_with_descriptor(999999, b""), files[-1])
                sent += 1
        except camerad.CaptureError:
            pass
        outcomes["sent after"] = sent
        print(json.dumps(outcomes), flush=True)
        signal.sigwait({signal.SIGUSR1})
        """#
}
