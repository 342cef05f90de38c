/// A pixel format, named by its V4L2 fourcc.
public struct PixelFormat: Hashable, Sendable, CustomStringConvertible {
    /// The fourcc as V4L2 stores it: the first character in the low byte.
    public let fourcc: UInt32

    public init(fourcc: UInt32) {
        self.fourcc = fourcc
    }

    /// The format whose fourcc spells `code` ("YUYV"); nil unless it is 4 ASCII characters.
    public init?(code: String) {
        let bytes = Array(code.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        fourcc = bytes.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// The fourcc as text, "YUYV"; trailing spaces are kept. A big-endian
    /// variant (bit 31 set) reads "AR15-BE", as `v4l2-ctl` writes it.
    public var code: String {
        let isBigEndian = fourcc & (1 << 31) != 0
        let characters = (0..<4).map { UInt8(truncatingIfNeeded: (fourcc & 0x7fff_ffff) >> (8 * $0)) }
        return String(decoding: characters, as: UTF8.self) + (isBigEndian ? "-BE" : "")
    }

    /// YUYV 4:2:2, packed: Y0 U Y1 V.
    public static let yuyv = PixelFormat(code: "YUYV")!
    /// NV12: a Y plane, then one interleaved U/V plane at half resolution both ways.
    public static let nv12 = PixelFormat(code: "NV12")!
    /// I420 (V4L2 `YU12`): Y, U and V planes; U and V at half resolution both ways.
    public static let i420 = PixelFormat(code: "YU12")!
    /// BGRA: 4 bytes per pixel, B, G, R, A in memory (V4L2 `AR24`, libyuv "ARGB").
    public static let bgra = PixelFormat(code: "AR24")!
    /// ARGB: 4 bytes per pixel, A, R, G, B in memory (V4L2 `BA24`, libyuv "BGRA",
    /// CoreVideo's kCVPixelFormatType_32ARGB).
    public static let argb = PixelFormat(code: "BA24")!
    /// Motion-JPEG: each frame a JPEG image.
    public static let mjpeg = PixelFormat(code: "MJPG")!

    /// The formats CameraMedia can lay out and convert.
    public static let known: [PixelFormat] = [.yuyv, .nv12, .i420, .bgra, .argb, .mjpeg]

    /// The name V4L2's VIDIOC_ENUM_FMT gives the format, or its fourcc.
    public var description: String {
        switch self {
        case .yuyv: "YUYV 4:2:2"
        case .nv12: "Y/UV 4:2:0"
        case .i420: "Planar YUV 4:2:0"
        case .bgra: "32-bit BGRA 8-8-8-8"
        case .argb: "32-bit ARGB 8-8-8-8"
        case .mjpeg: "Motion-JPEG"
        default: code
        }
    }

    /// Whether frames have a variable size (MJPEG).
    public var isCompressed: Bool { self == .mjpeg }

    /// The planes of a tightly packed `width`×`height` frame; nil for compressed
    /// and unknown formats. `width` and `height` must be even for the 4:2:x formats.
    public func planes(width: Int, height: Int) -> [PlaneLayout]? {
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        switch self {
        case .yuyv:
            return [PlaneLayout(offset: 0, bytesPerRow: chromaWidth * 4, height: height)]
        case .nv12:
            let luma = PlaneLayout(offset: 0, bytesPerRow: width, height: height)
            return [luma, PlaneLayout(offset: luma.byteCount, bytesPerRow: chromaWidth * 2, height: chromaHeight)]
        case .i420:
            let luma = PlaneLayout(offset: 0, bytesPerRow: width, height: height)
            let u = PlaneLayout(offset: luma.byteCount, bytesPerRow: chromaWidth, height: chromaHeight)
            return [luma, u, PlaneLayout(offset: u.offset + u.byteCount, bytesPerRow: chromaWidth, height: chromaHeight)]
        case .bgra, .argb:
            return [PlaneLayout(offset: 0, bytesPerRow: width * 4, height: height)]
        default:
            return nil
        }
    }

    /// Bytes in a tightly packed frame; nil for compressed and unknown formats.
    public func frameSize(width: Int, height: Int) -> Int? {
        planes(width: width, height: height)?.last.map { $0.offset + $0.byteCount }
    }
}

/// Where one plane of a frame lies in its buffer.
public struct PlaneLayout: Hashable, Sendable {
    public var offset: Int
    public var bytesPerRow: Int
    public var height: Int

    public init(offset: Int, bytesPerRow: Int, height: Int) {
        self.offset = offset
        self.bytesPerRow = bytesPerRow
        self.height = height
    }

    public var byteCount: Int { bytesPerRow * height }
}
