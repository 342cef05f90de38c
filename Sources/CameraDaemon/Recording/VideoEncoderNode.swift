import CameraEncoding
import CameraIPC
import CameraMedia
import Logging
import Synchronization

/// A camera's H.264 encoder (issue 35): a derived node on the camera's I420
/// variant of the recording's size, shared by every recorder asking the same
/// ``VideoEncoder/Settings`` — one encoding whatever the number of files —
/// whose packets fan out to them as any node's buffers do. Recorders
/// subscribe with `startsAtKeyframe`; one that joins asks for a keyframe at
/// once (``requestKeyframe()``) instead of waiting for the next scheduled one.
///
/// A packet's sequence is its frame's: upstream drops (frames its worker was
/// too late for) reach its recorders in the same numbers, so a file's
/// accounting covers the camera's frames.
final class VideoEncoderNode: Sendable {
    let settings: VideoEncoder.Settings
    let node: MediaNode
    /// What a muxer needs of its stream.
    let parameters: EncodedStreamParameters
    private let work: Work
    private let input: NodeInput
    private let streamer: DeviceStreamer
    private let streamID: UInt64

    /// The encoder and what it needs between frames, on the worker.
    private final class Work: Sendable {
        private struct State {
            /// Unchecked Sendable: used only under this lock.
            struct Encoder: @unchecked Sendable { let encoder: VideoEncoder }
            let encoder: Encoder
            /// Frames in the encoder, by timestamp: a packet's sequence is its frame's.
            var sequences: [Int64: UInt64] = [:]
        }
        private let state: OrderedMutex<State>
        let keyframeWanted = Atomic(false)

        init(_ encoder: VideoEncoder) {
            state = OrderedMutex(.encoderWork, State(encoder: .init(encoder: encoder)))
        }

        func take(_ frame: PooledFrame, into node: MediaNode) {
            let keyframe = keyframeWanted.exchange(false, ordering: .relaxed)
            let packets = state.withLock { state -> [(UInt64, EncodedPacket)] in
                state.sequences[frame.timestampNanoseconds] = frame.sequence
                do {
                    let packets = try state.encoder.encoder.encode(i420: frame.bytes, timestampNanoseconds: frame.timestampNanoseconds,
                                                                   keyframe: keyframe)
                    return packets.map { (state.sequences.removeValue(forKey: $0.presentationTimeNanoseconds) ?? frame.sequence, $0) }
                } catch {
                    node.logger.error("\(node.name): frame \(frame.sequence): \(error)")
                    return []
                }
            }
            for (sequence, packet) in packets {
                node.publish(sequence: sequence, timestampNanoseconds: packet.presentationTimeNanoseconds,
                             durationNanoseconds: packet.durationNanoseconds,
                             packet: PacketInfo(isKeyframe: packet.isKeyframe, decodeTimestampNanoseconds: packet.decodeTimeNanoseconds)) { slot in
                    guard packet.bytes.count <= slot.count else {
                        throw CameraError(.internalError, "a packet of \(packet.bytes.count) bytes outgrew its slot of \(slot.count)")
                    }
                    packet.bytes.withUnsafeBytes { slot.copyMemory(from: $0) }
                    return packet.bytes.count
                }
            }
        }
    }

    /// Starts encoding `streamer`'s camera at `settings`' size and rate
    /// (the stream charged to camerad).
    ///
    /// - Throws: INVALID_ARGUMENT for settings libx264 refuses; what opening the camera's stream throws.
    init(on streamer: DeviceStreamer, name: String, settings: VideoEncoder.Settings, budget: ClientBudget,
         logger: Logger) async throws {
        let encoder: VideoEncoder
        do {
            encoder = try VideoEncoder(settings)
        } catch {
            throw CameraError(.invalidArgument, "\(name) cannot encode H.264 at \(settings.width)x\(settings.height): \(error.message)")
        }
        self.settings = settings
        self.streamer = streamer
        parameters = encoder.parameters
        let frameBytes = settings.width * settings.height * 3 / 2
        // A slot holds the largest packet there could be, a raw frame's size, but only what a packet fills is ever
        // touched: the pool may be large (the memory it costs is its packets'), a quarter of it for one client's recorders.
        let node = try MediaNode(name: "\(name)'s H.264 encoder", media: .packets(PacketLayout(codec: "h264", maxPacketBytes: frameBytes + 65_536)),
                                 slots: 8, maxBytes: 512 << 20, connectionShare: 4, budget: budget, logger: logger)
        self.node = node
        let work = Work(encoder)
        self.work = work
        do {
            input = try NodeInput(to: node) { frame, node in work.take(frame, into: node) }
        } catch {
            node.end()
            throw CameraError(.resourceExhausted, "no worker for \(node.name): \(error)")
        }
        var request = StreamRequest()
        request.pixelFormat = .i420
        request.width = settings.width
        request.height = settings.height
        request.minFrameDuration = FrameDuration(numerator: 1, denominator: UInt32(settings.frameRate))
        request.maxFramesInFlight = 4
        do {
            streamID = try await streamer.open(request, for: .daemon, sink: input)
        } catch {
            input.end(with: nil)
            throw error
        }
    }

    /// The next frame becomes a keyframe: a recorder joined.
    func requestKeyframe() {
        work.keyframeWanted.store(true, ordering: .relaxed)
    }

    /// Stops reading the camera; the node's recorders end after what they were given.
    func stop() {
        streamer.close(streamID)
        input.end(with: nil)
    }
}
