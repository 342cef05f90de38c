import CameraTestSupport
import Foundation
import Synchronization
import Testing

/// The threads a running camerad has are the ones ARCHITECTURE.md lists.
@Suite struct ThreadNamesTests {
    /// While a camera is recorded with sound and streamed in another format,
    /// every thread camerad names is named in ARCHITECTURE.md (as Linux keeps
    /// it: 15 bytes); the others are the main thread (the process's name) and
    /// libdispatch's (named after their root queue, `…-qos`, `….overcommit`).
    /// Then camerad stops as asked, status 0, with the recording's last timers
    /// still pending on its loop.
    @Test(.timeLimit(.minutes(4))) func theThreadsCameradRunsAreTheOnesArchitectureLists() async throws {
        let architecture = try String(contentsOf: PackageFiles.root.appending(path: "docs/ARCHITECTURE.md"), encoding: .utf8)
        let quoted = try NSRegularExpression(pattern: "`([^`\n]+)`")
        let listed = Set(quoted.matches(in: architecture, range: NSRange(architecture.startIndex..., in: architecture)).map {
            String(String(architecture[Range($0.range(at: 1), in: architecture)!]).utf8.prefix(15))!
        })
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon(virtualCameras: 1, arguments: ["--virtual-microphones", "1"]) { daemon in
                let recording = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "record", "virtual-0", folder + "/t.mp4",
                                                                     "--audio", "virtual-microphone-0", "--size", "320x240", "--duration", "3"])
                let stream = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", "virtual-0", "--pixel-format", "bgra",
                                                                  "--size", "160x120", "--duration", "3"])
                // Sampled on a thread of its own: this task may wait seconds for the pool on a busy test process.
                let sampler = ThreadSampler(pid: daemon.pid)
                let ended = await waitUntil(timeout: .seconds(180)) { !recording.process.isRunning && !stream.process.isRunning }
                let seen = sampler.stop()
                #expect(ended, "camctl record and stream ended")
                #expect(recording.process.terminationStatus == 0, "\(recording.standardError)")
                let unlisted = seen.filter { name in
                    name != "camerad" && !name.hasSuffix("-qos") && !name.hasSuffix(".overcommit") && !listed.contains(name)
                }
                #expect(unlisted.isEmpty, "threads ARCHITECTURE.md does not name: \(unlisted.sorted()); seen: \(seen.sorted())")
                for expected in ["camerad-io", "camerad-capture", "camerad-mic", "camerad-variant", "camerad-node", "camerad-recorde"] {
                    #expect(seen.contains(expected), "no \(expected) while a recording with sound and a BGRA stream ran: \(seen.sorted())")
                }
                #expect(await daemon.stop() == 0, "camerad stopped as asked:\n\(daemon.logText.suffix(4000))")
            }
        }
    }

}

/// Reads a process's thread names every 10 ms on a thread of its own, until stopped.
private final class ThreadSampler: Sendable {
    private let names = Mutex<Set<String>>([])
    private let stopped = Atomic(false)
    private let done = DispatchSemaphore(value: 0)

    init(pid: Int32) {
        Thread.detachNewThread { [self] in
            while !stopped.load(ordering: .relaxed) {
                let now = Self.threadNames(of: pid)
                names.withLock { $0.formUnion(now) }
                usleep(10_000)
            }
            done.signal()
        }
    }

    /// Stops sampling; the names seen.
    func stop() -> Set<String> {
        stopped.store(true, ordering: .relaxed)
        done.wait()
        return names.withLock { $0 }
    }

    /// The names of a process's threads now (gone ones are skipped).
    static func threadNames(of pid: Int32) -> Set<String> {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return Set(tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines)
        })
    }
}
