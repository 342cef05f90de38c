import Glibc

/// A file descriptor this process owns. It is closed exactly once: when the last
/// reference to this object goes. Like libcamera's `SharedFD`.
///
/// Never close ``rawValue`` yourself; to hand the descriptor to code that will
/// close it, pass a ``duplicate()``.
public final class OwnedFD: Sendable, CustomStringConvertible {
    /// The descriptor number, valid while this object lives.
    public let rawValue: Int32

    /// Takes ownership of `rawValue`, which must be an open descriptor nobody else closes.
    public init(adopting rawValue: Int32) {
        precondition(rawValue >= 0, "OwnedFD of a negative descriptor")
        self.rawValue = rawValue
    }

    deinit {
        Syscall.close(rawValue)
    }

    /// A new descriptor for the same open file, close-on-exec.
    ///
    /// The call is `fcntl(F_DUPFD_CLOEXEC)`.
    public func duplicate() throws(SystemError) -> OwnedFD {
        OwnedFD(adopting: try Syscall.fcntl(rawValue, F_DUPFD_CLOEXEC, 0))
    }

    /// Makes reads and writes on the descriptor return `EAGAIN` instead of blocking.
    public func setNonBlocking(_ nonBlocking: Bool = true) throws(SystemError) {
        let flags = try Syscall.fcntl(rawValue, F_GETFL, 0)
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags { _ = try Syscall.fcntl(rawValue, F_SETFL, wanted) }
    }

    public var description: String { "fd \(rawValue)" }
}
