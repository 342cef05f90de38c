/// What a buffer of the media graph holds: one frame of video, one period of
/// audio, one encoded packet, or one record of a detector's results. The
/// graph's pools, subscriptions and accounting are the same for every kind;
/// only the layout of a slot differs (``MediaLayout``).
public enum MediaKind: String, CaseIterable, Sendable {
    case video
    case audio
    /// Compressed media: packets, some of them keyframes (a decoder can start there).
    case encoded
    /// A detector's results (QR codes found in a frame): small records.
    case metadata
}

/// The shape of one buffer of a kind of media: what a pool's slot holds.
public enum MediaLayout: Hashable, Sendable, CustomStringConvertible {
    /// One frame: pixel format, size, planes.
    case video(FrameLayout)
    /// One period of PCM: frames × channels × sample format.
    case audio(AudioLayout)
    /// One encoded packet of at most so many bytes.
    case packets(PacketLayout)
    /// One record of at most so many bytes.
    case records(maxBytes: Int)

    public var kind: MediaKind {
        switch self {
        case .video: .video
        case .audio: .audio
        case .packets: .encoded
        case .records: .metadata
        }
    }

    /// Bytes a slot must hold for one buffer.
    public var capacity: Int {
        switch self {
        case .video(let layout): layout.capacity
        case .audio(let layout): layout.capacity
        case .packets(let layout): layout.maxPacketBytes
        case .records(let maxBytes): maxBytes
        }
    }

    /// The frame's layout, for video.
    public var video: FrameLayout? {
        if case .video(let layout) = self { return layout }
        return nil
    }

    /// The period's layout, for audio.
    public var audio: AudioLayout? {
        if case .audio(let layout) = self { return layout }
        return nil
    }

    public var description: String {
        switch self {
        case .video(let layout): "video \(layout)"
        case .audio(let layout): "audio \(layout)"
        case .packets(let layout): "packets \(layout)"
        case .records(let maxBytes): "records of \(maxBytes) bytes"
        }
    }
}

/// Interleaved PCM: each period holds up to ``framesPerPeriod`` frames, each
/// frame one sample per channel (ALSA's period, AVAudioFormat's interleaved layout).
public struct AudioLayout: Hashable, Sendable, CustomStringConvertible {
    /// A sample's format (ALSA's S16_LE, S32_LE, FLOAT_LE).
    public enum SampleFormat: String, Hashable, Sendable {
        case s16
        case s32
        case f32

        public var bytes: Int { self == .s16 ? 2 : 4 }
    }

    public let sampleRate: Int
    public let channels: Int
    public let sampleFormat: SampleFormat
    public let framesPerPeriod: Int

    public init(sampleRate: Int, channels: Int, sampleFormat: SampleFormat, framesPerPeriod: Int) {
        precondition(sampleRate > 0 && channels > 0 && framesPerPeriod > 0,
                     "audio of \(sampleRate) Hz, \(channels) channels, \(framesPerPeriod) frames a period")
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleFormat = sampleFormat
        self.framesPerPeriod = framesPerPeriod
    }

    /// Bytes of one frame: a sample of each channel.
    public var bytesPerFrame: Int { channels * sampleFormat.bytes }

    /// Bytes of a full period.
    public var capacity: Int { framesPerPeriod * bytesPerFrame }

    public var description: String {
        "\(sampleFormat.rawValue) \(channels)ch \(sampleRate) Hz, \(framesPerPeriod) frames a period"
    }
}

extension AudioLayout.SampleFormat {
    /// Writes samples (−1...1) in this format, packed: S16 and S32 scaled to
    /// their largest value and rounded (clamped), F32 as they are.
    public func store(_ samples: UnsafeBufferPointer<Float>, into bytes: UnsafeMutableRawBufferPointer) {
        switch self {
        case .s16:
            for (index, value) in samples.enumerated() {
                bytes.storeBytes(of: Int16(clamping: Int((value * 32767).rounded())), toByteOffset: index * 2, as: Int16.self)
            }
        case .s32:
            for (index, value) in samples.enumerated() {
                bytes.storeBytes(of: Int32(clamping: Int64((Double(value) * Double(Int32.max)).rounded())),
                                 toByteOffset: index * 4, as: Int32.self)
            }
        case .f32:
            bytes.copyMemory(from: UnsafeRawBufferPointer(samples))
        }
    }

    /// The packed samples in `bytes` as floats: S16 over 32768, S32 over 2³¹;
    /// of interleaved frames of `channels`, only `channel`'s.
    public func floats(in bytes: UnsafeRawBufferPointer, channel: Int = 0, of channels: Int = 1) -> [Float] {
        precondition(channels > 0 && (0..<channels).contains(channel), "channel \(channel) of \(channels)")
        let step = self.bytes * channels
        let count = bytes.count / step
        var floats = [Float](repeating: 0, count: count)
        floats.withUnsafeMutableBufferPointer { floats in
            var offset = channel * self.bytes
            for index in 0..<count {
                floats[index] = switch self {
                case .s16: Float(bytes.load(fromByteOffset: offset, as: Int16.self)) / 32768
                case .s32: Float(Double(bytes.load(fromByteOffset: offset, as: Int32.self)) / 2_147_483_648)
                case .f32: bytes.load(fromByteOffset: offset, as: Float.self)
                }
                offset += step
            }
        }
        return floats
    }
}

/// Encoded packets of one stream (an H.264 or AAC elementary stream).
public struct PacketLayout: Hashable, Sendable, CustomStringConvertible {
    /// The codec's name, as FFmpeg names it ("h264", "aac").
    public let codec: String
    /// The largest packet a slot holds.
    public let maxPacketBytes: Int

    public init(codec: String, maxPacketBytes: Int) {
        precondition(maxPacketBytes > 0, "packets of \(maxPacketBytes) bytes")
        self.codec = codec
        self.maxPacketBytes = maxPacketBytes
    }

    public var description: String { "\(codec), up to \(maxPacketBytes) bytes" }
}
