import CameraProtocol

/// A microphone's own format and what an audio output may ask of it (Linux
/// only: AVFoundation's audio formats are opaque). camerad converts — any of
/// ``sampleRates``, 1 to ``maxChannels`` channels, any of ``sampleFormats``,
/// periods of ``periodDurations`` — once per distinct format, for every
/// process that asks for it.
public struct AudioCapabilities: Hashable, Sendable {
    /// A sample's format, interleaved little-endian PCM.
    public enum SampleFormat: String, Hashable, Sendable, CaseIterable {
        /// Signed 16-bit integers (ALSA S16_LE; `AVLinearPCMBitDepthKey` 16).
        case int16 = "s16"
        /// Signed 32-bit integers (ALSA S32_LE; `AVLinearPCMBitDepthKey` 32).
        case int32 = "s32"
        /// 32-bit floats, −1 to 1 (ALSA FLOAT_LE; `AVLinearPCMIsFloatKey`).
        case float32 = "f32"

        /// Bytes of one sample.
        public var bytes: Int { self == .int16 ? 2 : 4 }

        /// ALSA's name ("S16_LE"), as `arecord --dump-hw-params` says it.
        public var alsaName: String {
            switch self {
            case .int16: "S16_LE"
            case .int32: "S32_LE"
            case .float32: "FLOAT_LE"
            }
        }

        init?(_ format: Camerad_V1_SampleFormat) {
            switch format {
            case .s16: self = .int16
            case .s32: self = .int32
            case .f32: self = .float32
            default: return nil
            }
        }

        var proto: Camerad_V1_SampleFormat {
            switch self {
            case .int16: .s16
            case .int32: .s32
            case .float32: .f32
            }
        }
    }

    /// Interleaved PCM in periods: what one sample buffer of an audio output holds.
    public struct Format: Hashable, Sendable, CustomStringConvertible {
        public var sampleRate: Int
        public var channels: Int
        public var sampleFormat: SampleFormat
        /// Frames (a sample per channel) in each period.
        public var framesPerPeriod: Int

        public init(sampleRate: Int, channels: Int, sampleFormat: SampleFormat, framesPerPeriod: Int) {
            self.sampleRate = sampleRate
            self.channels = channels
            self.sampleFormat = sampleFormat
            self.framesPerPeriod = framesPerPeriod
        }

        init(_ format: Camerad_V1_AudioFormat) {
            self.init(sampleRate: Int(format.sampleRate), channels: Int(format.channels),
                      sampleFormat: SampleFormat(format.sampleFormat) ?? .int16, framesPerPeriod: Int(format.periodFrames))
        }

        /// Bytes of one frame.
        public var bytesPerFrame: Int { channels * sampleFormat.bytes }

        public var description: String {
            "\(sampleFormat.rawValue) \(channels)ch \(sampleRate) Hz, \(framesPerPeriod) frames a period"
        }
    }

    /// The device's own format, as it captures.
    public let native: Format
    public let sampleRates: [Int]
    public let maxChannels: Int
    public let sampleFormats: [SampleFormat]
    /// A period's shortest and longest duration.
    public let periodDurations: ClosedRange<Duration>

    init(_ audio: Camerad_V1_AudioCapabilities) {
        native = Format(audio.native)
        sampleRates = audio.sampleRates.map(Int.init)
        maxChannels = Int(audio.maxChannels)
        sampleFormats = audio.sampleFormats.compactMap(SampleFormat.init)
        let shortest = Duration.microseconds(Int64(audio.minPeriodUs))
        periodDurations = shortest...max(shortest, Duration.microseconds(Int64(audio.maxPeriodUs)))
    }
}

extension Duration {
    /// Whole microseconds.
    package var microseconds: Int64 { components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000 }
}
