import CameraEncoding
import CameraIPC
import CameraMedia
import Logging
import Synchronization

/// What a recording's picture is: H.264 at a size and rate of its own, or
/// the camera's own MJPEG as it comes.
enum VideoRecordingFormat: Hashable, Sendable {
    case h264(VideoEncoder.Settings)
    /// The camera's MJPG mode, its size and frame rate.
    case mjpeg(width: Int, height: Int, frameRate: Int)

    var width: Int {
        switch self {
        case .h264(let settings): settings.width
        case .mjpeg(let width, _, _): width
        }
    }

    var height: Int {
        switch self {
        case .h264(let settings): settings.height
        case .mjpeg(_, let height, _): height
        }
    }

    var frameRate: Int {
        switch self {
        case .h264(let settings): settings.frameRate
        case .mjpeg(_, _, let frameRate): frameRate
        }
    }
}

/// A camera's video for recordings (issue 35): a derived node shared by
/// every recorder asking the same ``VideoRecordingFormat``, whose packets
/// fan out to them as any node's buffers do. For H.264 it encodes the
/// camera's 4:2:0 stream of the recording's size — NV12 from a camera that
/// sends NV12 (at its size, its own frames, none converted), else I420 — read
/// in place, one encoding whatever the number of files; for MJPEG it passes
/// the camera's own JPEG frames on as packets, every one a keyframe (none
/// encoded: one copy each, into the node's pool). Recorders subscribe with `startsAtKeyframe`; one that joins
/// asks for a keyframe at once (``requestKeyframe()``) instead of waiting for
/// the next scheduled one.
///
/// A packet's sequence is its frame's: upstream drops (frames its worker was
/// too late for) reach its recorders in the same numbers, so a file's
/// accounting covers the camera's frames.
final class VideoEncoderNode: Sendable {
    let format: VideoRecordingFormat
    /// What a muxer needs of its stream.
    let parameters: EncodedStreamParameters
    /// What its H.264 encoder reads: the camera's NV12 as it comes, else I420; nil when it passes MJPEG on.
    let encoderInput: VideoEncoder.Settings.Input?
    private let work: Work
    /// The node attached to the camera's variant it reads.
    private let derived: DerivedNode
    var node: MediaNode { derived.node }

    /// The encoder (none for MJPEG) and what it needs between frames, on the worker.
    private final class Work: Sendable {
        private struct State {
            /// Used only under this lock (given to it: `sending`).
            let encoder: VideoEncoder?
            /// Frames in the encoder, by timestamp: a packet's sequence is its frame's.
            var sequences: [Int64: UInt64] = [:]
        }
        private let state: OrderedMutex<State>
        /// Its packets, kept for pre-rolls and published.
        private let published = PublishedPackets()
        let keyframeWanted = Atomic(false)
        /// Frames given to it, each of which makes one packet (the last ones at the flush).
        let framesIn = Atomic(0)

        init(_ encoder: sending VideoEncoder?) {
            state = OrderedMutex(.encoderWork, State(encoder: encoder))
        }

        /// A frame's packets — encoded, or for MJPEG the camera's JPEG as it is
        /// (should the camera leave its MJPG mode, or change its size, its
        /// stream, which passes MJPEG only unchanged, ends, and with it this
        /// node: its files end playable, saying why) — kept and published.
        func take(_ frame: PooledFrame, into node: MediaNode) {
            let keyframe = keyframeWanted.exchange(false, ordering: .relaxed)
            framesIn.add(1, ordering: .relaxed)
            let packets = state.withLock { state -> [(UInt64, EncodedPacket)] in
                guard let encoder = state.encoder else {
                    return [(frame.sequence, EncodedPacket(bytes: Array(frame.bytes), presentationTimeNanoseconds: frame.timestampNanoseconds,
                                                           decodeTimeNanoseconds: frame.timestampNanoseconds,
                                                           durationNanoseconds: frame.durationNanoseconds, isKeyframe: true))]
                }
                state.sequences[frame.timestampNanoseconds] = frame.sequence
                do {
                    let packets = try encoder.encode(frame.bytes, timestampNanoseconds: frame.timestampNanoseconds, keyframe: keyframe)
                    return packets.map { (state.sequences.removeValue(forKey: $0.presentationTimeNanoseconds) ?? frame.sequence, $0) }
                } catch {
                    node.logger.error("\(node.name): frame \(frame.sequence): \(error)")
                    return []
                }
            }
            published.publish(packets, into: node)
        }

        /// The packets of the frames still in x264's lookahead, published once
        /// the camera's stream ended: every frame the encoder was given is in
        /// its recorders' files.
        func flush(into node: MediaNode) {
            let packets = state.withLock { state -> [(UInt64, EncodedPacket)] in
                guard let encoder = state.encoder else { return [] }
                do {
                    return try encoder.flush().map { (state.sequences.removeValue(forKey: $0.presentationTimeNanoseconds) ?? 0, $0) }
                } catch {
                    node.logger.error("\(node.name): flushing: \(error)")
                    return []
                }
            }
            published.publish(packets, into: node)
        }

        /// The recent packets for a pre-roll from `time`.
        func history(since time: Int64) -> [PacketHistory.Held] { published.preRoll(from: time) }
    }

    /// Starts encoding `streamer`'s camera at the format's size and rate, or
    /// passing its MJPEG on (the stream charged to camerad).
    ///
    /// - Throws: INVALID_ARGUMENT for settings libx264 refuses; what opening the camera's stream throws.
    init(on streamer: DeviceStreamer, name: String, format: VideoRecordingFormat, preset: SessionPreset = .inputPriority,
         budget: ClientBudget, logger: Logger) async throws {
        let encoder: VideoEncoder?
        var request = StreamRequest()
        // An idle camera starts in the mode the recording's session asks for.
        request.preset = preset
        switch format {
        case .h264(var settings):
            // x264 takes NV12 as it takes I420: a camera's NV12 goes in as it comes.
            settings.input = await streamer.modeForNewStream(preset: preset).format.pixelFormat == .nv12 ? .nv12 : .i420
            // libavcodec opens libx264 (its lookahead threads, its tables) on a worker, not on the cooperative pool.
            let wanted = settings
            encoder = try await Workers.run { () throws -> sending VideoEncoder in
                do throws(EncodingError) {
                    return try VideoEncoder(wanted)
                } catch {
                    throw CameraError(.invalidArgument, "\(name) cannot encode H.264 at \(wanted.width)x\(wanted.height): \(error.message)")
                }
            }
            parameters = encoder!.parameters
            encoderInput = settings.input
            request.pixelFormat = settings.input == .nv12 ? .nv12 : .i420
            request.width = settings.width
            request.height = settings.height
            request.minFrameDuration = FrameDuration(numerator: 1, denominator: UInt32(settings.frameRate))
        case .mjpeg(let width, let height, _):
            encoder = nil
            encoderInput = nil
            // The camera's own frames: its native stream, every frame.
            parameters = try EncodedStreamParameters(mjpegWidth: width, height: height)
        }
        self.format = format
        let codec = encoder == nil ? "mjpeg" : "h264"
        // A slot holds the largest packet there could be — a raw I420 frame's size for H.264, a YUYV frame's for a
        // camera's JPEG (what V4L2 drivers allow one) — but only what a packet fills is ever touched: the pool may
        // be large (the memory it costs is its packets'), a quarter of it for one client's recorders.
        let largest = format.width * format.height * (encoder == nil ? 2 : 3) / (encoder == nil ? 1 : 2) + 65_536
        let node = try MediaNode(name: "\(name)'s \(encoder == nil ? "MJPEG" : "H.264 encoder")", media: .packets(PacketLayout(codec: codec, maxPacketBytes: largest)),
                                 slots: 8, maxBytes: 512 << 20, connectionShare: 4, budget: budget, logger: logger)
        let work = Work(encoder)
        self.work = work
        derived = try await DerivedNode(node, reading: CameraSource(streamer: streamer, request: request), inFlight: 4,
                                        process: { frame, node in work.take(frame, into: node) },
                                        finish: { node in work.flush(into: node) })
    }

    /// Subscribes a recorder (`sink`) whose file starts `preRollNanoseconds`
    /// before now: the recent packets from the latest keyframe at or before
    /// then go to `earlier` first, and the subscription takes every packet
    /// after them (none missed or repeated). Without recent packets (the
    /// encoder just started), or without a pre-roll, it starts at a keyframe
    /// asked for now. Returns the subscription, and the pre-roll's first
    /// packet's time (nil: none).
    func subscribe(_ sink: any FrameSink, maxInFlight: Int, for owner: ClientBudget.Owner, preRollNanoseconds: Int64,
                   earlier: @escaping @Sendable ([PacketHistory.Held]) -> Void) async throws(CameraError) -> (UInt64, preRollFrom: Int64?) {
        let fresh = SubscriptionPolicy(maxInFlight: maxInFlight, startsAtKeyframe: true)
        if preRollNanoseconds > 0 {
            let (work, since) = (self.work, monotonicNanoseconds() - preRollNanoseconds)
            if let (subscribed, first) = await derived.subscribe(sink, policy: fresh, for: owner, continuing: { work.history(since: since) },
                                                               earlier: earlier) {
                return (try subscribed.get(), first.presentationTimeNanoseconds)
            }
        }
        let id = try node.subscribe(sink, policy: fresh, for: owner)
        requestKeyframe()
        return (id, nil)
    }

    /// The camera's frames given to the encoder so far.
    var framesEncoded: Int { work.framesIn.load(ordering: .relaxed) }

    /// The next frame becomes a keyframe: a recorder joined.
    func requestKeyframe() {
        work.keyframeWanted.store(true, ordering: .relaxed)
    }

    /// Stops reading the camera: the frames it was given are encoded, the
    /// encoder flushed — every packet reaches the node's recorders, which then end.
    func stop() { derived.stop() }

    /// Runs `job` on the encoder's worker between two frames (tests hold it there: a starved encoder).
    func runOnWorker(_ job: @escaping @Sendable () -> Void) -> Bool { derived.run(job) }
}
