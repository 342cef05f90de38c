import Glibc

/// A failed system call: which call, and its `errno`.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call that failed ("connect", "sendmsg").
    public let operation: String
    /// The `errno` it set.
    public let errno: Int32

    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    /// `"connect: No such file or directory"`.
    public var description: String {
        "\(operation): \(String(cString: strerror(errno)))"
    }

    /// The call would have blocked on a non-blocking descriptor.
    public var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }
}
