internal import CFFmpeg

/// One encoded access unit (an H.264 frame, an AAC frame) as an encoder
/// made it: what a recorder's muxer writes, and what an encoder node will
/// publish into its pool's slots for every recorder of the same settings.
///
/// Timestamps are in nanoseconds on the capture clock (CLOCK_MONOTONIC), as
/// the frames and periods they were made from.
public struct EncodedPacket: Sendable, Equatable {
    public var bytes: [UInt8]
    /// Presentation and decoding time (equal without B-frames: camerad's
    /// encoders make none, so a packet can be cut into any file in order).
    public var presentationTimeNanoseconds: Int64
    public var decodeTimeNanoseconds: Int64
    public var durationNanoseconds: Int64
    /// A random-access point: a recorder's file may start here.
    public var isKeyframe: Bool

    public init(bytes: [UInt8], presentationTimeNanoseconds: Int64, decodeTimeNanoseconds: Int64, durationNanoseconds: Int64,
                isKeyframe: Bool) {
        self.bytes = bytes
        self.presentationTimeNanoseconds = presentationTimeNanoseconds
        self.decodeTimeNanoseconds = decodeTimeNanoseconds
        self.durationNanoseconds = durationNanoseconds
        self.isKeyframe = isKeyframe
    }
}

/// What a muxer needs to know of an encoder's stream (FFmpeg's codec
/// parameters: codec, size or rate, the decoder's configuration): shared by
/// every file its packets go into. Immutable once made.
public final class EncodedStreamParameters: @unchecked Sendable {
    let parameters: UnsafeMutablePointer<AVCodecParameters>
    public let kind: Kind

    public enum Kind: Sendable { case video, audio }

    init(copying context: UnsafeMutablePointer<AVCodecContext>, kind: Kind) throws(EncodingError) {
        guard let parameters = avcodec_parameters_alloc() else { throw EncodingError("out of memory for codec parameters") }
        let result = avcodec_parameters_from_context(parameters, context)
        guard result >= 0 else {
            var freed: UnsafeMutablePointer<AVCodecParameters>? = parameters
            avcodec_parameters_free(&freed)
            throw EncodingError(result, "copying the encoder's parameters")
        }
        self.parameters = parameters
        self.kind = kind
    }

    /// A camera's own MJPEG frames, stored as they come (no encoder): every
    /// packet a whole JPEG, each a keyframe.
    public init(mjpegWidth width: Int, height: Int) throws(EncodingError) {
        guard let parameters = avcodec_parameters_alloc() else { throw EncodingError("out of memory for codec parameters") }
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = AV_CODEC_ID_MJPEG
        parameters.pointee.width = Int32(width)
        parameters.pointee.height = Int32(height)
        self.parameters = parameters
        kind = .video
    }

    deinit {
        var freed: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&freed)
    }
}

/// An encoder's or a muxer's failure, saying what failed and FFmpeg's reason.
public struct EncodingError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// The errno behind it, when there is one (ENOSPC: the disk is full).
    public let errno: Int32?

    init(_ message: String, errno: Int32? = nil) {
        self.message = message
        self.errno = errno
    }

    /// FFmpeg's result `code` while doing `what`.
    init(_ code: Int32, _ what: String) {
        var text = [CChar](repeating: 0, count: 256)
        av_strerror(code, &text, text.count)
        let reason = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        self.init("\(what) failed: \(reason)", errno: code < 0 && -code < 4096 ? -code : nil)
    }

    public var description: String { message }
}

/// FFmpeg's AVERROR_EOF, FFERRTAG('E', 'O', 'F', ' ') (a function-like macro, not imported).
let averrorEOF: Int32 = -0x2046_4F45

/// Every packet `context` has ready, each made by `make` from its bytes and
/// FFmpeg's packet (`packet`, reused): what both encoders do after each frame.
func receivePackets(from context: UnsafeMutablePointer<AVCodecContext>, into packet: UnsafeMutablePointer<AVPacket>,
                    _ make: (_ bytes: [UInt8], _ packet: AVPacket) -> EncodedPacket) throws(EncodingError) -> [EncodedPacket] {
    var packets: [EncodedPacket] = []
    while true {
        let result = avcodec_receive_packet(context, packet)
        if result == -EAGAIN || result == averrorEOF { return packets }
        guard result >= 0 else { throw EncodingError(result, "receiving a packet") }
        defer { av_packet_unref(packet) }
        packets.append(make([UInt8](UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))), packet.pointee))
    }
}

/// Frees what an encoder allocated — its frame, its packet, its codec
/// context — each set to nil: at its end, and when it fails to open.
func freeEncoder(_ context: inout UnsafeMutablePointer<AVCodecContext>?, _ frame: inout UnsafeMutablePointer<AVFrame>?,
                 _ packet: inout UnsafeMutablePointer<AVPacket>?) {
    av_frame_free(&frame)
    av_packet_free(&packet)
    avcodec_free_context(&context)
}

/// Tells the encoder its stream ended: what it holds comes out with the next ``receivePackets(from:into:_:)``.
func sendEndOfStream(to context: UnsafeMutablePointer<AVCodecContext>) throws(EncodingError) {
    let sent = avcodec_send_frame(context, nil)
    guard sent >= 0 || sent == averrorEOF else { throw EncodingError(sent, "flushing the encoder") }
}

/// FFmpeg's own log: errors only. Its encoders print statistics at every close
/// (libx264's "kb/s", AAC's "frames left in the queue") to standard error,
/// which would fill camerad's log with a paragraph per recording; failures
/// reach camerad as ``EncodingError``s instead.
enum FFmpegLog {
    static let quiet: Void = av_log_set_level(AV_LOG_ERROR)
}
