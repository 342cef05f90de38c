import Glibc

/// A V4L2 call that failed: which, on which node, and errno.
public struct V4L2Error: Error, Equatable, CustomStringConvertible {
    /// "open", "VIDIOC_S_FMT"...
    public let operation: String
    public let path: String
    public let code: Int32

    public init(_ operation: String, path: String, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// The device is gone, or failed for good (unplugged, driver error): every
    /// stream on it ends.
    public var meansDeviceLost: Bool { code == ENODEV || code == EIO || code == ENXIO || code == ENOENT }

    /// Another program streams from the device.
    public var meansBusy: Bool { code == EBUSY }

    public var description: String { "\(operation) on \(path): \(String(cString: strerror(code)))" }
}
