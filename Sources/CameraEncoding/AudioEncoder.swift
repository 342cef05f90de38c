internal import CFFmpeg

/// AAC through FFmpeg's native encoder: a microphone's periods (interleaved
/// float, any period size) in, packets of 1024 samples out — a FIFO between
/// the two, since periods rarely fall on AAC's frames. Timestamps follow the
/// samples: the first period's capture time, then the samples counted at the
/// rate (the first packet a frame early: the encoder's priming, which the
/// file's edit list skips). A period that comes later than the samples
/// before it put it (periods lost upstream, or a device clock running slow)
/// has the gap filled with silence, up to 10 s, so the sound keeps its place
/// against the picture; past that, or back in time, the clock starts again there.
///
/// One thread at a time (an encoder node's worker).
public final class AudioEncoder {
    /// AVFoundation's `outputSettings(for:)` for audio.
    public struct Settings: Sendable, Equatable, Hashable {
        public var sampleRate: Int
        public var channels: Int
        /// Bits per second (AVEncoderBitRateKey).
        public var bitRate: Int

        public init(sampleRate: Int, channels: Int, bitRate: Int = 128_000) {
            self.sampleRate = sampleRate
            self.channels = channels
            self.bitRate = bitRate
        }
    }

    public let settings: Settings
    public let parameters: EncodedStreamParameters
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// Samples per AAC frame (1024).
    private let frameSamples: Int
    /// Interleaved samples waiting for a whole frame.
    private var pending: [Float] = []
    /// The capture time of sample 0, and the samples given since (silence put in for gaps counted).
    private var origin: Int64?
    private var samplesIn: Int64 = 0
    /// A period this much later than the samples before it put it is a gap (less: a clock's jitter).
    static let gapTolerance: Int64 = 5_000_000
    /// The longest gap filled with silence (10 s); past it the clock starts again.
    static let largestGap: Int64 = 10_000_000_000
    /// AAC frames sent: the next one's first sample is this × ``frameSamples``.
    private var framesSent: Int64 = 0

    /// - Throws: ``EncodingError`` for a rate or channel count AAC cannot take.
    public init(_ settings: Settings) throws(EncodingError) {
        FFmpegLog.quiet
        guard (1...2).contains(settings.channels), (8_000...96_000).contains(settings.sampleRate), settings.bitRate > 0 else {
            throw EncodingError("AAC here takes 1 or 2 channels at 8 to 96 kHz, not \(settings)")
        }
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_AAC) else { throw EncodingError("this FFmpeg has no AAC encoder") }
        var context: UnsafeMutablePointer<AVCodecContext>? = avcodec_alloc_context3(codec)
        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
        do throws(EncodingError) {
            guard let context, let frame, packet != nil else { throw EncodingError("out of memory for an encoder") }
            context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            context.pointee.sample_rate = Int32(settings.sampleRate)
            av_channel_layout_default(&context.pointee.ch_layout, Int32(settings.channels))
            context.pointee.bit_rate = Int64(settings.bitRate)
            context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
            context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
            let opened = avcodec_open2(context, codec, nil)
            guard opened >= 0 else { throw EncodingError(opened, "opening the AAC encoder for \(settings)") }
            frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
            frame.pointee.nb_samples = context.pointee.frame_size
            frame.pointee.sample_rate = context.pointee.sample_rate
            let copied = av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
            guard copied >= 0 else { throw EncodingError(copied, "describing a frame's channels") }
            let allocated = av_frame_get_buffer(frame, 0)
            guard allocated >= 0 else { throw EncodingError(allocated, "allocating a frame") }
            parameters = try EncodedStreamParameters(copying: context, kind: .audio)
            frameSamples = Int(context.pointee.frame_size)
        } catch {
            freeEncoder(&context, &frame, &packet)
            throw error
        }
        self.settings = settings
        self.context = context
        self.frame = frame
        self.packet = packet
    }

    deinit {
        freeEncoder(&context, &frame, &packet)
    }

    /// Encodes one period (interleaved float samples of ``Settings/channels``)
    /// captured at `timestampNanoseconds`; returns the packets ready.
    public func encode(interleaved samples: UnsafeBufferPointer<Float>, timestampNanoseconds: Int64) throws(EncodingError) -> [EncodedPacket] {
        let rate = Int64(settings.sampleRate)
        if let origin {
            let expected = origin + samplesIn * 1_000_000_000 / rate
            let late = timestampNanoseconds - expected
            if late > Self.gapTolerance && late <= Self.largestGap {
                // Samples lost before this period (an overrun, a worker behind), or a clock
                // running slow: silence in their place, so what follows keeps its time.
                let missing = Int(late * rate / 1_000_000_000)
                pending.append(contentsOf: repeatElement(0, count: missing * settings.channels))
                samplesIn += Int64(missing)
            } else if abs(late) > Self.largestGap {
                // Too far to fill, or back in time: the clock starts again at this period.
                self.origin = timestampNanoseconds - samplesIn * 1_000_000_000 / rate
            }
        } else {
            origin = timestampNanoseconds
        }
        samplesIn += Int64(samples.count / settings.channels)
        pending.append(contentsOf: samples)
        var packets: [EncodedPacket] = []
        let channels = settings.channels
        while pending.count >= frameSamples * channels {
            try packets += send(frameOf: Array(pending.prefix(frameSamples * channels)))
            pending.removeFirst(frameSamples * channels)
        }
        return packets
    }

    /// Ends the stream: what waits, padded with silence, and what the encoder still holds.
    public func flush() throws(EncodingError) -> [EncodedPacket] {
        guard let context else { return [] }
        var packets: [EncodedPacket] = []
        if !pending.isEmpty {
            let channels = settings.channels
            try packets += send(frameOf: pending + [Float](repeating: 0, count: frameSamples * channels - pending.count))
            pending = []
        }
        try sendEndOfStream(to: context)
        return packets + (try receive())
    }

    /// Sends one AAC frame's interleaved samples, made planar.
    private func send(frameOf interleaved: [Float]) throws(EncodingError) -> [EncodedPacket] {
        guard let context, let frame else { throw EncodingError("the encoder was flushed") }
        let writable = av_frame_make_writable(frame)
        guard writable >= 0 else { throw EncodingError(writable, "making a frame writable") }
        let channels = settings.channels
        withUnsafeMutableBytes(of: &frame.pointee.data) { data in
            let planes = data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
            for channel in 0..<channels {
                guard let plane = planes[channel] else { continue }
                let floats = UnsafeMutableRawPointer(plane).assumingMemoryBound(to: Float.self)
                for index in 0..<frameSamples { floats[index] = interleaved[index * channels + channel] }
            }
        }
        frame.pointee.pts = framesSent * Int64(frameSamples)
        framesSent += 1
        let sent = avcodec_send_frame(context, frame)
        guard sent >= 0 else { throw EncodingError(sent, "encoding audio") }
        return try receive()
    }

    private func receive() throws(EncodingError) -> [EncodedPacket] {
        guard let context, let packet else { return [] }
        let origin = self.origin ?? 0
        let rate = Int64(settings.sampleRate)
        func nanoseconds(_ samples: Int64) -> Int64 { origin + samples * 1_000_000_000 / rate }
        return try receivePackets(from: context, into: packet) { bytes, packet in
            EncodedPacket(bytes: bytes, presentationTimeNanoseconds: nanoseconds(packet.pts), decodeTimeNanoseconds: nanoseconds(packet.dts),
                          durationNanoseconds: packet.duration * 1_000_000_000 / rate, isKeyframe: true)
        }
    }
}
