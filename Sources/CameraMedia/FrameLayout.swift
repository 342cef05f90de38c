/// The shape of one frame in memory: pixel format, size, and where its planes lie.
public struct FrameLayout: Hashable, Sendable, CustomStringConvertible {
    public let format: PixelFormat
    public let width: Int
    public let height: Int
    /// Tightly packed planes; empty for compressed formats.
    public let planes: [PlaneLayout]
    /// Bytes a buffer must hold for one frame (for MJPEG, the largest JPEG of this size).
    public let capacity: Int

    /// - Precondition: `format` is one of ``PixelFormat/known``; sizes are positive
    ///   (and even for the 4:2:x formats).
    public init(format: PixelFormat, width: Int, height: Int) {
        precondition(width > 0 && height > 0, "frame of \(width)x\(height)")
        self.format = format
        self.width = width
        self.height = height
        if format.isCompressed {
            planes = []
            capacity = JPEGEncoder.maxSize(width: width, height: height)
        } else {
            guard let planes = format.planes(width: width, height: height) else {
                preconditionFailure("no layout for \(format)")
            }
            self.planes = planes
            capacity = planes.last.map { $0.offset + $0.byteCount } ?? 0
        }
    }

    public var description: String { "\(format.code) \(width)x\(height)" }
}

/// A clockwise rotation by a multiple of 90°.
public enum Rotation: Int, CaseIterable, Sendable {
    case none = 0
    case clockwise90 = 90
    case clockwise180 = 180
    case clockwise270 = 270

    /// Whether width and height swap.
    public var swapsDimensions: Bool { self == .clockwise90 || self == .clockwise270 }
}

/// What one client asks of a camera's frames: a pixel format and size, turned
/// and mirrored. Every client asking the same variant shares one conversion.
public struct FrameVariant: Hashable, Sendable, CustomStringConvertible {
    public let format: PixelFormat
    /// The output's size, after rotation.
    public let width: Int
    public let height: Int
    public let rotation: Rotation
    /// Flipped left to right, in the output's own frame (after rotation).
    public let mirrored: Bool
    /// YUV values stretched to 0–255 (NV12 only: CoreVideo's '420f'); else
    /// video range, as cameras give them.
    public let fullRange: Bool

    public init(format: PixelFormat, width: Int, height: Int, rotation: Rotation = .none, mirrored: Bool = false,
                fullRange: Bool = false) {
        self.format = format
        self.width = width
        self.height = height
        self.rotation = rotation
        self.mirrored = mirrored
        self.fullRange = fullRange
    }

    /// The variant that is the source itself.
    public init(unchanged source: FrameLayout) {
        self.init(format: source.format, width: source.width, height: source.height)
    }

    public var layout: FrameLayout { FrameLayout(format: format, width: width, height: height) }

    public var description: String {
        "\(format.code) \(width)x\(height)" + (rotation == .none ? "" : " rotated \(rotation.rawValue)°")
            + (mirrored ? " mirrored" : "") + (fullRange ? " full range" : "")
    }
}
