import CameraEncoding
import CameraIPC
import CameraProtocol

/// An encoder's recent packets, for a recording that starts earlier than it
/// joins (its pre-roll): enough that any pre-roll up to ``span`` can start at
/// a keyframe at or before it — the packets from the latest keyframe at least
/// ``span`` old on, within ``maxBytes`` (past that, the oldest keyframes'
/// runs go first).
struct PacketHistory: Sendable {
    /// The longest pre-roll a recording may ask for (StartRecording.pre_roll_ns's range).
    static let span: Int64 = maxPreRollNanoseconds
    /// What it may hold (a 4K picture at a high bit rate keeps less than ``span``).
    static let maxBytes = 64 << 20

    /// A packet and its frame's number.
    struct Held: Sendable, Equatable {
        let sequence: UInt64
        let packet: EncodedPacket
    }

    private(set) var packets: [Held] = []
    private var bytes = 0
    let span: Int64
    let maxBytes: Int

    init(span: Int64 = Self.span, maxBytes: Int = Self.maxBytes) {
        self.span = span
        self.maxBytes = maxBytes
    }

    /// Keeps `packet`, and lets go of what no pre-roll can need any more.
    mutating func add(_ packet: EncodedPacket, sequence: UInt64) {
        packets.append(Held(sequence: sequence, packet: packet))
        bytes += packet.bytes.count
        let oldest = packet.presentationTimeNanoseconds - span
        // The latest keyframe at least `span` old: what lies before it is never a pre-roll's.
        if let keep = packets.lastIndex(where: { $0.packet.isKeyframe && $0.packet.presentationTimeNanoseconds <= oldest }), keep > 0 {
            drop(keep)
        }
        while bytes > maxBytes, let next = packets.dropFirst().firstIndex(where: \.packet.isKeyframe) {
            drop(next)
        }
        // Over the limit with a single keyframe's run: nothing to start a pre-roll at but the newest.
        if bytes > maxBytes { drop(packets.count) }
    }

    private mutating func drop(_ count: Int) {
        bytes -= packets[..<count].reduce(0) { $0 + $1.packet.bytes.count }
        packets.removeFirst(count)
    }

    /// The packets from the latest keyframe at or before `time` on — among
    /// those captured at `notBefore` or later (no pre-roll goes back more than
    /// its span from now, even when an encoder behind made its keyframes
    /// sparse); from the first such keyframe when none is as old as `time`;
    /// empty when it holds none.
    func since(_ time: Int64, notBefore: Int64 = .min) -> [Held] {
        func startsHere(_ held: Held) -> Bool { held.packet.isKeyframe && held.packet.presentationTimeNanoseconds >= notBefore }
        guard let first = packets.firstIndex(where: startsHere) else { return [] }
        let start = packets.lastIndex { startsHere($0) && $0.packet.presentationTimeNanoseconds <= time } ?? first
        return Array(packets[start...])
    }

    /// What a recording's pre-roll from `time` starts with: ``since(_:notBefore:)``
    /// no further back than the span from now.
    func preRoll(from time: Int64) -> [Held] {
        since(time, notBefore: monotonicNanoseconds() - span)
    }
}

/// An encoder node's packets on their way out, on its worker: each kept in
/// its ``PacketHistory`` (for recordings that start earlier than they join),
/// then published into the node — the same for the picture's encoder and
/// the sound's.
final class PublishedPackets: Sendable {
    private let history = OrderedMutex(.encoderWork, PacketHistory())

    /// Keeps and publishes `packets`, in order, each numbered by its frame (or period).
    func publish(_ packets: [(UInt64, EncodedPacket)], into node: MediaNode) {
        for (sequence, packet) in packets {
            history.withLock { $0.add(packet, sequence: sequence) }
            node.publish(packet, sequence: sequence)
        }
    }

    /// The recent packets for a pre-roll from `time` (``PacketHistory/preRoll(from:)``).
    func preRoll(from time: Int64) -> [PacketHistory.Held] {
        history.withLock { $0.preRoll(from: time) }
    }
}

extension MediaNode {
    /// Publishes an encoder's packet, numbered `sequence`, into a slot of its own.
    @discardableResult
    func publish(_ packet: EncodedPacket, sequence: UInt64) -> Bool {
        publish(sequence: sequence, timestampNanoseconds: packet.presentationTimeNanoseconds, durationNanoseconds: packet.durationNanoseconds,
                packet: PacketInfo(isKeyframe: packet.isKeyframe, decodeTimestampNanoseconds: packet.decodeTimeNanoseconds)) { slot in
            guard packet.bytes.count <= slot.count else {
                throw CameraError(.internalError, "a packet of \(packet.bytes.count) bytes outgrew its slot of \(slot.count)")
            }
            packet.bytes.withUnsafeBytes { slot.copyMemory(from: $0) }
            return packet.bytes.count
        }
    }
}

extension DerivedNode {
    /// Subscribes `sink` to the node continuing `recent()`'s packets:
    /// on the worker, between two buffers, those packets go to `earlier`
    /// and the subscription takes every packet published after them — none
    /// missed or repeated. nil when there are none, or the input has ended:
    /// the caller subscribes as it otherwise would.
    func subscribe(_ sink: any FrameSink, policy: SubscriptionPolicy, for owner: ClientBudget.Owner,
                   continuing recent: @escaping @Sendable () -> [PacketHistory.Held],
                   earlier: @escaping @Sendable ([PacketHistory.Held]) -> Void) async -> (Result<UInt64, CameraError>, first: EncodedPacket)? {
        typealias Subscribed = CheckedContinuation<(Result<UInt64, CameraError>, first: EncodedPacket)?, Never>
        let node = self.node
        return await withCheckedContinuation { (continuation: Subscribed) in
            let queued = run {
                let held = recent()
                guard let first = held.first else { return continuation.wake(returning: nil) }
                var policy = policy
                policy.continuesEarlierPackets = true
                let subscribed = Result(catching: { () throws(CameraError) -> UInt64 in try node.subscribe(sink, policy: policy, for: owner) })
                // After the subscription (a refused one is given nothing), before any packet can reach it: this
                // thread publishes them.
                if case .success = subscribed { earlier(held) }
                continuation.wake(returning: (subscribed, first.packet))
            }
            if !queued { continuation.wake(returning: nil) }
        }
    }
}
