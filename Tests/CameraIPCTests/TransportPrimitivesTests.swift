import CameraIPC
import CameraTestSupport
import Foundation
import Testing

@Suite struct SharedMemoryTests {
    @Test func aMemfdIsSealedAgainstResizingAndMapsElsewhere() throws {
        let memory = try SharedMemory(name: "seal", size: 8192)
        #expect(ftruncate(memory.descriptor.rawValue, 100) != 0, "shrinking is sealed")
        #expect(ftruncate(memory.descriptor.rawValue, 100_000) != 0, "growing is sealed")
        memory.bytes[8191] = 42
        let other = try SharedMemory(mapping: try memory.descriptor.duplicate(), size: 8192)
        #expect(other.bytes[8191] == 42)
    }

    /// Only the creator's own mapping writes: every other is read-only.
    @Test func aMemfdIsReadOnlyToEveryoneButItsCreator() throws {
        let memory = try SharedMemory(name: "read-only", size: 8192)
        memory.bytes[0] = 7
        let fd = memory.descriptor.rawValue
        #expect(mmap(nil, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED, "no writable shared mapping")
        let readable = try #require(mmap(nil, 8192, PROT_READ, MAP_SHARED, fd, 0))
        defer { munmap(readable, 8192) }
        #expect(readable != MAP_FAILED && readable.load(as: UInt8.self) == 7)
        #expect(mprotect(readable, 8192, PROT_READ | PROT_WRITE) != 0, "no mprotect to writable")
        var byte: UInt8 = 1
        #expect(pwrite(fd, &byte, 1, 0) < 0, "no write(2)")
        memory.bytes[0] = 8
        #expect(readable.load(as: UInt8.self) == 8, "the creator still writes")
    }

    @Test func refusesToMapAFileThatCouldShrink() async {
        await withTemporaryDirectory { folder in
            let path = folder + "/plain"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 4096)))
            let fd = OwnedFD(adopting: open(path, O_RDWR | O_CLOEXEC))
            #expect(throws: SharedMemoryError.notSealed) { try SharedMemory(mapping: fd, size: 4096) }
        }
    }

    @Test func refusesToMapMoreThanTheFileHolds() throws {
        let memory = try SharedMemory(name: "small", size: 4096)
        #expect(throws: SharedMemoryError.tooSmall(size: 4096, expected: 8192)) {
            try SharedMemory(mapping: memory.descriptor, size: 8192)
        }
    }
}

@Suite struct SocketPathTests {
    @Test func anExplicitPathWins() {
        #expect(SocketPath.resolve(explicit: "/a.sock", environment: ["CAMERAD_SOCKET": "/b.sock"]) == "/a.sock")
    }

    @Test func thenCAMERAD_SOCKET() {
        let environment = ["CAMERAD_SOCKET": "/b.sock", "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(SocketPath.resolve(environment: environment) == "/b.sock")
    }

    @Test func thenXDG_RUNTIME_DIR() {
        #expect(SocketPath.resolve(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"]) == "/run/user/1000/camerad.sock")
        #expect(SocketPath.resolve(environment: ["XDG_RUNTIME_DIR": "/run/user/1000/"]) == "/run/user/1000/camerad.sock")
    }

    @Test func thenTheSystemSocket() {
        #expect(SocketPath.resolve(environment: [:]) == "/run/camerad/camerad.sock")
        #expect(SocketPath.resolve(environment: ["CAMERAD_SOCKET": "", "XDG_RUNTIME_DIR": ""]) == "/run/camerad/camerad.sock")
    }
}

@Suite struct UnixSocketTests {
    @Test func listensWithTheAskedPermissions() async throws {
        try await withTemporarySocketPath { path in
            let listener = try UnixSocket.listen(at: path, permissions: 0o600)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            #expect(UnixSocket.isServed(path))
            _ = listener
        }
    }

    @Test func refusesAPathTooLongForSockaddrUn() {
        let path = "/tmp/" + String(repeating: "x", count: 200)
        #expect(throws: SocketPathError.tooLong(path: path, limit: UnixSocket.maxPathLength)) {
            try UnixSocket.listen(at: path)
        }
    }

    @Test func peerCredentialsNameThisProcess() throws {
        let (a, _) = try UnixSocket.pair()
        let peer = try PeerCredentials(of: a)
        #expect(peer.pid == getpid())
        #expect(peer.uid == getuid())
        #expect(peer.processName != nil)
    }
}
