import Glibc

/// Creating, binding and connecting `SOCK_STREAM` Unix sockets.
///
/// Every descriptor made here is close-on-exec. Listeners and accepted sockets
/// are non-blocking; ``connect(to:)`` blocks only for the connect itself.
public enum UnixSocket {
    /// The longest path a `sockaddr_un` holds.
    public static let maxPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A non-blocking socket listening at `path`, which must not exist.
    ///
    /// - Parameter permissions: the socket file's mode. The file is created with it
    ///   (through the umask), so there is no moment when it is more open. The
    ///   umask is the process's: files made and children started on other
    ///   threads meanwhile get it too (camerad binds before it starts any; a test
    ///   process may not, which is why scripts/vivid-vm sets its own).
    public static func listen(at path: String, permissions: mode_t = 0o660, backlog: Int32 = 128) throws -> OwnedFD {
        let socket = OwnedFD(adopting: try Syscall.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0))
        let previousMask = umask(~permissions & 0o777)
        defer { umask(previousMask) }
        try withAddress(path) { address, length in try Syscall.bind(socket.rawValue, address, length) }
        // umask can only remove bits; set the mode exactly in case it was wider.
        _ = try Syscall.check("chmod(\(path))") { chmod(path, permissions) }
        try Syscall.listen(socket.rawValue, backlog)
        return socket
    }

    /// Makes the kernel refuse descriptors sent to `socket` (and, for a
    /// listener, to the connections it accepts): a peer's `sendmsg` with
    /// SCM_RIGHTS fails with EPERM. The option is `SO_PASSRIGHTS`, Linux 6.16.
    ///
    /// - Returns: false where the kernel has no such option.
    @discardableResult
    public static func refuseDescriptors(_ socket: OwnedFD) -> Bool {
        (try? Syscall.setSocketOption(socket.rawValue, SOL_SOCKET, soPassRights, 0)) != nil
    }

    /// `SO_PASSRIGHTS` from asm-generic/socket.h, which glibc 2.36 predates.
    static let soPassRights: Int32 = 83

    /// A socket connected to the listener at `path`, set non-blocking.
    public static func connect(to path: String) throws -> OwnedFD {
        let socket = OwnedFD(adopting: try Syscall.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
        try withAddress(path) { address, length in try Syscall.connect(socket.rawValue, address, length) }
        try socket.setNonBlocking()
        return socket
    }

    /// The next pending connection, non-blocking, or nil when there is none.
    public static func accept(_ listener: OwnedFD) throws(SystemError) -> OwnedFD? {
        do {
            return OwnedFD(adopting: try Syscall.accept4(listener.rawValue, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)))
        } catch where error.wouldBlock || error.errno == ECONNABORTED {
            return nil
        }
    }

    /// Writes one frame of `payload` if the socket takes it now, without
    /// waiting: a last word to a peer about to be closed. Whatever does not fit
    /// is lost.
    public static func sendWithoutWaiting(_ payload: [UInt8], on socket: OwnedFD) {
        let bytes = Frame.encode(payload)
        _ = bytes.withUnsafeBytes { try? Syscall.sendWithoutWaiting(socket.rawValue, $0) }
    }

    /// Two connected sockets, both non-blocking: what tests use for a connection.
    public static func pair() throws(SystemError) -> (OwnedFD, OwnedFD) {
        let (a, b) = try Syscall.socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        return (OwnedFD(adopting: a), OwnedFD(adopting: b))
    }

    /// Whether something accepts connections at `path`.
    public static func isServed(_ path: String) -> Bool {
        (try? connect(to: path)) != nil
    }

    /// Calls `body` with a `sockaddr_un` for `path`.
    static func withAddress<T>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T
    ) throws -> T {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPathLength else {
            throw SocketPathError.tooLong(path: path, limit: maxPathLength)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
        }
    }
}

/// A socket path that cannot be used.
public enum SocketPathError: Error, Equatable, CustomStringConvertible {
    case tooLong(path: String, limit: Int)

    public var description: String {
        switch self {
        case .tooLong(let path, let limit):
            "socket path is empty or longer than \(limit) bytes: '\(path)'; choose a shorter --socket path"
        }
    }
}
