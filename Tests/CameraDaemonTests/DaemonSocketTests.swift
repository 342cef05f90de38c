@testable import CameraDaemon
import CameraIPC
import CameraTestSupport
import Foundation
import Testing

@Suite struct DaemonSocketTests {
    @Test func aStaleSocketFileIsReplaced() async throws {
        try await withTemporarySocketPath { path in
            makeStaleSocketFile(at: path)
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(!UnixSocket.isServed(path))
            let socket = try DaemonSocket.claim(path: path, mode: 0o660, group: nil)
            #expect(UnixSocket.isServed(path))
            socket.remove()
        }
    }

    @Test func aSecondClaimOfTheSamePathIsRefusedWithTheHoldersPid() async throws {
        try await withTemporarySocketPath { path in
            let first = try DaemonSocket.claim(path: path, mode: 0o660, group: nil)
            #expect(throws: DaemonError.alreadyRunning(path: path, pid: getpid())) {
                try DaemonSocket.claim(path: path, mode: 0o660, group: nil)
            }
            first.remove()
        }
    }

    @Test func aFileThatIsNotASocketIsLeftAlone() async throws {
        await withTemporarySocketPath { path in
            #expect(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
            #expect(throws: DaemonError.notASocket(path: path)) {
                try DaemonSocket.claim(path: path, mode: 0o660, group: nil)
            }
            #expect((try? String(contentsOfFile: path, encoding: .utf8)) == "keep me")
        }
    }

    @Test func anUnknownGroupIsRefusedAndLeavesNoSocket() async throws {
        await withTemporarySocketPath { path in
            #expect(throws: DaemonError.unknownGroup("no-such-group-camerad")) {
                try DaemonSocket.claim(path: path, mode: 0o660, group: "no-such-group-camerad")
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func theSocketGetsItsModeAndGroup() async throws {
        try await withTemporarySocketPath { path in
            let socket = try DaemonSocket.claim(path: path, mode: 0o620, group: "daemon")
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect(attributes[.posixPermissions] as? Int == 0o620)
            #expect(attributes[.groupOwnerAccountName] as? String == "daemon")
            socket.remove()
        }
    }

    @Test func aMissingParentDirectoryIsCreated() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/run/camerad.sock"
            let socket = try DaemonSocket.claim(path: path, mode: 0o660, group: nil)
            #expect(UnixSocket.isServed(path))
            socket.remove()
        }
    }
}
