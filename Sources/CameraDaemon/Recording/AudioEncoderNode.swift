import CameraEncoding
import CameraIPC
import CameraMedia
import Logging

/// A microphone's AAC encoder (issue 35): a derived node listening to the
/// microphone in 32-bit float at the recording's rate and channels (its own
/// variant, made once for every listener of that layout), shared by every
/// recorder asking the same ``AudioEncoder/Settings``. Every packet is a
/// random-access point, so a recorder starts at any; packets are numbered in
/// turn, their timestamps on the microphone's clock (periods lost on the way —
/// an overrun, this worker behind — become silence in the encoder, so the sound
/// after a gap keeps its time).
final class AudioEncoderNode: Sendable {
    let settings: AudioEncoder.Settings
    let parameters: EncodedStreamParameters
    /// The node attached to the microphone's layout it reads.
    private let derived: DerivedNode
    var node: MediaNode { derived.node }

    private let work: Work

    /// The encoder and its packets' count, on the worker.
    private final class Work: Sendable {
        private struct State {
            /// Used only under this lock (given to it: `sending`).
            let encoder: AudioEncoder
            var packets: UInt64 = 0
        }
        private let state: OrderedMutex<State>
        /// Its packets, kept for pre-rolls and published.
        private let published = PublishedPackets()

        init(_ encoder: sending AudioEncoder) {
            state = OrderedMutex(.encoderWork, State(encoder: encoder))
        }

        func take(_ period: PooledFrame, into node: MediaNode) {
            let packets = state.withLock { state -> [(UInt64, EncodedPacket)] in
                do {
                    let packets = try period.bytes.withMemoryRebound(to: Float.self) { floats in
                        try state.encoder.encode(interleaved: floats, timestampNanoseconds: period.timestampNanoseconds)
                    }
                    defer { state.packets += UInt64(packets.count) }
                    return packets.enumerated().map { (state.packets + UInt64($0.offset), $0.element) }
                } catch {
                    node.logger.error("\(node.name): period \(period.sequence): \(error)")
                    return []
                }
            }
            published.publish(packets, into: node)
        }

        /// The last period's samples and the frames AAC still held, published
        /// once the microphone's stream ended.
        func flush(into node: MediaNode) {
            let packets = state.withLock { state -> [(UInt64, EncodedPacket)] in
                do {
                    let packets = try state.encoder.flush()
                    defer { state.packets += UInt64(packets.count) }
                    return packets.enumerated().map { (state.packets + UInt64($0.offset), $0.element) }
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

    /// Starts encoding `microphone` at `settings` (its listener charged to camerad).
    ///
    /// - Throws: INVALID_ARGUMENT for settings AAC cannot take; what listening throws.
    init(on microphone: MicrophoneStreamer, settings: AudioEncoder.Settings, budget: ClientBudget, logger: Logger) async throws {
        let name = microphone.microphone.uniqueID
        // Opened on a worker, not on the cooperative pool.
        let encoder = try await Workers.run { () throws -> sending AudioEncoder in
            do throws(EncodingError) {
                return try AudioEncoder(settings)
            } catch {
                throw CameraError(.invalidArgument, "\(name) cannot be encoded as AAC: \(error.message)")
            }
        }
        self.settings = settings
        parameters = encoder.parameters
        // AAC's largest frame: 6144 bits per channel.
        let node = try MediaNode(name: "\(microphone.microphone.uniqueID)'s AAC encoder",
                                 media: .packets(PacketLayout(codec: "aac", maxPacketBytes: 768 * settings.channels + 64)),
                                 slots: 16, maxBytes: 256 << 20, connectionShare: 4, budget: budget, logger: logger)
        let work = Work(encoder)
        self.work = work
        let layout = AudioLayout(sampleRate: settings.sampleRate, channels: settings.channels, sampleFormat: .f32,
                                 framesPerPeriod: settings.sampleRate / 100)
        // On the picture's clock whatever the microphone's runs at: the file counts samples, not times.
        derived = try await DerivedNode(node, reading: MicrophoneSource(microphone: microphone, layout: layout, onTheClock: true),
                                        inFlight: 16, passesDropsOn: false, priority: .sound,
                                        process: { period, node in work.take(period, into: node) },
                                        finish: { node in work.flush(into: node) })
    }

    /// Subscribes a recorder's sound (`sink`), its recent packets from the one
    /// at or before `preRollFrom` (the picture's pre-roll) given to `earlier`
    /// first, when it has them; the subscription takes every packet after.
    func subscribe(_ sink: any FrameSink, maxInFlight: Int, for owner: ClientBudget.Owner, preRollFrom: Int64?,
                   earlier: @escaping @Sendable ([PacketHistory.Held]) -> Void) async throws(CameraError) -> UInt64 {
        let policy = SubscriptionPolicy(maxInFlight: maxInFlight)
        if let preRollFrom {
            let work = self.work
            if let (subscribed, _) = await derived.subscribe(sink, policy: policy, for: owner, continuing: { work.history(since: preRollFrom) },
                                                           earlier: earlier) {
                return try subscribed.get()
            }
        }
        return try node.subscribe(sink, policy: policy, for: owner)
    }

    /// Stops listening: the periods it was given are encoded, the encoder
    /// flushed — every packet reaches the node's recorders, which then end.
    func stop() { derived.stop() }
}
