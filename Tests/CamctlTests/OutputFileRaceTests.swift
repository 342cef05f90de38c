import CameraTestSupport
import Foundation
import Glibc
import Testing

/// camctl run as root in a folder others may write: another user flips a
/// symbolic link to one of root's files in and out of the name camctl writes,
/// as fast as it can, while camctl records (with and without --force),
/// listens into a WAV file and appends raw frames. Whatever camctl answers,
/// root's file is never touched. (Before, `camctl record` checked the name
/// and then opened it: the third of three tries clobbered root's 0600 file.)
///
/// Run on its own after the host suites (scripts/run-tests): its flipper keeps a core busy.
@Suite struct OutputFileRaceTests {
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                   "needs root and setpriv(1) to be the other user"),
          .timeLimit(.minutes(4)))
    func aLinkFlippedByAnotherUserNeverTurnsCamctlOntoItsTarget() async throws {
        try await withRunningDaemon(arguments: ["--virtual-microphones", "1"]) { daemon in
            try await withTemporaryDirectory { folder in
                chmod(folder, 0o755)
                let target = folder + "/roots-own"
                let original = Data("root's own, 0600: never to be written by camctl\n".utf8)
                #expect(FileManager.default.createFile(atPath: target, contents: original, attributes: [.posixPermissions: 0o600]))
                // World-writable and not sticky: the kernel's protected_symlinks does not apply.
                let shared = folder + "/shared"
                #expect(mkdir(shared, 0o777) == 0 && chmod(shared, 0o777) == 0)
                // The system's Python (nothing forked per flip), a link in and out every 0.1 ms or so.
                let flipper = try RunningProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                                                                      "-I", "-c", Self.flipper, target, shared])
                defer { kill(flipper.process.processIdentifier, SIGKILL) }
                #expect(await waitUntil { !flipper.process.isRunning || Self.isLink(shared + "/out.mp4") || Self.isLink(shared + "/out.wav") },
                        "the other user flips its links")

                var answers: [String: [Int32]] = [:]
                for round in 0..<6 {
                    let commands: [(String, [String])] = [
                        ("record", ["record", "virtual-0", shared + "/out.mp4", "--size", "320x240", "--duration", "0.3"]
                            + (round % 2 == 1 ? ["--force"] : [])),
                        ("listen", ["listen", "virtual-microphone-0", "--output", shared + "/out.wav", "--duration", "0.3"]),
                        ("stream", ["stream", "virtual-0", "--output", shared + "/out.raw", "--count", "2"]),
                    ]
                    for (name, arguments) in commands {
                        let result = try await camctl(arguments, socket: daemon.socketPath, timeout: .seconds(60))
                        answers[name, default: []].append(result.status)
                        #expect(result.status == 0 || !result.standardError.isEmpty, "\(name) says why it refused")
                        #expect(FileManager.default.contents(atPath: target) == original, "round \(round), \(name): root's file is as it was")
                    }
                }
                var status = stat()
                #expect(lstat(target, &status) == 0 && status.st_mode & 0o777 == 0o600 && status.st_uid == 0)
                print("camctl beside a link flipped in and out (exit statuses): \(answers)")
                #expect(flipper.process.isRunning, "the other user flipped links throughout")
            }
        }
    }

    /// Flips a link to argv[1] in and out of each name camctl writes in argv[2], for good.
    static let flipper = #"""
        import os, sys, time
        target, folder = sys.argv[1], sys.argv[2]
        names = [os.path.join(folder, name) for name in ("out.mp4", "out.wav", "out.raw")]
        while True:
            for name in names:
                try:
                    os.symlink(target, name)
                    time.sleep(0.0001)
                    os.unlink(name)
                except OSError:
                    pass
        """#

    static func isLink(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK
    }
}
