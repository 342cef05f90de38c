import Glibc

/// Who is at the other end of a Unix socket, as the kernel saw it at `connect()`.
///
/// The call is `getsockopt(SO_PEERCRED)`.
public struct PeerCredentials: Equatable, Sendable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The credentials of the peer connected to `socket`.
    public init(of socket: OwnedFD) throws(SystemError) {
        let (pid, uid, gid) = try Syscall.peerCredentials(socket.rawValue)
        self.init(pid: pid, uid: uid, gid: gid)
    }

    /// The process's name from `/proc/PID/comm`, or nil when it is gone.
    public var processName: String? {
        guard pid > 0, let name = try? String(contentsOfProcFile: "/proc/\(pid)/comm") else { return nil }
        return name.hasSuffix("\n") ? String(name.dropLast()) : name
    }

    public var description: String { "pid \(pid) uid \(uid) gid \(gid)" }
}

extension String {
    /// Reads a small file such as those under /proc without Foundation.
    init(contentsOfProcFile path: String) throws(SystemError) {
        let fd = try Syscall.check("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC) }
        defer { Syscall.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try Syscall.check("read(\(path))") { read(fd, &chunk, chunk.count) }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        self = String(decoding: bytes, as: UTF8.self)
    }
}
