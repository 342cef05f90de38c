import CameraProtocol

/// A CoreVideo pixel format code (`OSType`), as AVFoundation names pixel formats.
public typealias OSType = UInt32

/// BGRA, 4 bytes per pixel (V4L2 `AR24`).
public let kCVPixelFormatType_32BGRA: OSType = 0x4247_5241  // 'BGRA'
/// ARGB, 4 bytes per pixel, A, R, G, B in memory (V4L2 `BA24`). CoreVideo's
/// code is the number 32, not four characters.
public let kCVPixelFormatType_32ARGB: OSType = 0x0000_0020
/// NV12: a Y plane and an interleaved CbCr plane, video range (V4L2 `NV12`).
public let kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: OSType = 0x3432_3076  // '420v'
/// NV12 with full-range values (Y and CbCr 0–255, as JPEG has them), made by
/// camerad from the camera's video-range frames (V4L2 `NV12`, full-range quantization).
public let kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: OSType = 0x3432_3066  // '420f'
/// I420: Y, Cb and Cr planes (V4L2 `YU12`).
public let kCVPixelFormatType_420YpCbCr8Planar: OSType = 0x7934_3230  // 'y420'
/// YUYV: packed Y0 Cb Y1 Cr (V4L2 `YUYV`).
public let kCVPixelFormatType_422YpCbCr8_yuvs: OSType = 0x7975_7673  // 'yuvs'
/// Motion-JPEG frames as a camera sends them (CoreMedia's `kCMVideoCodecType_JPEG_OpenDML`).
public let kCMVideoCodecType_JPEG_OpenDML: OSType = 0x646D_6231  // 'dmb1'

/// The conversions between CoreVideo codes, the protocol's output formats and V4L2 fourccs.
enum PixelFormats {
    /// Every format a video data output can ask for, besides the device's own.
    static let convertible: [OSType] = [
        kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange,
        kCVPixelFormatType_420YpCbCr8Planar,
        kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_32BGRA, kCVPixelFormatType_32ARGB,
    ]

    static func output(_ type: OSType?) -> Camerad_V1_OutputPixelFormat? {
        switch type {
        case nil: .native
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: .nv12
        case kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: .nv12FullRange
        case kCVPixelFormatType_420YpCbCr8Planar: .i420
        case kCVPixelFormatType_422YpCbCr8_yuvs: .yuyv
        case kCVPixelFormatType_32BGRA: .bgra
        case kCVPixelFormatType_32ARGB: .argb
        default: nil
        }
    }

    /// The CoreVideo code of a V4L2 fourcc; when there is none, the fourcc's
    /// own four characters as a code ("GREY" stays 'GREY').
    static func type(fourcc: UInt32, fullRange: Bool = false) -> OSType {
        if fullRange && fourcc == nv12 { return kCVPixelFormatType_420YpCbCr8BiPlanarFullRange }
        // V4L2 puts the first character in the low byte, a CoreVideo code in the high one.
        return typeOfFourcc[fourcc] ?? (fourcc & 0x7fff_ffff).byteSwapped
    }

    private static let nv12 = FourCharCode("NV12")!.rawValue
    private static let typeOfFourcc: [UInt32: OSType] = [
        FourCharCode("NV12")!.rawValue: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
        FourCharCode("YU12")!.rawValue: kCVPixelFormatType_420YpCbCr8Planar,
        FourCharCode("YUYV")!.rawValue: kCVPixelFormatType_422YpCbCr8_yuvs,
        FourCharCode("AR24")!.rawValue: kCVPixelFormatType_32BGRA,
        FourCharCode("BA24")!.rawValue: kCVPixelFormatType_32ARGB,
        FourCharCode("MJPG")!.rawValue: kCMVideoCodecType_JPEG_OpenDML,
    ]

    /// "420v", "BGRA": a code as its four characters, most significant first
    /// ("32ARGB" for kCVPixelFormatType_32ARGB, which is the number 32).
    static func name(_ type: OSType) -> String {
        if type == kCVPixelFormatType_32ARGB { return "32ARGB" }
        return String(decoding: (0..<4).reversed().map { UInt8(truncatingIfNeeded: type >> (8 * $0)) }, as: UTF8.self)
    }
}
