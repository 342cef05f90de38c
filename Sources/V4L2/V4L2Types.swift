internal import CV4L2

/// A time in seconds as a fraction (struct v4l2_fract): a frame interval.
public struct V4L2Fraction: Hashable, Sendable, CustomStringConvertible {
    public var numerator: UInt32
    public var denominator: UInt32

    public init(_ numerator: UInt32, _ denominator: UInt32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    public var description: String { "\(numerator)/\(denominator)" }
}

public struct V4L2Size: Hashable, Sendable, CustomStringConvertible {
    public var width: UInt32
    public var height: UInt32

    public init(_ width: UInt32, _ height: UInt32) {
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)" }
}

/// What VIDIOC_QUERYCAP says of a node.
public struct V4L2Capability: Sendable {
    public var driver: String
    public var card: String
    public var busInfo: String
    /// The node's own capabilities (device_caps when the driver gives them).
    public var capabilities: UInt32

    /// A video capture node that streams through mmap, single- or multi-planar.
    /// Metadata, output, radio and touch nodes are not.
    public var isVideoCapture: Bool {
        capabilities & UInt32(V4L2_CAP_STREAMING) != 0
            && capabilities & (UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE)) != 0
    }

    /// Uses the multi-planar API (only it).
    public var isMultiplanar: Bool {
        capabilities & UInt32(V4L2_CAP_VIDEO_CAPTURE) == 0 && capabilities & UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE) != 0
    }
}

/// One entry of VIDIOC_ENUM_FMT.
public struct V4L2FormatDescription: Hashable, Sendable {
    public var fourcc: UInt32
    public var description: String
    public var flags: UInt32

    public var isCompressed: Bool { flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0 }
    /// Made by libv4lconvert from another format, not by the device.
    public var isEmulated: Bool { flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0 }
}

/// VIDIOC_ENUM_FRAMESIZES for one pixel format.
public enum V4L2FrameSizes: Hashable, Sendable {
    case discrete([V4L2Size])
    /// Every size from `min` to `max` in `step`s (continuous: a step of 1).
    case stepwise(min: V4L2Size, max: V4L2Size, step: V4L2Size)
}

/// VIDIOC_ENUM_FRAMEINTERVALS for one pixel format and size.
public enum V4L2FrameIntervals: Hashable, Sendable {
    case discrete([V4L2Fraction])
    /// Every interval from `min` to `max` in `step`s (continuous: any).
    case stepwise(min: V4L2Fraction, max: V4L2Fraction, step: V4L2Fraction)
}

/// The format a node is set to (VIDIOC_G_FMT / S_FMT).
public struct V4L2Format: Hashable, Sendable {
    public struct Plane: Hashable, Sendable {
        public var bytesPerLine: UInt32
        public var sizeImage: UInt32
    }
    public var fourcc: UInt32
    public var width: UInt32
    public var height: UInt32
    /// One entry with the single-planar API; one per memory plane with the
    /// multi-planar one.
    public var planes: [Plane]
}

/// One control, as VIDIOC_QUERY_EXT_CTRL and VIDIOC_QUERYMENU describe it.
public struct V4L2Control: Hashable, Sendable {
    public struct MenuItem: Hashable, Sendable {
        public var index: Int64
        /// Menu controls.
        public var name: String
        /// Integer-menu controls.
        public var value: Int64
    }
    public var id: UInt32
    /// enum v4l2_ctrl_type.
    public var type: UInt32
    public var name: String
    public var minimum: Int64
    public var maximum: Int64
    public var step: UInt64
    public var defaultValue: Int64
    public var flags: UInt32
    public var menuItems: [MenuItem]

    /// Whether it has a value to read (buttons and write-only controls have none).
    public var isReadable: Bool {
        type != V4L2_CTRL_TYPE_BUTTON.rawValue && flags & UInt32(V4L2_CTRL_FLAG_WRITE_ONLY) == 0
    }

    /// The types camerad handles: integer, boolean, menu, integer menu, button,
    /// bitmask, int64. Strings, arrays and compound controls are skipped.
    static let handledTypes: Set<UInt32> = [
        V4L2_CTRL_TYPE_INTEGER.rawValue, V4L2_CTRL_TYPE_BOOLEAN.rawValue, V4L2_CTRL_TYPE_MENU.rawValue,
        V4L2_CTRL_TYPE_INTEGER_MENU.rawValue, V4L2_CTRL_TYPE_BUTTON.rawValue, V4L2_CTRL_TYPE_BITMASK.rawValue,
        V4L2_CTRL_TYPE_INTEGER64.rawValue,
    ]
}

/// A string from a fixed-size C char array (imported as a tuple).
func string<T>(fromCArray array: T) -> String {
    withUnsafeBytes(of: array) { bytes in
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
