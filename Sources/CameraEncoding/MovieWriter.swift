internal import CFFmpeg
import Glibc

/// One movie file: encoded packets muxed by libavformat into MP4, MOV or
/// Matroska (in clusters, as MP4 in fragments: ``Container/matroska``),
/// written to a descriptor the client opened (camerad never opens a path a
/// client names), from where it stood, never cutting what the file held before.
///
/// Crash-safe: the file is a fragmented MP4 (a `moov` without samples, written
/// with the first fragment — so its edit lists place AAC's priming before time 0,
/// keeping sound on the picture's clock — then a `moof` + `mdat` fragment at the
/// first keyframe after each ``fragmentInterval``), so
/// whatever stops the writer — a SIGKILL, a power cut, a full disk — leaves a
/// file players open, up to its last whole fragment. A clean ``finishWriting()``
/// flushes the last fragment and ends the file with its index (`mfra`: every
/// keyframe's place), so players seek in it as in any MP4; the fragments
/// are never rewritten, so no finish needs the file's start again (the
/// alternative, a `moov` rewritten at the end, would make a crash lose it all
/// and a finish rewrite the whole file).
///
/// One thread at a time (a recorder's).
public final class MovieWriter {
    public enum Container: String, Sendable, CaseIterable {
        case mp4, mov
        /// Matroska, in clusters of ``fragmentInterval``: the same crash safety
        /// (clusters are never rewritten: the segment's size is written
        /// unknown, as a live stream's, until a clean finish goes back to fill
        /// it, the duration and where the index, `Cues`, written last, lies) and
        /// no display matrix (FFmpeg 5.1 writes none there).
        case matroska

        /// Whether the file holds a display matrix (``DisplayTransform``).
        public var turnsPicture: Bool { self != .matroska }
    }

    /// Where the bytes go, for libavformat's callbacks: the descriptor, the
    /// bytes written, and the first error (ENOSPC: the disk is full).
    ///
    /// The movie is written from where the descriptor stood when the file
    /// began (`pwrite`, never the shared offset), and a failed write never
    /// cuts the file below what it held before: only bytes this movie added
    /// past that are ever taken back.
    private final class Output {
        let descriptor: Int32
        /// Where the movie's first byte goes.
        let start: Int64
        /// The file's size when the movie began: never cut below.
        let sizeBefore: Int64
        let keepsReservedBlocks: Bool
        /// The movie's bytes on the descriptor: how far it reaches.
        var bytesWritten: Int64 = 0
        /// Where the next write goes, from the movie's start: its end, but for
        /// a Matroska finish going back to fill in its header.
        var position: Int64 = 0
        var error: Int32?

        init(descriptor: Int32, keepsReservedBlocks: Bool) {
            self.descriptor = descriptor
            self.keepsReservedBlocks = keepsReservedBlocks
            start = max(0, Int64(lseek(descriptor, 0, SEEK_CUR)))
            var status = stat()
            sizeBefore = fstat(descriptor, &status) == 0 ? Int64(status.st_size) : 0
        }

        /// Writes a chunk whole, or cuts the file back to where it was: a box left
        /// half-written (the disk full) would make players refuse the whole file.
        /// After a failure nothing more is written.
        func write(_ buffer: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
            if let error { return -error }
            if keepsReservedBlocks, !fitsUnprivileged(count) {
                error = ENOSPC
                return -ENOSPC
            }
            var done = 0
            while done < count {
                let result = pwrite(descriptor, buffer + done, count - done, off_t(start + position) + off_t(done))
                if result < 0 {
                    if errno == EINTR { continue }
                    let failure = errno
                    error = failure
                    if done > 0 { cutBack() }
                    return -failure
                }
                done += result
            }
            position += Int64(count)
            bytesWritten = max(bytesWritten, position)
            return Int32(count)
        }

        /// Moves where the next write goes (the muxer's seek), within the movie:
        /// `whence` SEEK_SET, SEEK_CUR, SEEK_END or AVSEEK_SIZE (its size).
        func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
            let target: Int64
            switch whence & ~AVSEEK_FORCE {
            case AVSEEK_SIZE: return bytesWritten
            case SEEK_SET: target = offset
            case SEEK_CUR: target = position + offset
            case SEEK_END: target = bytesWritten + offset
            default: return Int64(-EINVAL)
            }
            guard target >= 0 else { return Int64(-EINVAL) }
            position = target
            return target
        }

        /// Whether `count` more bytes fit in what an unprivileged user may still
        /// write there: the blocks a filesystem keeps for root stay root's.
        private func fitsUnprivileged(_ count: Int) -> Bool {
            var status = statvfs()
            guard fstatvfs(descriptor, &status) == 0 else { return true }
            return Int64(status.f_bavail) * Int64(status.f_frsize) >= Int64(count)
        }

        /// Takes back the part of a chunk written past the file's old end.
        private func cutBack() {
            let end = max(start + bytesWritten, sizeBefore)
            var status = stat()
            if fstat(descriptor, &status) == 0, Int64(status.st_size) > end { _ = ftruncate(descriptor, off_t(end)) }
        }
    }

    public let container: Container
    /// Fragments that reached the descriptor so far (the first with the file's
    /// header): a muxer in fragment mode writes nothing between them. The last
    /// one reaches it with ``finishWriting()``.
    public private(set) var fragmentsWritten = 0
    /// Seconds of media per fragment, at least: AVFoundation's `movieFragmentInterval`.
    public let fragmentInterval: Double
    private let output: Output
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The streams in the file, by kind, with their time bases.
    private var streams: [EncodedStreamParameters.Kind: (index: Int32, timeBase: AVRational)] = [:]
    /// The capture time that is the file's zero: the start given, else the first packet's.
    private var origin: Int64?
    private var finished = false

    /// The bytes on the descriptor so far: the fragments written.
    public var bytesWritten: Int64 { output.bytesWritten }

    /// The bytes of the packets given since the last fragment reached the
    /// descriptor: the fragment under way, held by the muxer.
    private var pendingBytes: Int64 = 0

    /// What the file holds of what was given so far: the fragments written and
    /// the packets of the one under way (AVFoundation's `recordedFileSize`, live,
    /// where ``bytesWritten`` grows a fragment at a time).
    public var bytesRecorded: Int64 { output.bytesWritten + pendingBytes }

    /// Starts a file on `descriptor` (left open: its owner closes it) with a
    /// video stream, an audio stream or both, and writes its header.
    ///
    /// - Parameters:
    ///   - startNanoseconds: the capture time the file starts at (its first
    ///     keyframe's), so that audio and video keep their offset; nil: the first packet's.
    ///   - metadata: the file's tags ("location" as ISO 6709, "creation_time", "make", "model").
    ///   - display: how players turn the picture (the video track's display matrix).
    ///   - keepsReservedBlocks: write only what an unprivileged user could (the
    ///     disk is full when `f_bavail` is): for a client other than root, whose
    ///     file camerad writes with root's privileges.
    /// - Throws: ``EncodingError`` when the header cannot be written.
    public init(descriptor: Int32, container: Container, video: EncodedStreamParameters?, audio: EncodedStreamParameters? = nil,
                startNanoseconds: Int64? = nil, fragmentInterval: Double = 10, metadata: [String: String] = [:],
                display: DisplayTransform = .identity, keepsReservedBlocks: Bool = false) throws(EncodingError) {
        guard video != nil || audio != nil else { throw EncodingError("a movie needs a video or an audio stream") }
        self.container = container
        origin = startNanoseconds
        self.fragmentInterval = fragmentInterval
        output = Output(descriptor: descriptor, keepsReservedBlocks: keepsReservedBlocks)
        var format: UnsafeMutablePointer<AVFormatContext>?
        let allocated = avformat_alloc_output_context2(&format, nil, container.rawValue, nil)
        guard allocated >= 0, let format else { throw EncodingError(allocated, "making a \(container) muxer") }
        self.format = format
        do throws(EncodingError) {
            let size = 64 * 1024
            guard let buffer = av_malloc(size)?.assumingMemoryBound(to: UInt8.self),
                  let io = avio_alloc_context(buffer, Int32(size), 1, Unmanaged.passUnretained(output).toOpaque(), nil,
                                              { opaque, bytes, count in
                                                  guard let opaque, let bytes else { return -EINVAL }
                                                  return Unmanaged<Output>.fromOpaque(opaque).takeUnretainedValue().write(bytes, Int(count))
                                              },
                                              // MP4 and MOV are never sought in (fragments only go forward); a
                                              // Matroska finish goes back to its header.
                                              container == .matroska ? { opaque, offset, whence in
                                                  guard let opaque else { return Int64(-EINVAL) }
                                                  return Unmanaged<Output>.fromOpaque(opaque).takeUnretainedValue().seek(offset, whence)
                                              } : nil)
            else { throw EncodingError("out of memory for the file's buffer") }
            format.pointee.pb = io
            format.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            for (kind, parameters) in [(EncodedStreamParameters.Kind.video, video), (.audio, audio)] {
                guard let parameters else { continue }
                guard let stream = avformat_new_stream(format, nil) else { throw EncodingError("out of memory for a stream") }
                let copied = avcodec_parameters_copy(stream.pointee.codecpar, parameters.parameters)
                guard copied >= 0 else { throw EncodingError(copied, "describing the \(kind) stream") }
                stream.pointee.time_base = AVRational(num: 1, den: 1_000_000)
                streams[kind] = (stream.pointee.index, stream.pointee.time_base)
                if kind == .video, display != .identity {
                    guard container.turnsPicture else { throw EncodingError("a \(container) file holds no display matrix") }
                    guard let matrix = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * 4) else {
                        throw EncodingError("out of memory for the display matrix")
                    }
                    display.write(into: UnsafeMutableRawPointer(matrix).assumingMemoryBound(to: Int32.self))
                }
            }
            for (key, value) in metadata { av_dict_set(&format.pointee.metadata, key, value, 0) }
            var options: OpaquePointer?
            defer { av_dict_free(&options) }
            switch container {
            case .mp4, .mov:
                av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+delay_moov+default_base_moof", 0)
                av_dict_set(&options, "min_frag_duration", "\(Int64(fragmentInterval * 1_000_000))", 0)
                // The edit lists that place each track count in the movie's timescale: FFmpeg's
                // 1000 would round where the sound starts against the picture by up to a millisecond.
                av_dict_set(&options, "movie_timescale", "90000", 0)
            case .matroska:
                // A cluster as a fragment: at most the interval long (the muxer also starts one at
                // each keyframe), never cut at a size.
                av_dict_set(&options, "cluster_time_limit", "\(Int64(fragmentInterval * 1000))", 0)
                av_dict_set(&options, "cluster_size_limit", "\(Int32.max)", 0)
            }
            // Each fragment reaches the descriptor as the muxer ends it, not when a buffer fills.
            av_dict_set(&options, "flush_packets", "1", 0)
            // Packets wait until every stream has one, however long a picture is held back (an encoder
            // starved on a loaded machine), where FFmpeg's default writes one stream alone after 10 s.
            format.pointee.max_interleave_delta = 0
            let written = avformat_write_header(format, &options)
            guard written >= 0 else { throw error(written, "writing the \(container) header") }
            // The muxer chose each stream's time base: packets are rescaled to it.
            for (kind, stream) in streams {
                streams[kind] = (stream.index, format.pointee.streams[Int(stream.index)]!.pointee.time_base)
            }
            guard let packet = av_packet_alloc() else { throw EncodingError("out of memory for a packet") }
            self.packet = packet
        } catch {
            release()
            throw error
        }
    }

    deinit { release() }

    /// Lets go of the muxer without finishing: what was written stays, up to the last fragment.
    private func release() {
        if let format {
            if let io = format.pointee.pb {
                var buffer: UnsafeMutableRawPointer? = UnsafeMutableRawPointer(io.pointee.buffer)
                av_freep(&buffer)
                var context: UnsafeMutablePointer<AVIOContext>? = io
                avio_context_free(&context)
                format.pointee.pb = nil
            }
            avformat_free_context(format)
            self.format = nil
        }
        av_packet_free(&packet)
    }

    /// An error of the muxer, with the descriptor's own when writing failed (ENOSPC).
    private func error(_ code: Int32, _ what: String) -> EncodingError {
        if let errno = output.error {
            return EncodingError("\(what) failed: \(String(cString: strerror(errno)))", errno: errno)
        }
        return EncodingError(code, what)
    }

    /// Writes one packet of the video or audio stream; packets of each stream
    /// in decoding order (libavformat interleaves the two by time).
    ///
    /// - Throws: ``EncodingError`` (``EncodingError/errno`` ENOSPC when the disk is full).
    public func write(_ encoded: EncodedPacket, to kind: EncodedStreamParameters.Kind) throws(EncodingError) {
        guard let format, let packet, !finished else { throw EncodingError("the movie is finished") }
        guard let stream = streams[kind] else { throw EncodingError("the movie has no \(kind) stream") }
        let origin = self.origin ?? encoded.decodeTimeNanoseconds
        self.origin = origin
        let allocated = av_new_packet(packet, Int32(encoded.bytes.count))
        guard allocated >= 0 else { throw EncodingError(allocated, "making a packet") }
        encoded.bytes.withUnsafeBytes { packet.pointee.data.update(from: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: $0.count) }
        let nanoseconds = AVRational(num: 1, den: 1_000_000_000)
        packet.pointee.pts = av_rescale_q(encoded.presentationTimeNanoseconds - origin, nanoseconds, stream.timeBase)
        packet.pointee.dts = av_rescale_q(encoded.decodeTimeNanoseconds - origin, nanoseconds, stream.timeBase)
        packet.pointee.duration = av_rescale_q(encoded.durationNanoseconds, nanoseconds, stream.timeBase)
        packet.pointee.stream_index = stream.index
        packet.pointee.flags = encoded.isKeyframe ? AV_PKT_FLAG_KEY : 0
        let before = output.bytesWritten
        let written = av_interleaved_write_frame(format, packet)
        guard written >= 0 else { throw error(written, "writing a \(kind) packet") }
        if output.bytesWritten > before {
            // A fragment went out: the packets before this one (a keyframe starts the next).
            fragmentsWritten += 1
            pendingBytes = 0
        }
        pendingBytes += Int64(encoded.bytes.count)
    }

    /// Ends the file cleanly: the last fragment and the index. The descriptor stays open.
    ///
    /// - Throws: ``EncodingError`` (ENOSPC when the disk is full: the file
    ///   still plays up to its last whole fragment).
    public func finishWriting() throws(EncodingError) {
        guard let format, !finished else { return }
        finished = true
        let written = av_write_trailer(format)
        avio_flush(format.pointee.pb)
        pendingBytes = 0
        guard written >= 0, output.error == nil else { throw error(written, "ending the file") }
    }
}

/// How a player turns a movie's picture to show it: the video track's display
/// matrix, as AVFoundation writes a movie connection's `videoOrientation` and
/// mirroring. The frames stay as the camera made them.
public struct DisplayTransform: Equatable, Sendable {
    /// Degrees clockwise: 0, 90, 180 or 270.
    public var clockwiseDegrees: Int
    /// Flipped left to right, after the turn.
    public var mirrored: Bool

    public init(clockwiseDegrees: Int, mirrored: Bool) {
        self.clockwiseDegrees = clockwiseDegrees
        self.mirrored = mirrored
    }

    public static let identity = DisplayTransform(clockwiseDegrees: 0, mirrored: false)

    /// FFmpeg's 3x3 display matrix (libavutil/display.h): set with a
    /// clockwise angle, read back (ffprobe's "rotation") counterclockwise —
    /// a portrait movie reads −90, as an iPhone's does.
    func write(into matrix: UnsafeMutablePointer<Int32>) {
        av_display_rotation_set(matrix, Double(clockwiseDegrees))
        if mirrored { av_display_matrix_flip(matrix, 1, 0) }
    }
}
