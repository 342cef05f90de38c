import CameraIPC
import CameraProtocol
import CCameraShims
import CameraTestSupport
import Foundation
import SwiftProtobuf
import Testing

/// What a hostile or careless client can do to camerad, each case beside a
/// well-behaved client (the bystander) streaming the whole time: the daemon
/// lives, refuses with a status that says what to do, and the bystander's
/// frames stay intact and accounted for. Every test prints its figures.
@Suite struct HostileClientTests {
    // MARK: - Replies that cannot fit

    @Test func anInlineStreamTooBigForAMessageIsRefusedAtItsStart() async throws {
        try await withBystander { daemon, _ in
            let result = try await camctl(["stream", "virtual-0", "--inline", "--pixel-format", "bgra", "--size", "2048x2048",
                                           "--count", "1"], socket: daemon.socketPath)
            print("hostile: inline 2048x2048 BGRA: status \(result.status): \(result.standardError)")
            #expect(result.status == 1 && result.standardError.contains("shared memory"), "\(result.standardError)")
        }
    }

    /// Names a client sends are refused when too long, and never echoed whole.
    @Test(arguments: LongName.allCases)
    func aLongNameIsRefusedAndNotEchoedWhole(_ name: LongName) async throws {
        try await withBystander { daemon, _ in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            let long = String(repeating: "x", count: 512 * 1024)
            let status: Camerad_V1_Status
            switch name {
            case .method:
                try await raw.hello()
                status = try await raw.call("/camerad.v1.Camera/" + long, request: []).status
            case .uniqueID:
                try await raw.hello()
                var request = Camerad_V1_GetDeviceRequest()
                request.uniqueID = long
                status = try await raw.call(CameraService.getDevice.name, request: try request.serializedBytes()).status
            case .clientName:
                var request = Camerad_V1_HelloRequest()
                request.protocolVersion = CameraService.protocolVersion
                request.clientName = long
                status = try await raw.call(CameraService.hello.name, request: try request.serializedBytes()).status
            }
            print("hostile: a \(name) of 512 KiB: \(status.code), a message of \(status.message.utf8.count) bytes")
            #expect(status.code == .invalidArgument, "\(status.code): \(status.message.prefix(200))")
            #expect(status.message.utf8.count <= 300, "echoed \(status.message.utf8.count) bytes")
        }
    }

    enum LongName: String, CaseIterable, CustomTestStringConvertible {
        case method, uniqueID, clientName
        var testDescription: String { rawValue }
    }

    /// Messages over the request limit (they once made replies too large to
    /// send, which crashed the daemon) close only their own connection, and
    /// four at once hold up nobody for long.
    @Test func messagesOverTheRequestLimitCloseOnlyTheirConnection() async throws {
        try await withBystander { daemon, bystander in
            let logBefore = daemon.logText.utf8.count
            let huge = String(repeating: "x", count: 15 * 1024 * 1024)
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        let raw = try RawProtocolClient(path: daemon.socketPath)
                        var request = Camerad_V1_HelloRequest()
                        request.protocolVersion = CameraService.protocolVersion
                        request.clientName = huge
                        let envelope = index == 0 ? EnvelopeCodec.start(callID: 1, method: huge, request: [])
                            : EnvelopeCodec.start(callID: 1, method: CameraService.hello.name, request: try request.serializedBytes())
                        do {
                            try await raw.send(envelope)
                        } catch {
                            return true  // closed while sending (EPIPE): camerad stopped at the length
                        }
                        return await raw.waitForClose(timeout: .seconds(60))
                    }
                }
                // Meanwhile another client is served: a figure, not a bound.
                let clock = ContinuousClock.now
                let other = try RawProtocolClient(path: daemon.socketPath)
                try await other.hello()
                #expect(try await other.call(CameraService.listDevices.name, request: []).status.code == .ok)
                let served = ContinuousClock.now - clock
                for try await closed in group { #expect(closed, "the connection is closed") }
                print("hostile: four 15 MiB messages: another client's Hello and List meanwhile took \(served)")
            }
            #expect(!daemon.hasExited)
            let logged = daemon.logText.utf8.count - logBefore
            print("hostile: four 15 MiB messages: the log grew \(logged) bytes; bystander so far \(bystander)")
            #expect(logged < 16 * 1024, "the log grew by \(logged) bytes")
        }
    }

    // MARK: - Frames held hostage

    /// Three clients of a variant hold every frame they may and never give one
    /// back; a new client of the same variant still gets every frame it wants.
    @Test func hoardersCannotStarveANewClientOfTheirVariant() async throws {
        try await withBystander { daemon, _ in
            var hoarders: [RawStream] = []
            for _ in 0..<3 {
                let raw = try RawProtocolClient(path: daemon.socketPath)
                try await raw.hello()
                let stream = try await RawStream(raw, callID: 7)
                try await stream.send(openStream("virtual-0", pixelFormat: .bgra, width: 320, height: 240))
                // It takes the three frames it may hold, and never gives one back.
                var held = 0
                while held < 3, case .success(let (response, _)) = try await stream.next() {
                    if case .frame = response.kind { held += 1 }
                }
                #expect(held == 3, "a hoarder got the frames it may hold")
                hoarders.append(stream)
            }
            let newcomer = try StreamReport(try await camctl(
                ["stream", "virtual-0", "--pixel-format", "bgra", "--size", "320x240", "--count", "60", "--check", "--json"],
                socket: daemon.socketPath, timeout: .seconds(120)))
            print("hostile: three hoarders; the newcomer of their variant: \(newcomer)")
            #expect(newcomer.frames == 60 && newcomer.accountsForEveryFrame, "\(newcomer)")
            #expect(newcomer.drops["outOfBuffers"] == 0, "no frame of the newcomer's is lost to the hoarders: \(newcomer)")
            _ = hoarders
        }
    }

    // MARK: - Writing into others' frames

    /// A pool's memfd reaches clients sealed against writing: no writable
    /// shared mapping, no mprotect to writable, no write(2).
    @Test func aClientCannotWriteIntoAPool() async throws {
        try await withBystander { daemon, bystander in
            let loop = try EventLoop(name: "hostile")
            defer { loop.stop() }
            let client = try await RPCClient.connect(to: daemon.socketPath, clientName: "scribbler", loop: loop)
            defer { client.close() }
            let call = try client.bidirectional(CameraService.stream)
            var open = Camerad_V1_StreamRequest()
            open.open.uniqueID = "virtual-0"
            try call.send(open)
            var responses = call.responses.withDescriptors.makeAsyncIterator()
            let started = try #require(try await responses.next())
            // The pool's own memfd and the capture's buffers it shares.
            #expect(started.descriptors.count == 2)
            for descriptor in started.descriptors {
                let fd = descriptor.rawValue
                let size = Int(lseek(fd, 0, SEEK_END))
                let writable = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                let writableErrno = errno
                let readable = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0)
                #expect(readable != MAP_FAILED, "reading stays possible")
                let upgrade = readable == MAP_FAILED ? -1 : mprotect(readable!, size, PROT_READ | PROT_WRITE)
                let upgradeErrno = errno
                var byte: UInt8 = 0xFF
                let written = pwrite(fd, &byte, 1, 0)
                let writeErrno = errno
                print("hostile: mapping \(size) bytes of a pool writable: \(writable == MAP_FAILED ? "refused, errno \(writableErrno)" : "ALLOWED"); "
                    + "mprotect to writable: \(upgrade == 0 ? "ALLOWED" : "refused, errno \(upgradeErrno)"); "
                    + "pwrite: \(written < 0 ? "refused, errno \(writeErrno)" : "ALLOWED"); bystander so far \(bystander)")
                #expect(writable == MAP_FAILED, "a writable shared mapping of a pool is refused")
                #expect(upgrade != 0, "a read-only mapping cannot be made writable")
                #expect(written < 0, "a pool cannot be written through its descriptor")
                if writable != MAP_FAILED {
                    // What a scribbler would do: every slot, over and over.
                    for _ in 0..<200 { memset(writable!, 0x5A, size) }
                    munmap(writable, size)
                }
                if readable != MAP_FAILED { munmap(readable, size) }
            }
            call.cancel()
        }
    }

    // MARK: - Files the daemon creates

    /// A symlink planted where the lock file goes is refused, never followed.
    @Test func aSymlinkAtTheLockFileIsRefusedNotFollowed() async throws {
        try await withTemporaryDirectory { folder in
            let victim = folder + "/victim"
            try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
            let socket = folder + "/camerad.sock"
            #expect(symlink(victim, socket + ".lock") == 0)
            let result = try await runProcess(Binaries.camerad, ["--socket", socket, "--virtual-cameras", "1",
                                                                 "--state-dir", folder + "/state"], timeout: .seconds(30))
            let after = try String(contentsOfFile: victim, encoding: .utf8)
            print("hostile: a symlink at the lock file: camerad exited \(result.status): \(result.standardError); the target now \(after.debugDescription)")
            #expect(after == "precious\n", "the symlink's target is untouched")
            #expect(result.status == 1 && result.standardError.contains("symlink"), "\(result.standardError)")
        }
    }

    /// `camctl set --persist` writes defaults.json through a fresh temporary
    /// file: a symlink planted at that name is not followed.
    @Test func storedDefaultsAreWrittenWithoutFollowingSymlinks() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon(arguments: ["--state-dir", folder + "/state"]) { daemon in
                let victim = folder + "/victim"
                try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
                try FileManager.default.createDirectory(atPath: folder + "/state", withIntermediateDirectories: true)
                #expect(symlink(victim, folder + "/state/defaults.json.tmp-\(daemon.pid)") == 0)
                let set = try await camctl(["set", "virtual-0", "--control", "brightness=100", "--persist"], socket: daemon.socketPath)
                let after = try String(contentsOfFile: victim, encoding: .utf8)
                print("hostile: a symlink at the defaults' temporary file: set exited \(set.status); the target now \(after.debugDescription)")
                #expect(after == "precious\n", "the symlink's target is untouched")
                #expect(set.status == 0, "\(set.standardError)")
                let stored = try String(contentsOfFile: folder + "/state/defaults.json", encoding: .utf8)
                #expect(stored.contains("brightness"), "\(stored)")
            }
        }
    }

    // MARK: - Descriptors

    /// camerad takes a client's descriptors only as a movie's file (Record):
    /// those that come with any other message — here 600, three with each of
    /// 200 calls — are closed as their message is read, on a thread of their
    /// own (closing a file may wait on a FUSE server, which must not hold up
    /// the event loop), and every call is answered. A message that claims
    /// descriptors it did not bring closes its connection.
    @Test func descriptorsAClientSendsAreClosedAndHeldByNobody() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello(name: "parker")
            let baseline = daemon.openDescriptorCount
            for index in 0..<200 {
                let frame = Frame.encode(EnvelopeCodec.encode(EnvelopeCodec.start(
                    callID: UInt64(10 + index), method: CameraService.listDevices.name, request: [])))
                #expect(try SCMRights.send(frame, descriptors: try Self.devNull(3), on: raw.socket) == frame.count)
            }
            var answered = 0, refusals: [String] = []
            while answered + refusals.count < 200, let envelope = try await raw.receive() {
                guard envelope.callID >= 10, case .end(let end)? = envelope.kind else { continue }
                if end.status.code == .ok { answered += 1 } else { refusals.append(end.status.message) }
            }
            #expect(refusals.isEmpty, "\(Set(refusals))")
            #expect(answered == 200)
            #expect(await waitUntil { daemon.openDescriptorCount <= baseline },
                    "camerad holds \(daemon.openDescriptorCount - baseline) of the client's descriptors")
            print("hostile: 600 descriptors sent in 200 messages: \(answered) calls answered; camerad holds none")

            var claiming = EnvelopeCodec.start(callID: 9999, method: CameraService.listDevices.name, request: [])
            claiming.fdCount = 1
            try await raw.sendBytes(Frame.encode(EnvelopeCodec.encode(claiming, descriptorCount: 1)))
            #expect(await raw.waitForClose(), "a message that claims descriptors closes its connection")
            #expect(await waitUntil { daemon.openDescriptorCount <= baseline })
            try await expectServes(daemon)
        }
    }

    static func devNull(_ count: Int) throws -> [OwnedFD] {
        try (0..<count).map { _ in
            let fd = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw DaemonFailure("open /dev/null: \(errno)") }
            return OwnedFD(adopting: fd)
        }
    }

    /// At its connection limit camerad refuses a new client at once, saying why.
    @Test func pastTheConnectionLimitAClientIsRefusedWithAReason() async throws {
        try await withRunningDaemon(arguments: ["--max-connections", "3"]) { daemon in
            var served: [RawProtocolClient] = []
            for _ in 0..<3 {
                let raw = try RawProtocolClient(path: daemon.socketPath)
                try await raw.hello()
                served.append(raw)
            }
            let refused = try await camctl(["list"], socket: daemon.socketPath)
            print("hostile: a fourth client of three: status \(refused.status): \(refused.standardError)")
            #expect(refused.status == 1 && refused.standardError.contains("at most 3 connections"), "\(refused.standardError)")
            served.removeLast()
            #expect(try await waitUntil { try await camctl(["list"], socket: daemon.socketPath).status == 0 },
                    "served again once a client goes")
        }
    }

    /// Out of file descriptors (48, under `prlimit`, with room for more
    /// connections than that, and a client budget larger than the limit, so
    /// that only the kernel refuses) camerad refuses each new client at once,
    /// saying why, keeps serving the others, does not flood its log, and serves
    /// new clients again once some go.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs prlimit(1) from util-linux"))
    func outOfDescriptorsNewClientsAreRefusedAtOnceWithAReason() async throws {
        try await withTemporarySocketPath { path in
            let daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "1", "--max-connections", "1000",
                                                                               "--client-descriptors", "100000"],
                                                 launcher: ["/usr/bin/prlimit", "--nofile=48"])
            var served: [RawProtocolClient] = []
            var refusal: Camerad_V1_Status?
            while refusal == nil, served.count < 100 {
                let raw = try RawProtocolClient(path: path)
                refusal = try await raw.helloOrRefusal()
                if refusal == nil { served.append(raw) }
            }
            let logBefore = daemon.logText.utf8.count
            let cpuBefore = processCPUSeconds(daemon.pid)
            let clock = ContinuousClock.now
            // Fifty more, all kept open: each is answered at once, served or refused.
            var refusals = 0
            for _ in 0..<50 {
                let raw = try RawProtocolClient(path: path)
                if try await raw.helloOrRefusal() != nil { refusals += 1 } else { served.append(raw) }
            }
            let cpu = processCPUSeconds(daemon.pid) - cpuBefore
            let seconds = Double((ContinuousClock.now - clock) / .milliseconds(1)) / 1000
            let refusalLines = daemon.logText.dropFirst(logBefore).components(separatedBy: "refused a connection").count - 1
            print("hostile: out of descriptors after \(served.count - (50 - refusals)) clients: '\(refusal?.message ?? "no refusal")'; "
                + "50 more: \(refusals) refused at once, \(50 - refusals) served; camerad used \(String(format: "%.2f", cpu)) s of CPU "
                + "in \(String(format: "%.2f", seconds)) s and logged \(refusalLines) refusal line(s)")
            #expect(refusal?.code == .resourceExhausted && refusal?.message.contains("out of file descriptors") == true, "\(String(describing: refusal))")
            #expect(refusals > 0, "new clients are refused while camerad is out of descriptors")
            #expect(refusalLines <= Int(seconds) + 2, "at most a line a second: \(refusalLines) in \(seconds) s")
            // The clients it serves are served all along.
            #expect(try await served[0].call(CameraService.listDevices.name, request: []).status.code == .ok)

            served.removeLast(8)
            #expect(try await waitUntil { try await RawProtocolClient(path: path).helloOrRefusal() == nil },
                    "served again once clients go")
            #expect(!daemon.hasExited)
            await daemon.stop()
        }
    }

    /// One user (nobody) opens connections with sixteen ring streams each
    /// until camerad refuses it, under a limit of 1024 descriptors: it gets
    /// its share, a quarter of what camerad keeps for clients, and a reason.
    /// Another user (root) still connects and streams with rings beside it,
    /// a bystander keeps every frame, and the descriptors come back when the
    /// greedy user goes.
    @Test(.enabled(if: GreedyClient.isAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"),
                   "needs root, setpriv(1), prlimit(1) and /usr/bin/python3 to be a second user under a descriptor limit"))
    func oneUserCannotTakeEveryDescriptor() async throws {
        try await withTemporaryDirectory { directory in
            chmod(directory, 0o755)
            let daemon = try await DaemonProcess(socketPath: directory + "/camerad.sock",
                                                 arguments: ["--virtual-cameras", "1", "--socket-mode", "0666"],
                                                 launcher: ["/usr/bin/prlimit", "--nofile=1024"])
            let bystander = try await Bystander(daemon)
            let baseline = daemon.openDescriptorCount
            let greedy = try GreedyClient(socket: daemon.socketPath, device: "virtual-0", width: 64, height: 48,
                                          streamsPerConnection: 16, protocolVersion: CameraService.protocolVersion)
            let report = try await greedy.report()
            let held = daemon.openDescriptorCount
            print("hostile: uid 65534 under a limit of 1024: \(report); camerad holds \(held) descriptors (\(baseline) before)")
            #expect(report.code == 8 && report.message.contains("uid 65534") && report.message.contains("close some"),
                    "\(report)")
            #expect(report.streams >= 16, "the greedy user got streams before its share ran out: \(report)")
            #expect(held < 1024 - 512, "camerad keeps most of its descriptors for others: \(held) open")

            // Another user still connects and streams, with rings (CaptureKit's), beside it.
            let list = try await camctl(["list"], socket: daemon.socketPath)
            #expect(list.status == 0, "\(list.standardError)")
            let newcomer = try StreamReport(try await camctl(["stream", "virtual-0", "--pixel-format", "bgra", "--count", "30",
                                                              "--check", "--json"],
                                                             socket: daemon.socketPath, timeout: .seconds(120)))
            print("hostile: beside uid 65534's streams, root's new stream: \(newcomer)")
            #expect(newcomer.frames == 30 && newcomer.accountsForEveryFrame, "\(newcomer)")

            await greedy.stop()
            #expect(await waitUntil(timeout: .seconds(60)) { daemon.openDescriptorCount <= baseline + 8 },
                    "the greedy user's descriptors come back: \(daemon.openDescriptorCount) open, \(baseline) before")
            let again = try await GreedyClient(socket: daemon.socketPath, device: "virtual-0", width: 64, height: 48,
                                               streamsPerConnection: 16, protocolVersion: CameraService.protocolVersion).report()
            #expect(again.streams == report.streams, "its share is whole again: \(again)")
            #expect(!daemon.hasExited)
            let seen = try await bystander.finish()
            print("bystander: \(seen)")
            #expect(seen.frames > 0 && seen.accountsForEveryFrame && seen.check?.torn == 0, "\(seen)")
            await daemon.stop()
        }
    }

    /// One user's streams may hold a quarter of the frame pools' memory
    /// (here 64 MiB in all), whatever connections they come on; another user
    /// still gets its own.
    @Test(.enabled(if: GreedyClient.isAvailable, "needs root, setpriv(1) and /usr/bin/python3 to be a second user"))
    func oneUserCannotTakeEveryPoolByte() async throws {
        try await withTemporaryDirectory { directory in
            chmod(directory, 0o755)
            let daemon = try await DaemonProcess(socketPath: directory + "/camerad.sock",
                                                 arguments: ["--virtual-cameras", "1", "--socket-mode", "0666", "--pool-memory", "64"])
            let greedy = try GreedyClient(socket: daemon.socketPath, device: "virtual-0", width: 640, height: 480,
                                          streamsPerConnection: 4, protocolVersion: CameraService.protocolVersion)
            let report = try await greedy.report()
            print("hostile: uid 65534 with 64 MiB of pools in all: \(report)")
            #expect(report.code == 8 && report.message.contains("one user may") && report.connections >= 2, "\(report)")
            let newcomer = try StreamReport(try await camctl(["stream", "virtual-0", "--pixel-format", "nv12", "--size", "320x240",
                                                              "--count", "30", "--check", "--json"],
                                                             socket: daemon.socketPath, timeout: .seconds(120)))
            print("hostile: beside uid 65534's streams, root's new stream: \(newcomer)")
            #expect(newcomer.frames == 30 && newcomer.accountsForEveryFrame, "\(newcomer)")
            await greedy.stop()
            await daemon.stop()
        }
    }

    // MARK: - Outputs that cost everyone

    /// Outputs are bounded: their size, the streams of one connection, the
    /// variants of one device. Each past its bound is refused with
    /// RESOURCE_EXHAUSTED and what to do.
    @Test func outputsAreBounded() async throws {
        try await withBystander { daemon, _ in
            let huge = try await camctl(["stream", "virtual-0", "--pixel-format", "bgra", "--size", "8192x8192",
                                         "--frames-in-flight", "8", "--count", "1"], socket: daemon.socketPath)
            print("hostile: an 8192x8192 BGRA stream: status \(huge.status): \(huge.standardError)")
            #expect(huge.status == 1 && huge.standardError.contains("over camerad's limit"), "\(huge.standardError)")

            // One connection opens streams of one variant until refused.
            let (raw, opened, refusal) = try await Self.openStreamsUntilRefused(daemon) { _ in
                openStream("virtual-0", pixelFormat: .nv12, width: 64, height: 48)
            }
            print("hostile: streams on one connection: \(opened) opened, then '\(refusal?.message ?? "none refused")'")
            #expect(opened == 16 && refusal?.code == .resourceExhausted, "\(String(describing: refusal))")

            // Another opens a new variant each time (the bystander's and 64x48 make two).
            let (other, variants, variantRefusal) = try await Self.openStreamsUntilRefused(daemon) { index in
                openStream("virtual-0", pixelFormat: .nv12, width: UInt32(66 + 2 * index), height: 48)
            }
            print("hostile: variants of one device: the bystander's, 64x48 and \(variants) more, then '\(variantRefusal?.message ?? "none refused")'")
            #expect(variants == 14 && variantRefusal?.message.contains("output variants") == true, "\(String(describing: variantRefusal))")
            _ = (raw, other)
        }
    }

    /// Opens streams on one new connection, `request(n)` for the n-th, until one
    /// is refused (at most 64); the connection stays open with them.
    static func openStreamsUntilRefused(
        _ daemon: DaemonProcess, _ request: (Int) -> Camerad_V1_StreamRequest
    ) async throws -> (RawProtocolClient, opened: Int, refusal: RPCError?) {
        let raw = try RawProtocolClient(path: daemon.socketPath)
        try await raw.hello()
        for index in 0..<64 {
            let stream = try await RawStream(raw, callID: UInt64(100 + index))
            try await stream.send(request(index))
            if case .failure(let error) = try await stream.next() { return (raw, index, error) }
        }
        return (raw, 64, nil)
    }

    // MARK: - The frame ring's wake-up

    /// A client of the bystanders' own user does what it can to its frame
    /// ring's signal (``FrameSignalSabotage``: blocking, full, fed), and holds
    /// its frames, then gives them back by message, so that camerad wakes the
    /// user's streams both from the device's capture and from its event loop. Nothing it does to its descriptor reaches
    /// camerad's: the device captures on, bystanders on the same camera (sharing
    /// the signal) and on another keep every frame, and new clients are served.
    @Test func aClientCannotMakeCameradBlockOnItsFrameSignal() async throws {
        try await withRunningDaemon(virtualCameras: 2) { daemon in
            let near = try await Bystander(daemon, device: "virtual-0")
            let far = try await Bystander(daemon, device: "virtual-1")
            let saboteur = try await PoolReader(daemon, device: "virtual-0", name: "saboteur", frameRing: true,
                                                keepsLateFrames: true)
            let held = try await saboteur.read(3, releasing: false)
            let signal = try #require(saboteur.frameSignal)
            print("hostile: the frame signal, made blocking and filled: \(FrameSignalSabotage.apply(to: signal.rawValue))")
            let before = try await StatsReport.of("virtual-0", daemon).framesCaptured
            // Given back by message, they let queued frames move up: a wake-up from camerad's event loop.
            for frame in held {
                var release = Camerad_V1_StreamRequest()
                release.release.poolID = frame.poolID
                release.release.slots = [frame.slot]
                try saboteur.send(release)
            }
            let captured = try await waitUntil(timeout: .seconds(90)) {
                try await StatsReport.of("virtual-0", daemon).framesCaptured >= before + 90
            }
            #expect(captured, "virtual-0 captures on")
            let list = try await camctl(["list"], socket: daemon.socketPath)
            #expect(list.status == 0, "a new client is served: \(list.standardError)")
            for device in ["virtual-0", "virtual-1"] {
                let newcomer = try StreamReport(try await camctl(["stream", device, "--count", "30", "--check", "--json"],
                                                                  socket: daemon.socketPath, timeout: .seconds(120)))
                print("hostile: beside the saboteur, a new stream of \(device): \(newcomer)")
                #expect(newcomer.frames == 30 && newcomer.accountsForEveryFrame, "\(newcomer)")
            }
            saboteur.close()
            #expect(!daemon.hasExited, "camerad lives")
            for bystander in [near, far] {
                let report = try await bystander.finish()
                print("bystander: \(report)")
                // Its stream spans the 90 frames captured while the saboteur ran,
                // each got or reported (a loaded machine makes a slow reader late,
                // never camerad stall).
                #expect(report.accounting.span > 90 && report.frames > 0 && report.accountsForEveryFrame, "\(report)")
                #expect(report.check?.intact == report.frames && report.check?.torn == 0, "\(report)")
                #expect(report.drops["outOfBuffers"] == 0, "\(report)")
            }
        }
    }

    // MARK: - Values no camerad knows

    /// One rule for the enums and fractions of every call: a value this
    /// camerad does not know, or a fraction that is no duration, is refused
    /// with INVALID_ARGUMENT naming what it takes — never taken as a default.
    @Test func unknownEnumValuesAndFractionsThatAreNoDurationAreRefusedNamingWhatTheyTake() async throws {
        try await withRunningDaemon { daemon in
            let raw = try await lockedClient(daemon)
            enum Call {
                case stream(Camerad_V1_StreamRequest)
                case unary(String, [UInt8])
            }
            func stream(_ change: (inout Camerad_V1_StreamRequest) -> Void) -> Call {
                var request = openStream("virtual-0")
                change(&request)
                return .stream(request)
            }
            func unary(_ method: String, _ request: some SwiftProtobuf.Message) throws -> Call {
                .unary(method, try request.serializedBytes())
            }
            func photo(_ change: (inout Camerad_V1_PhotoSettings) -> Void) -> Camerad_V1_CapturePhotoRequest {
                var request = Camerad_V1_CapturePhotoRequest()
                request.uniqueID = "virtual-0"
                change(&request.settings)
                return request
            }
            func configure(_ change: (inout Camerad_V1_DeviceConfiguration) -> Void) -> Camerad_V1_ConfigureDeviceRequest {
                var request = Camerad_V1_ConfigureDeviceRequest()
                request.uniqueID = "virtual-0"
                change(&request.configuration)
                return request
            }
            func filter(_ change: (inout Camerad_V1_DeviceFilter) -> Void) -> Camerad_V1_ListDevicesRequest {
                var request = Camerad_V1_ListDevicesRequest()
                change(&request.filter)
                return request
            }
            var virtual = Camerad_V1_AddVirtualCameraRequest()
            virtual.position = .UNRECOGNIZED(9)
            var zeroRate = Camerad_V1_AddVirtualCameraRequest()
            zeroRate.frameDuration = fraction(0, 30)
            let cases: [(what: String, says: String, call: Call)] = [
                ("pixel format 9", "pixel_format 9 is unknown to this camerad; use 0 (native), 1 (nv12)",
                 stream { $0.open.settings.pixelFormat = .UNRECOGNIZED(9) }),
                ("orientation 9", "orientation 9 is unknown to this camerad; use 0 (unspecified), 1 (portrait)",
                 stream { $0.open.settings.orientation = .UNRECOGNIZED(9) }),
                ("delivery 9", "delivery 9 is unknown to this camerad; use 0 (sharedMemory) or 1 (inline)",
                 stream { $0.open.settings.delivery = .UNRECOGNIZED(9) }),
                ("preset 99", "preset 99 is unknown to this camerad; use 0 (unspecified)",
                 stream { $0.open.preset = .UNRECOGNIZED(99) }),
                ("min frame duration 0/0", "min_frame_duration 0/0 is not a duration",
                 stream { $0.open.settings.minFrameDuration = fraction(0, 0) }),
                ("min frame duration 1/0", "min_frame_duration 1/0 is not a duration",
                 stream { $0.open.settings.minFrameDuration = fraction(1, 0) }),
                ("min frame duration 0/30", "min_frame_duration 0/30 is not a duration",
                 stream { $0.open.settings.minFrameDuration = fraction(0, 30) }),
                ("photo codec 9", "codec 9 is unknown to this camerad; use 0 (jpeg)",
                 try unary(CameraService.capturePhoto.name, photo { $0.codec = .UNRECOGNIZED(9) })),
                ("flash mode 9", "flash_mode 9 is unknown to this camerad; use 0 (unspecified), 1 (off), 2 (on) or 3 (auto)",
                 try unary(CameraService.capturePhoto.name, photo { $0.flashMode = .UNRECOGNIZED(9) })),
                ("photo orientation 9", "orientation 9 is unknown to this camerad",
                 try unary(CameraService.capturePhoto.name, photo { $0.orientation = .UNRECOGNIZED(9) })),
                ("focus mode 9", "focus_mode 9 is unknown to this camerad; use 0 (unspecified), 1 (locked)",
                 try unary(CameraService.configureDevice.name, configure { $0.focusMode = .UNRECOGNIZED(9) })),
                ("torch mode 9", "torch_mode 9 is unknown to this camerad; use 0 (unspecified), 1 (off)",
                 try unary(CameraService.configureDevice.name, configure { $0.torchMode = .UNRECOGNIZED(9) })),
                ("active min frame duration 0/0", "active_min_frame_duration 0/0 is not a duration",
                 try unary(CameraService.configureDevice.name, configure { $0.activeMinFrameDuration = fraction(0, 0) })),
                ("exposure duration 0/100", "exposure_duration 0/100 is not a duration",
                 try unary(CameraService.configureDevice.name, configure { $0.exposureDuration = fraction(0, 100) })),
                ("a virtual camera's position 9", "position 9 is unknown to this camerad; use 0 (unspecified)",
                 try unary(CameraService.addVirtualCamera.name, virtual)),
                ("a virtual camera's frame duration 0/30", "frame_duration 0/30 is not a duration",
                 try unary(CameraService.addVirtualCamera.name, zeroRate)),
                ("a filter's position 9", "position 9 is unknown to this camerad",
                 try unary(CameraService.listDevices.name, filter { $0.position = .UNRECOGNIZED(9) })),
                ("a filter's device type 99", "device_types 99 is unknown to this camerad",
                 try unary(CameraService.listDevices.name, filter { $0.deviceTypes = [.builtInWideAngleCamera, .UNRECOGNIZED(99)] })),
                ("a filter's media type 9", "media_type 9 is unknown to this camerad",
                 try unary(CameraService.listDevices.name, filter { $0.mediaType = .UNRECOGNIZED(9) })),
            ]
            for (index, (what, says, call)) in cases.enumerated() {
                let status: (code: Camerad_V1_StatusCode, message: String)
                switch call {
                case .stream(let request):
                    let stream = try await RawStream(raw, callID: UInt64(1000 + index))
                    try await stream.send(request)
                    let error = try await stream.end()
                    status = (error.code, error.message)
                case .unary(let method, let request):
                    let end = try await raw.call(method, request: request).status
                    status = (end.code, end.message)
                }
                print("hostile: \(what): \(status.code): \(status.message)")
                #expect(status.code == .invalidArgument && status.message.contains(says), "\(what): \(status.code): \(status.message)")
            }
            try await expectServes(daemon)
            #expect(try await camctl(["list"], socket: daemon.socketPath).lines.count == 1, "no virtual camera was added")
        }
    }

    // MARK: - Signals

    /// SIGHUP reads the stored defaults again (an administrator edited them),
    /// and camerad serves on.
    @Test func sighupReadsTheStoredDefaultsAgainAndTheDaemonServesOn() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon(arguments: ["--state-dir", folder + "/state"]) { daemon in
                let set = try await camctl(["set", "virtual-0", "--control", "brightness=100", "--persist"], socket: daemon.socketPath)
                #expect(set.status == 0, "\(set.standardError)")
                let file = folder + "/state/defaults.json"
                let edited = try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "\"100\"", with: "\"50\"")
                try edited.write(toFile: file, atomically: false, encoding: .utf8)
                kill(daemon.pid, SIGHUP)
                // (At start there was no file to read.)
                #expect(await waitUntil { daemon.logText.contains("read from \(file)") }, "the file is read again")
                #expect(!daemon.hasExited && UnixSocket.isServed(daemon.socketPath), "camerad serves on")
                // A device that connects from now on gets what the file says now.
                #expect(try await camctl(["virtual", "remove", "virtual-0"], socket: daemon.socketPath).status == 0)
                #expect(try await camctl(["virtual", "add", "--index", "0"], socket: daemon.socketPath).status == 0)
                let brightness = try await camctl(["get", "virtual-0", "brightness"], socket: daemon.socketPath)
                print("hostile: SIGHUP: camerad \(daemon.hasExited ? "died" : "serves on"); virtual-0 came back with \(brightness.standardOutput)")
                #expect(brightness.lines == ["brightness: 50"], "\(brightness.standardOutput)")
            }
        }
    }

    // MARK: - Helpers

    /// Runs `body` beside a bystander: `camctl stream --check` on virtual-0,
    /// stopped at the end. Its frames must stay intact and accounted for, and
    /// none may be lost for want of a slot.
    func withBystander(_ body: (DaemonProcess, Bystander) async throws -> Void) async throws {
        try await withRunningDaemon { daemon in
            let bystander = try await Bystander(daemon)
            try await body(daemon, bystander)
            #expect(!daemon.hasExited, "camerad lives")
            let report = try await bystander.finish()
            print("bystander: \(report)")
            #expect(report.frames > 0 && report.accountsForEveryFrame, "\(report)")
            #expect(report.check?.intact == report.frames && report.check?.torn == 0, "\(report)")
            #expect(report.drops["outOfBuffers"] == 0, "\(report)")
        }
    }
}

/// A well-behaved client, streaming NV12 with the stamp check until finished.
final class Bystander: CustomStringConvertible, Sendable {
    let process: RunningProcess
    let daemon: DaemonProcess

    init(_ daemon: DaemonProcess, device: String = "virtual-0") async throws {
        self.daemon = daemon
        process = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", device,
                                                       "--pixel-format", "nv12", "--check", "--json"])
        let streaming = try await waitUntil {
            try await StatsReport.of(device, daemon).variants.contains { $0.streams >= 1 && $0.framesMade > 5 }
        }
        if !streaming { throw DaemonFailure("the bystander did not start: \(process.standardError)") }
    }

    var description: String { "streaming, pid \(process.process.processIdentifier)" }

    /// Stops it (SIGINT) and reads its report.
    func finish() async throws -> StreamReport {
        try StreamReport(await process.stop(signal: SIGINT, timeout: .seconds(60)))
    }
}

/// Counts the calls ended on a raw connection.
final class ClosingRecorder: SocketConnectionDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var ended = 0

    var ends: Int { lock.withLock { ended } }

    func connection(_ connection: SocketConnection, didReceive frame: [UInt8], descriptors: inout DescriptorQueue) throws {
        let (envelope, _) = try EnvelopeCodec.decode(frame, descriptors: &descriptors)
        if case .end = envelope.kind { lock.withLock { ended += 1 } }
    }

    func connectionDidClose(_ connection: SocketConnection, error: (any Error)?) {}
}

extension RawProtocolClient {
    /// Says Hello; nil when served, else the status camerad refused the connection with.
    func helloOrRefusal() async throws -> Camerad_V1_Status? {
        var request = Camerad_V1_HelloRequest()
        request.protocolVersion = CameraService.protocolVersion
        request.clientName = "raw-test-client"
        do {
            try await send(EnvelopeCodec.start(callID: 1, method: CameraService.hello.name, request: try request.serializedBytes()))
        } catch {
            // Refused before the Hello went out (EPIPE): the reason is still there to read.
        }
        while let envelope = try await receive() {
            if envelope.endsConnection, case .end(let end)? = envelope.kind { return end.status }
            if envelope.callID == 1, case .end(let end)? = envelope.kind {
                if end.status.code == .ok { return nil }
                return end.status
            }
        }
        throw DaemonFailure("the connection closed without a word")
    }
}

/// A process's user and system CPU time so far, in seconds (from /proc).
func processCPUSeconds(_ pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // After the command: state is field 3, utime 14 and stime 15.
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// An OpenStream request for `uniqueID` with an output format and size.
func openStream(
    _ uniqueID: String, pixelFormat: Camerad_V1_OutputPixelFormat = .native, width: UInt32 = 0, height: UInt32 = 0
) -> Camerad_V1_StreamRequest {
    var request = Camerad_V1_StreamRequest()
    request.open.uniqueID = uniqueID
    request.open.settings.pixelFormat = pixelFormat
    request.open.settings.width = width
    request.open.settings.height = height
    return request
}

/// What a hostile client does to its frame ring's signal: makes the descriptor
/// blocking (its file status flags, which every copy of an open file shares),
/// drives it as full as it goes (an eventfd's counter to its maximum), writes
/// and reads it where it can, and adds a descriptor of its own to it where it
/// is an epoll instance — without ever blocking itself.
enum FrameSignalSabotage {
    /// Returns what it managed, for the test's figures.
    static func apply(to fd: Int32) -> String {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        var done: [String] = []
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "?"
        done.append(target)
        if target.contains("eventfd") {
            // The counter to its maximum, 2^64 - 2: camerad's next write would sleep.
            for _ in 0..<100 {
                var value: UInt64 = 0
                _ = read(fd, &value, 8)
                var most = UInt64.max - 1
                if write(fd, &most, 8) == 8 {
                    done.append("its counter set to 2^64-2")
                    break
                }
            }
        } else {
            var most = UInt64.max - 1
            done.append(write(fd, &most, 8) == 8 ? "written" : "not writable (errno \(errno))")
            done.append(read(fd, &most, 8) == 8 ? "read" : "not readable (errno \(errno))")
            if target.contains("eventpoll") {
                let own = eventfd(1, Int32(EFD_CLOEXEC))
                var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: own))
                done.append(epoll_ctl(fd, EPOLL_CTL_ADD, own, &event) == 0 ? "a readable eventfd of its own added"
                                                                           : "nothing added (errno \(errno))")
            }
        }
        let blocking = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0
        done.append(blocking ? "O_NONBLOCK cleared" : "O_NONBLOCK could not be cleared (errno \(errno))")
        return done.joined(separator: "; ")
    }
}

/// `numerator / denominator` seconds, as a request carries it.
func fraction(_ numerator: UInt32, _ denominator: UInt32) -> Camerad_V1_Fraction {
    var fraction = Camerad_V1_Fraction()
    fraction.numerator = numerator
    fraction.denominator = denominator
    return fraction
}
