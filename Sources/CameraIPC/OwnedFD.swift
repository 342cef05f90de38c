import Dispatch
import Glibc

/// A file descriptor this process owns. It is closed exactly once: when the last
/// reference to this object goes. Like libcamera's `SharedFD`.
///
/// Never close ``rawValue`` yourself; to hand the descriptor to code that will
/// close it, pass a ``duplicate()``.
public final class OwnedFD: Sendable, CustomStringConvertible {
    /// The descriptor number, valid while this object lives.
    public let rawValue: Int32

    /// Closed on ``closer`` rather than where the last reference goes.
    private let closesAside: Bool

    /// Takes ownership of `rawValue`, which must be an open descriptor nobody else closes.
    ///
    /// - Parameter closesAside: close it on a thread of its own (``closer``)
    ///   rather than where the last reference goes: for descriptors another
    ///   process sent. Closing a file may wait on whoever serves it (a FUSE
    ///   server answers each close), which must never hold up an event loop.
    public init(adopting rawValue: Int32, closesAside: Bool = false) {
        precondition(rawValue >= 0, "OwnedFD of a negative descriptor")
        self.rawValue = rawValue
        self.closesAside = closesAside
    }

    deinit {
        if closesAside {
            Self.closer.async { [rawValue] in Syscall.close(rawValue) }
        } else {
            Syscall.close(rawValue)
        }
    }

    /// Where descriptors that close aside are closed, one after another.
    private static let closer = DispatchQueue(label: "camerad-descriptor-closer")

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
