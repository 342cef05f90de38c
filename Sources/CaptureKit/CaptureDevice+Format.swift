import CameraProtocol
import Foundation

/// CoreMedia's CMVideoDimensions.
public struct CMVideoDimensions: Hashable, Sendable, CustomStringConvertible {
    public var width: Int32
    public var height: Int32

    public init(width: Int32, height: Int32) {
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)" }
}

/// A pixel format's V4L2 fourcc, as CoreMedia's media subtype.
public struct FourCharCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The code spelled by four ASCII characters ("YUYV"); nil otherwise.
    public init?(_ code: String) {
        let bytes = Array(code.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        rawValue = bytes.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// The four characters, "YUYV"; "AR15-BE" for a big-endian variant (bit 31
    /// set), as `v4l2-ctl` writes it.
    public var description: String {
        let characters = (0..<4).map { UInt8(truncatingIfNeeded: (rawValue & 0x7fff_ffff) >> (8 * $0)) }
        return String(decoding: characters, as: UTF8.self) + (rawValue & (1 << 31) != 0 ? "-BE" : "")
    }
}

/// In JSON, the four characters as ``FourCharCode/description`` writes them.
extension FourCharCode: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        let bigEndian = text.hasSuffix("-BE")
        guard let code = FourCharCode(bigEndian ? String(text.dropLast(3)) : text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a four-character code: \(text)")
        }
        self.init(rawValue: code.rawValue | (bigEndian ? 1 << 31 : 0))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// AVFrameRateRange: the frame rates a format allows, from min to max.
public struct FrameRateRange: Hashable, Sendable, CustomStringConvertible {
    /// The shortest frame duration (the highest rate).
    public var minFrameDuration: CMTime
    /// The longest frame duration (the lowest rate).
    public var maxFrameDuration: CMTime

    public var maxFrameRate: Double { 1 / minFrameDuration.seconds }
    public var minFrameRate: Double { 1 / maxFrameDuration.seconds }

    /// Whether only one rate is allowed (a discrete V4L2 interval).
    public var isDiscrete: Bool { minFrameDuration == maxFrameDuration }

    /// "30 fps", "1-60 fps", "29.97 fps".
    public var description: String {
        isDiscrete ? String(format: "%g fps", maxFrameRate) : String(format: "%g-%g fps", minFrameRate, maxFrameRate)
    }

    init(_ range: Camerad_V1_FrameRateRange) {
        minFrameDuration = CMTime(range.minFrameDuration)
        maxFrameDuration = CMTime(range.maxFrameDuration)
    }
}

extension CaptureDevice {
    /// AVCaptureDevice.Format: a camera's one pixel format at one size, with
    /// its frame rates; a microphone's linear PCM at its rate and channels.
    public struct Format: Hashable, Sendable, CustomStringConvertible {
        public let mediaType: MediaType
        /// The pixel format, as CoreMedia's media subtype: a CoreVideo code,
        /// the spelling of every pixel format in CaptureKit — '420v' for the
        /// camera's NV12, 'yuvs' for YUYV, 'y420' for YU12, 'BGRA', 'dmb1' for
        /// MJPEG; a format CoreVideo has no code for keeps its four characters.
        public let mediaSubType: OSType
        /// The pixel format as V4L2 names it ("NV12", "YUYV", "MJPG"), which
        /// `v4l2-ctl` and camctl print (Linux only); 0 for audio.
        public let v4l2PixelFormat: FourCharCode
        /// V4L2's name for the pixel format ("YUYV 4:2:2"); ALSA's for a sample's ("S16_LE").
        public let pixelFormatDescription: String
        /// 0x0 for audio.
        public let dimensions: CMVideoDimensions
        public let videoSupportedFrameRateRanges: [FrameRateRange]
        /// Whether frames are compressed (MJPEG).
        public let isCompressed: Bool
        /// The largest `videoZoomFactor` in this format: the device's
        /// (``CaptureDevice/maxAvailableVideoZoomFactor``), the same in every
        /// format, as a V4L2 zoom control or camerad's crop is; 1 when it cannot zoom.
        public let videoMaxZoomFactor: Double
        /// A microphone's format as it captures, periods and all (Linux only); nil for video.
        public let audioFormat: AudioCapabilities.Format?

        /// The format's CMFormatDescription: its subtype and dimensions, or
        /// for audio its AudioStreamBasicDescription.
        public var formatDescription: CMFormatDescription {
            if let audioFormat { return FormatDescription(audio: audioFormat) }
            return FormatDescription(mediaSubType: mediaSubType, dimensions: dimensions)
        }

        public var description: String {
            if let audioFormat { return "'lpcm' \(audioFormat.sampleFormat.alsaName) \(audioFormat.channels)ch \(audioFormat.sampleRate) Hz" }
            return "'\(PixelFormats.name(mediaSubType))' \(dimensions) " + videoSupportedFrameRateRanges.map(\.description).joined(separator: ", ")
        }

        /// A device's format when camerad offers none of it: 0x0, no frame rates.
        static let none = Format(Camerad_V1_Format(), maxZoom: 1)

        init(_ format: Camerad_V1_Format, maxZoom: Double) {
            mediaType = .video
            audioFormat = nil
            videoMaxZoomFactor = max(1, maxZoom)
            v4l2PixelFormat = FourCharCode(rawValue: format.fourcc)
            mediaSubType = PixelFormats.type(fourcc: format.fourcc)
            pixelFormatDescription = format.description_p
            dimensions = CMVideoDimensions(width: Int32(clamping: format.width), height: Int32(clamping: format.height))
            videoSupportedFrameRateRanges = format.frameRateRanges.map(FrameRateRange.init)
            isCompressed = format.compressed
        }

        /// A microphone's own format: the one it has, as AVFoundation lists a
        /// microphone's (camerad converts to what an output asks for).
        init(audio format: AudioCapabilities.Format) {
            mediaType = .audio
            audioFormat = format
            mediaSubType = kAudioFormatLinearPCM
            v4l2PixelFormat = FourCharCode(rawValue: 0)
            pixelFormatDescription = format.sampleFormat.alsaName
            dimensions = CMVideoDimensions(width: 0, height: 0)
            videoSupportedFrameRateRanges = []
            isCompressed = false
            videoMaxZoomFactor = 1
        }
    }
}

extension CMTime {
    init(_ fraction: Camerad_V1_Fraction) {
        guard fraction.denominator > 0, fraction.denominator <= UInt32(Int32.max) else {
            self = .invalid
            return
        }
        self.init(value: Int64(fraction.numerator), timescale: Int32(fraction.denominator))
    }
}
