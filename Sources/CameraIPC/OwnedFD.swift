import Glibc

/// A file descriptor this process owns. It is closed exactly once: when the last
/// reference to this object goes. Like libcamera's `SharedFD`.
///
/// Never close ``rawValue`` yourself; to hand the descriptor to code that will
/// close it, pass a ``duplicate()``.
public final class OwnedFD: Sendable, CustomStringConvertible {
    /// The descriptor number, valid while this object lives.
    public let rawValue: Int32

    /// Closes it instead of the last reference's thread; nil: closed there.
    private let closer: DescriptorCloser?

    /// Takes ownership of `rawValue`, which must be an open descriptor nobody else closes.
    ///
    /// - Parameter closer: close it there rather than where the last
    ///   reference goes: for descriptors another process sent. Closing a file
    ///   may wait on whoever serves it (a FUSE server answers each close),
    ///   which must never hold up an event loop, nor another client's closes.
    public init(adopting rawValue: Int32, closer: DescriptorCloser? = nil) {
        precondition(rawValue >= 0, "OwnedFD of a negative descriptor")
        self.rawValue = rawValue
        self.closer = closer
    }

    deinit {
        if let closer {
            closer.close(rawValue)
        } else {
            Syscall.close(rawValue)
        }
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
