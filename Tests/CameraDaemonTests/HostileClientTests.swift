import CameraIPC
import CameraProtocol
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

    /// Descriptors a message carries but does not claim are closed at once,
    /// not kept for the life of the connection; a message with more than a
    /// message may carry closes its connection.
    @Test func unclaimedDescriptorsAreClosedAtOnce() async throws {
        try await withRunningDaemon { daemon in
            let loop = try EventLoop(name: "hostile")
            defer { loop.stop() }
            let connection = try SocketConnection(socket: try UnixSocket.connect(to: daemon.socketPath), loop: loop)
            let recorder = ClosingRecorder()
            try connection.start(delegate: recorder)
            var hello = Camerad_V1_HelloRequest()
            hello.protocolVersion = CameraService.protocolVersion
            hello.clientName = "parker"
            _ = connection.send(EnvelopeCodec.encode(EnvelopeCodec.start(callID: 1, method: CameraService.hello.name,
                                                                         request: try hello.serializedBytes())))
            // Answered: camerad is serving, this connection among the rest.
            #expect(await waitUntil { recorder.ends == 1 })
            let baseline = daemon.openDescriptorCount
            // 300 calls, each carrying three descriptors it does not claim.
            for index in 0..<300 {
                _ = connection.send(EnvelopeCodec.encode(EnvelopeCodec.start(callID: UInt64(10 + index), method: CameraService.listDevices.name,
                                                                             request: [])), descriptors: try Self.devNull(3))
            }
            #expect(await waitUntil { recorder.ends >= 301 || connection.isClosed }, "every call answered")
            let parked = daemon.openDescriptorCount - baseline
            print("hostile: 900 unclaimed descriptors in 300 messages: \(parked) still open in camerad, the connection \(connection.isClosed ? "closed" : "open")")
            #expect(parked <= 1 && !connection.isClosed, "\(parked) descriptors parked in camerad")

            _ = connection.send(EnvelopeCodec.encode(EnvelopeCodec.start(callID: 9999, method: CameraService.listDevices.name, request: [])),
                                descriptors: try Self.devNull(DescriptorQueue.limit + 1))
            #expect(await waitUntil { connection.isClosed }, "more descriptors than a message may carry close the connection")
            #expect(await waitUntil { daemon.openDescriptorCount <= baseline }, "and camerad keeps none of them")
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
    /// connections than that) camerad refuses each new client at once, saying
    /// why, keeps serving the others, does not flood its log, and serves new
    /// clients again once some go.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs prlimit(1) from util-linux"))
    func outOfDescriptorsNewClientsAreRefusedAtOnceWithAReason() async throws {
        try await withTemporarySocketPath { path in
            let daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "1", "--max-connections", "1000"],
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

    init(_ daemon: DaemonProcess) async throws {
        self.daemon = daemon
        process = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", "virtual-0",
                                                       "--pixel-format", "nv12", "--check", "--json"])
        let streaming = try await waitUntil {
            try await StatsReport.of("virtual-0", daemon).variants.contains { $0.streams >= 1 && $0.framesMade > 5 }
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
