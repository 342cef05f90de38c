internal import CCameraShims
internal import CFFmpeg
import Glibc

/// H.264 through libx264 (inside Debian's libavcodec): I420 or NV12 frames
/// in — read where they lie, never copied on the way (x264 copies each into its
/// own picture as it takes it) — packets out, no B-frames (each packet decodes in the order it comes, so a
/// recorder may start at any keyframe and packets fan out to files as they
/// are), a keyframe every ``Settings/keyframeInterval`` frames or when asked
/// (a recorder joining). Timestamps are the frames' own, in nanoseconds.
///
/// One thread at a time (an encoder node's worker).
public final class VideoEncoder {
    /// AVFoundation's `outputSettings(for:)` for video, as x264 takes them.
    public struct Settings: Sendable, Equatable, Hashable {
        public var width: Int
        public var height: Int
        /// Frames per second the camera runs at (the stream's nominal rate).
        public var frameRate: Int
        /// Bits per second (AVVideoAverageBitRateKey); nil: constant quality (``quality``).
        public var bitRate: Int?
        /// x264's CRF when ``bitRate`` is nil: 0 (lossless) to 51; 23 is x264's default.
        public var quality: Int = 23
        /// Frames from one keyframe to the next (AVVideoMaxKeyFrameIntervalKey).
        public var keyframeInterval: Int
        /// x264's preset and tune ("veryfast", ""): speed against size.
        public var preset: String = "veryfast"
        public var tune: String = ""
        /// The frames' layout: 4:2:0 as the camera's stream brings it (NV12 from a
        /// camera that sends NV12, I420 from one whose frames are decoded).
        public var input = Input.i420

        /// A 4:2:0 frame's planes, back to back: Y, then U and V (I420) or UV interleaved (NV12).
        public enum Input: Sendable, Hashable {
            case i420, nv12
        }

        public init(width: Int, height: Int, frameRate: Int, bitRate: Int? = nil, keyframeInterval: Int? = nil) {
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.bitRate = bitRate
            self.keyframeInterval = keyframeInterval ?? max(1, frameRate * 2)
        }
    }

    public let settings: Settings
    /// What a muxer needs of this stream.
    public let parameters: EncodedStreamParameters
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// Frames given: the first is a keyframe whatever is asked.
    private var framesIn = 0

    /// - Throws: ``EncodingError`` when libx264 is missing or refuses the settings.
    public init(_ settings: Settings) throws(EncodingError) {
        FFmpegLog.quiet
        guard settings.width > 0, settings.height > 0, settings.width % 2 == 0, settings.height % 2 == 0,
              (1...1000).contains(settings.frameRate), settings.keyframeInterval > 0
        else { throw EncodingError("H.264 takes even sizes, 1 to 1000 fps and a keyframe interval of 1 or more, not \(settings)") }
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            throw EncodingError("this FFmpeg has no libx264 encoder (Debian's libavcodec has)")
        }
        var context: UnsafeMutablePointer<AVCodecContext>? = avcodec_alloc_context3(codec)
        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
        do throws(EncodingError) {
            guard let context, frame != nil, packet != nil else { throw EncodingError("out of memory for an encoder") }
            context.pointee.width = Int32(settings.width)
            context.pointee.height = Int32(settings.height)
            context.pointee.pix_fmt = settings.input.pixelFormat
            context.pointee.time_base = AVRational(num: 1, den: 1_000_000_000)
            context.pointee.framerate = AVRational(num: Int32(settings.frameRate), den: 1)
            context.pointee.gop_size = Int32(settings.keyframeInterval)
            context.pointee.max_b_frames = 0
            // Files are MP4 or MOV: the decoder's configuration goes in their header.
            context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
            if let bitRate = settings.bitRate { context.pointee.bit_rate = Int64(bitRate) }
            var options: OpaquePointer?
            defer { av_dict_free(&options) }
            av_dict_set(&options, "preset", settings.preset, 0)
            if !settings.tune.isEmpty { av_dict_set(&options, "tune", settings.tune, 0) }
            if settings.bitRate == nil { av_dict_set(&options, "crf", "\(settings.quality)", 0) }
            // A keyframe asked for is an IDR frame: a file may start there.
            av_dict_set(&options, "forced-idr", "1", 0)
            let opened = avcodec_open2(context, codec, &options)
            guard opened >= 0 else { throw EncodingError(opened, "opening libx264 for \(settings.width)x\(settings.height)") }
            parameters = try EncodedStreamParameters(copying: context, kind: .video)
        } catch {
            freeEncoder(&context, &frame, &packet)
            throw error
        }
        self.settings = settings
        self.context = context
        self.frame = frame
        self.packet = packet
    }

    deinit { release() }

    private func release() {
        freeEncoder(&context, &frame, &packet)
        // libx264 frees tens of megabytes in the arenas of its own threads, which glibc keeps for
        // reuse: without this, camerad's memory after eight encoders stopped stays 150 MB above
        // what it was, and grows with each round.
        CCameraShims_return_free_memory()
    }

    /// Encodes one frame (``Settings/input``, ``width``×``height``, planes back to
    /// back) captured at `timestampNanoseconds`; a keyframe when `keyframe` (a
    /// recorder joined). The bytes are read in place, during this call only: the
    /// frame goes to libavcodec as a buffer wrapping them, which x264 copies into
    /// its own picture before the call returns. Returns the packets ready (none
    /// while x264 still looks ahead).
    public func encode(_ bytes: UnsafeRawBufferPointer, timestampNanoseconds: Int64, keyframe: Bool = false) throws(EncodingError) -> [EncodedPacket] {
        guard let context, let frame else { throw EncodingError("the encoder was flushed") }
        let (width, height) = (settings.width, settings.height)
        let lumaSize = width * height
        guard let base = bytes.baseAddress, bytes.count >= lumaSize * 3 / 2 else {
            throw EncodingError("a 4:2:0 \(width)x\(height) frame is \(lumaSize * 3 / 2) bytes, not \(bytes.count)")
        }
        let data = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        // Read-only, freed by nobody: the bytes are the caller's.
        guard let buffer = av_buffer_create(data, lumaSize * 3 / 2, { _, _ in }, nil, Int32(AV_BUFFER_FLAG_READONLY)) else {
            throw EncodingError("out of memory for a frame's reference")
        }
        defer { av_frame_unref(frame) }
        frame.pointee.buf.0 = buffer
        frame.pointee.format = settings.input.pixelFormat.rawValue
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        switch settings.input {
        case .i420:
            frame.pointee.data.0 = data
            frame.pointee.data.1 = data + lumaSize
            frame.pointee.data.2 = data + lumaSize + lumaSize / 4
            (frame.pointee.linesize.0, frame.pointee.linesize.1, frame.pointee.linesize.2) = (Int32(width), Int32(width / 2), Int32(width / 2))
        case .nv12:
            frame.pointee.data.0 = data
            frame.pointee.data.1 = data + lumaSize
            (frame.pointee.linesize.0, frame.pointee.linesize.1) = (Int32(width), Int32(width))
        }
        frame.pointee.pts = timestampNanoseconds
        frame.pointee.pict_type = keyframe || framesIn == 0 ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        framesIn += 1
        let sent = avcodec_send_frame(context, frame)
        guard sent >= 0 else { throw EncodingError(sent, "encoding a frame") }
        // The frame is taken (x264 copied it) as its packets are asked for, here.
        return try receive()
    }

    /// Ends the stream: the packets x264 still held. The encoder takes nothing after.
    public func flush() throws(EncodingError) -> [EncodedPacket] {
        guard let context else { return [] }
        try sendEndOfStream(to: context)
        return try receive()
    }

    private func receive() throws(EncodingError) -> [EncodedPacket] {
        guard let context, let packet else { return [] }
        let frameDuration = 1_000_000_000 / Int64(settings.frameRate)
        return try receivePackets(from: context, into: packet) { bytes, packet in
            EncodedPacket(bytes: bytes, presentationTimeNanoseconds: packet.pts, decodeTimeNanoseconds: packet.dts,
                          durationNanoseconds: packet.duration > 0 ? packet.duration : frameDuration,
                          isKeyframe: packet.flags & AV_PKT_FLAG_KEY != 0)
        }
    }
}

extension VideoEncoder.Settings.Input {
    var pixelFormat: AVPixelFormat {
        switch self {
        case .i420: AV_PIX_FMT_YUV420P
        case .nv12: AV_PIX_FMT_NV12
        }
    }
}
