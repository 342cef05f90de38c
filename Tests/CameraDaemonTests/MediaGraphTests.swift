@testable import CameraDaemon
import CameraMedia
import Dispatch
import CameraTestSupport
import Logging
import Synchronization
import Testing

/// Media other than a camera's frames through the same graph: PCM periods
/// from a test source through a resampling node into two sinks, and a
/// camera's frames through an encoding node whose packets fan out to two
/// subscribers — with the subscriptions, limits, drop accounting, frame
/// handles and budget charges a camera's streams have. The source, the
/// resampler and the encoder are stand-ins (ALSA, swresample and libx264 come
/// with the microphone and movie issues); the nodes are camerad's.
@Suite struct MediaGraphTests {
    let budget = ClientBudget()
    let logger = Logger(label: "test")

    static let clientA = ClientBudget.Owner(connection: 1, user: 0)
    static let clientB = ClientBudget.Owner(connection: 2, user: 0)

    // MARK: - PCM periods

    /// 48 kHz stereo S16 periods of 480 frames; frame i of period s holds
    /// v = (s × 480 + i) mod 30000 on the left and v + 2 on the right.
    static let microphone = AudioLayout(sampleRate: 48000, channels: 2, sampleFormat: .s16, framesPerPeriod: 480)
    /// What the resampling stand-in makes: every third frame, the channels averaged (v + 1).
    static let resampled = AudioLayout(sampleRate: 16000, channels: 1, sampleFormat: .s16, framesPerPeriod: 160)

    static func sample(_ sequence: UInt64, _ frame: Int) -> Int16 {
        Int16((Int(sequence) * 480 + frame) % 30000)
    }

    /// A period of the test microphone, written into `slot`.
    static func writePeriod(_ sequence: UInt64, into slot: UnsafeMutableRawBufferPointer) -> Int {
        let samples = slot.bindMemory(to: Int16.self)
        for frame in 0..<microphone.framesPerPeriod {
            samples[2 * frame] = sample(sequence, frame)
            samples[2 * frame + 1] = sample(sequence, frame) + 2
        }
        return microphone.capacity
    }

    /// The resampling stand-in: 48 kHz stereo to 16 kHz mono.
    static func resample(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int {
        let frames = input.count / microphone.bytesPerFrame
        let source = input.bindMemory(to: Int16.self)
        let target = output.bindMemory(to: Int16.self)
        for index in 0..<frames / 3 {
            target[index] = Int16((Int(source[6 * index]) + Int(source[6 * index + 1])) / 2)
        }
        return frames / 3 * resampled.bytesPerFrame
    }

    @Test func pcmPeriodsFlowThroughAResamplerIntoTwoSinksWithVideosAccounting() async throws {
        let source = try MediaNode(name: "the test microphone", media: .audio(Self.microphone), slots: 8,
                                   budget: budget, logger: logger)
        let resampler = try MediaNode(name: "the test resampler", media: .audio(Self.resampled), slots: 8,
                                      budget: budget, logger: logger)
        let input = try NodeInput(to: resampler) { period, node in
            node.publish(sequence: period.sequence, timestampNanoseconds: period.timestampNanoseconds,
                         durationNanoseconds: period.durationNanoseconds) { try Self.resample(period.bytes, into: $0) }
        }
        // The resampler reads the microphone as camerad's own; each client its own subscription.
        _ = try source.subscribe(input, policy: SubscriptionPolicy(maxInFlight: 3), for: .daemon)
        let prompt = GraphSink(releasesAtOnce: true)
        let holding = GraphSink(releasesAtOnce: false)
        _ = try resampler.subscribe(prompt, policy: SubscriptionPolicy(maxInFlight: 2), for: Self.clientA)
        _ = try resampler.subscribe(holding, policy: SubscriptionPolicy(maxInFlight: 1), for: Self.clientB)
        #expect(budget.streamCount(of: .daemon) == 1)
        #expect(budget.streamCount(of: Self.clientA) == 1 && budget.streamCount(of: Self.clientB) == 1)
        // A third that needs more than the pool has gets a larger one (one slot is always left to write);
        // it leaves again at once.
        let smaller = resampler.state.withLock { $0.pool.ownSlots }
        let third = try resampler.subscribe(GraphSink(releasesAtOnce: true), policy: SubscriptionPolicy(maxInFlight: 5), for: Self.clientA)
        #expect(resampler.state.withLock { $0.pool.ownSlots } >= 2 * smaller, "the pool grew for it")
        resampler.unsubscribe(third)

        // Twenty periods paced as a device would (each once the prompt sink
        // heard of it), then thirty at once: the resampler falls behind and
        // its input drops periods, which its sinks hear of too.
        let paced: UInt64 = 20
        let last: UInt64 = 50
        let period = Int64(10_000_000)
        for sequence in 1...last {
            source.publish(sequence: sequence, timestampNanoseconds: Int64(sequence) * period, durationNanoseconds: period) {
                Self.writePeriod(sequence, into: $0)
            }
            if sequence <= paced {
                #expect(await waitUntil { prompt.accountedThrough >= sequence })
            }
        }
        source.end()
        #expect(await waitUntil { prompt.hasEnded && holding.hasEnded })

        // Every period delivered or reported dropped with a reason, in order, none twice.
        try prompt.checkAccounting(from: 1, through: last)
        try holding.checkAccounting(from: 1, through: last)
        // The prompt sink got every paced period, resampled right.
        #expect(Array(prompt.frameSequences.prefix(Int(paced))) == Array(1...paced))
        for frame in prompt.frames {
            let samples = frame.bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
            #expect(samples.count == Self.resampled.framesPerPeriod)
            #expect(samples == (0..<160).map { Self.sample(frame.sequence, 3 * $0) + 1 })
        }
        // The one holding its period got that one; every later one was late for it alone.
        #expect(holding.frameSequences == [1])
        #expect(holding.dropCount(.frameWasLate) == Int(last) - 1)
        #expect(prompt.dropCount(.outOfBuffers) == 0 && holding.dropCount(.outOfBuffers) == 0)

        // Given back after the end: nothing happens; every charge is refunded.
        try holding.releaseAll()
        #expect(budget.streamCount(of: .daemon) == 0)
        #expect(budget.streamCount(of: Self.clientA) == 0 && budget.streamCount(of: Self.clientB) == 0)
    }

    // MARK: - Encoded packets

    /// The encoding stand-in's packets: the frame's sequence (8 bytes), a
    /// keyframe flag, and the sum of the frame's bytes (4 bytes); a keyframe
    /// first and every fourth frame after.
    static func encode(_ frame: PooledFrame, count: Int, into slot: UnsafeMutableRawBufferPointer) -> Int {
        var packet = [UInt8]()
        withUnsafeBytes(of: frame.sequence.littleEndian) { packet += $0 }
        packet.append(count % 4 == 0 ? 1 : 0)
        let sum = frame.bytes.reduce(UInt32(0)) { $0 &+ UInt32($1) }
        withUnsafeBytes(of: sum.littleEndian) { packet += $0 }
        slot.copyBytes(from: packet)
        return packet.count
    }

    /// Packets made so far.
    final class PacketCount: Sendable {
        let value = Mutex(0)
    }

    /// The encoding stand-in's input: each frame a packet (``encode(_:count:into:)``),
    /// a keyframe where `isKeyframe` says of its number; and the packets' count.
    static func encodingInput(to encoder: MediaNode, isKeyframe: @escaping @Sendable (Int) -> Bool) throws -> (NodeInput, PacketCount) {
        let encoded = PacketCount()
        return (try NodeInput(to: encoder) { frame, node in
            let count = encoded.value.withLock { count in
                defer { count += 1 }
                return count
            }
            node.publish(sequence: frame.sequence, timestampNanoseconds: frame.timestampNanoseconds,
                         durationNanoseconds: frame.durationNanoseconds,
                         packet: PacketInfo(isKeyframe: isKeyframe(count), decodeTimestampNanoseconds: frame.timestampNanoseconds)) {
                encode(frame, count: count, into: $0)
            }
        }, encoded)
    }

    /// A node shared by many clients' subscriptions (an encoder's) gives one
    /// connection a share of its buffers: past it that connection is refused,
    /// saying so, and the others still subscribe.
    @Test func oneConnectionHoldsOnlyItsShareOfASharedNode() throws {
        let node = try MediaNode(name: "the test encoder", media: .packets(PacketLayout(codec: "test", maxPacketBytes: 4000)),
                                 slots: 8, maxBytes: 64 * 4096, connectionShare: 4, budget: budget, logger: logger)
        defer { node.end() }
        let policy = SubscriptionPolicy(maxInFlight: 8)
        _ = try node.subscribe(GraphSink(releasesAtOnce: true), policy: policy, for: Self.clientA)
        _ = try node.subscribe(GraphSink(releasesAtOnce: true), policy: policy, for: Self.clientA)
        #expect {
            try node.subscribe(GraphSink(releasesAtOnce: true), policy: policy, for: Self.clientA)
        } throws: { error in
            (error as? CameraError)?.code == .resourceExhausted && "\(error)".contains("hold 16 of the 16 buffers one connection may")
        }
        _ = try node.subscribe(GraphSink(releasesAtOnce: true), policy: policy, for: Self.clientB)
        _ = try node.subscribe(GraphSink(releasesAtOnce: true), policy: policy, for: .daemon)
    }

    @Test func encodedPacketsFanOutAndALateSubscriberStartsAtTheNextKeyframe() async throws {
        let camera = FakeCamera()
        let streamer = DeviceStreamer(device: camera, timers: .testTimers, budget: budget, logger: logger)
        let encoder = try MediaNode(name: "the test encoder", media: .packets(PacketLayout(codec: "test", maxPacketBytes: 64)),
                                    slots: 8, budget: budget, logger: logger)
        let (input, _) = try Self.encodingInput(to: encoder) { $0 % 4 == 0 }
        // The encoder is a sink on the camera like a client's stream, charged to camerad.
        let inputID = try await streamer.open(StreamRequest(), for: .daemon, sink: input)
        let early = GraphSink(releasesAtOnce: true)
        let late = GraphSink(releasesAtOnce: false)
        let packets = SubscriptionPolicy(maxInFlight: 1, startsAtKeyframe: true)
        _ = try encoder.subscribe(early, policy: SubscriptionPolicy(maxInFlight: 2, startsAtKeyframe: true), for: Self.clientA)

        func emit(_ sequences: ClosedRange<UInt64>) async {
            for sequence in sequences {
                camera.emit(sequence)
                #expect(await waitUntil { early.accountedThrough >= sequence })
            }
        }
        await emit(1...6)
        // Joins after the sixth frame: its first packet is the next keyframe, the ninth.
        _ = try encoder.subscribe(late, policy: packets, for: Self.clientB)
        await emit(7...10)
        // It holds the ninth, its one in flight: the tenth is late for it, and
        // what follows cannot be decoded until the next keyframe (the thirteenth).
        #expect(await waitUntil { late.accountedThrough >= 10 })
        try late.releaseAll()
        late.releasesFromNowOn()
        await emit(11...20)
        #expect(await waitUntil { late.accountedThrough >= 20 })
        // The encoder's input closed by its owner: the encoder ends after what it was given.
        streamer.close(inputID)
        input.end(with: nil)
        #expect(await waitUntil { early.hasEnded && late.hasEnded })

        try early.checkAccounting(from: 1, through: 20)
        try late.checkAccounting(from: 9, through: 20)
        #expect(early.frameSequences == Array(1...20))
        #expect(early.frames.first?.packet?.isKeyframe == true)
        #expect(early.frames.filter { $0.packet?.isKeyframe == true }.map(\.sequence) == [1, 5, 9, 13, 17])
        #expect(late.frames.first?.sequence == 9 && late.frames.first?.packet?.isKeyframe == true)
        #expect(late.log == ["started", "frame 9", "dropped frameWasLate 1 up to 10", "dropped discontinuity 2 up to 12",
                             "frame 13", "frame 14", "frame 15", "frame 16", "frame 17", "frame 18", "frame 19", "frame 20", "ended"])
        // Each packet is its frame's: its number and the sum of the camera's bytes.
        let frameBytes = camera.activeMode.layout.capacity
        for packet in early.frames + late.frames {
            #expect(packet.bytes.count == 13)
            #expect(packet.bytes.prefix(8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } == packet.sequence)
            #expect(packet.bytes[8] == (packet.packet!.isKeyframe ? 1 : 0))
            let sum = packet.bytes.suffix(4).withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            #expect(sum == UInt32(truncatingIfNeeded: frameBytes * Int(UInt8(truncatingIfNeeded: packet.sequence))))
            #expect(packet.packet?.decodeTimestampNanoseconds == Int64(packet.sequence) * 33_333_333)
        }
        #expect(await waitUntil { budget.streamCount(of: .daemon) == 0 })
        #expect(budget.streamCount(of: Self.clientA) == 0 && budget.streamCount(of: Self.clientB) == 0)
    }

    /// Frames an encoder never got (its worker held, as a starved encoder's
    /// is) break nothing in what it made: its recorders hear of them as gaps in
    /// the camera's frames and take every packet after them — none waits for
    /// the next keyframe, as one that lost a packet itself must.
    @Test(.timeLimit(.minutes(4))) func framesAnEncoderNeverGotAreGapsNotAWaitForTheNextKeyframe() async throws {
        let camera = FakeCamera()
        let streamer = DeviceStreamer(device: camera, timers: .testTimers, budget: budget, logger: logger)
        let encoder = try MediaNode(name: "the test encoder", media: .packets(PacketLayout(codec: "test", maxPacketBytes: 64)),
                                    slots: 8, budget: budget, logger: logger)
        // One keyframe, the first: a wait for the next would take every packet after it.
        let (input, encoded) = try Self.encodingInput(to: encoder) { $0 == 0 }
        var request = StreamRequest()
        request.maxFramesInFlight = 2
        let inputID = try await streamer.open(request, for: .daemon, sink: input)
        let recorder = GraphSink(releasesAtOnce: true)
        _ = try encoder.subscribe(recorder, policy: SubscriptionPolicy(maxInFlight: 8, startsAtKeyframe: true), for: Self.clientA)
        func emit(_ sequences: ClosedRange<UInt64>) async {
            for sequence in sequences {
                camera.emit(sequence)
                #expect(await waitUntil { recorder.accountedThrough >= sequence })
            }
        }
        await emit(1...3)
        // The encoder's worker held: the camera's frames past its two in flight are dropped for it.
        let hold = DispatchSemaphore(value: 0)
        #expect(input.run { hold.wait() })
        for sequence: UInt64 in 4...12 { camera.emit(sequence) }
        hold.signal()
        // Once the two it held are encoded, the next frames are its again.
        let caughtUp = Mutex(false)
        #expect(input.run { caughtUp.withLock { $0 = true } })
        #expect(await waitUntil { caughtUp.withLock { $0 } })
        await emit(13...16)
        streamer.close(inputID)
        input.end(with: nil)
        #expect(await waitUntil { recorder.hasEnded })

        try recorder.checkAccounting(from: 1, through: 16)
        #expect(recorder.dropCount(.frameWasLate) > 0, "the held encoder missed frames: \(recorder.log)")
        #expect(recorder.dropCount(.discontinuity) == 0, "\(recorder.log)")
        #expect(recorder.frames.count == encoded.value.withLock { $0 }, "every packet the encoder made: \(recorder.log)")
        #expect(recorder.frameSequences.last == 16)
        #expect(await waitUntil { budget.streamCount(of: .daemon) == 0 })
    }
}

/// A sink on a media node: records what it is told as short lines, keeps a
/// copy of each buffer, and gives each back at once or when told.
final class GraphSink: FrameSink, Sendable {
    struct Received {
        let sequence: UInt64
        let timestampNanoseconds: Int64
        let bytes: [UInt8]
        let packet: PacketInfo?
    }

    private struct State {
        var log: [String] = []
        var frames: [Received] = []
        var drops: [DropTally.Report] = []
        var held: [FrameHandle] = []
        var releasesAtOnce: Bool
        /// The last sequence number it was given or told was dropped.
        var accountedThrough: UInt64 = 0
        var hasEnded = false
    }

    private let state: Mutex<State>

    init(releasesAtOnce: Bool) {
        state = Mutex(State(releasesAtOnce: releasesAtOnce))
    }

    /// A sink that gives each buffer back at once, subscribed to `node` as camerad's own.
    static func listening(to node: MediaNode, inFlight: Int = 2) throws -> GraphSink {
        let sink = GraphSink(releasesAtOnce: true)
        _ = try node.subscribe(sink, policy: SubscriptionPolicy(maxInFlight: inFlight), for: .daemon)
        return sink
    }

    var log: [String] { state.withLock { $0.log } }
    var frames: [Received] { state.withLock { $0.frames } }
    var frameSequences: [UInt64] { frames.map(\.sequence) }
    var accountedThrough: UInt64 { state.withLock { $0.accountedThrough } }
    var hasEnded: Bool { state.withLock { $0.hasEnded } }

    func dropCount(_ reason: DropReason) -> Int {
        state.withLock { $0.drops.filter { $0.reason == reason }.reduce(0) { $0 + $1.count } }
    }

    func releasesFromNowOn() { state.withLock { $0.releasesAtOnce = true } }

    /// Gives back every buffer it holds.
    func releaseAll() throws {
        let held = state.withLock { state in
            defer { state.held = [] }
            return state.held
        }
        for handle in held { try handle.release() }
    }

    func started(_ news: StreamNews) { state.withLock { $0.log.append("started") } }

    func frame(_ handle: FrameHandle) -> Bool {
        let frame = handle.frame
        let releaseNow = state.withLock { state in
            state.log.append("frame \(frame.sequence)")
            state.frames.append(Received(sequence: frame.sequence, timestampNanoseconds: frame.timestampNanoseconds,
                                         bytes: Array(frame.bytes), packet: frame.packet))
            state.accountedThrough = max(state.accountedThrough, frame.sequence)
            if !state.releasesAtOnce { state.held.append(handle) }
            return state.releasesAtOnce
        }
        if releaseNow {
            do {
                try handle.release()
            } catch {
                state.withLock { $0.log.append("release failed: \(error)") }
            }
        }
        return true
    }

    func dropped(_ drops: DropTally) {
        state.withLock { state in
            for report in drops.reports {
                state.log.append("dropped \(report.reason) \(report.count) up to \(report.lastSequence)")
                state.drops.append(report)
                state.accountedThrough = max(state.accountedThrough, report.lastSequence)
            }
        }
    }

    func formatChanged(_ news: StreamNews) { state.withLock { $0.log.append("format changed") } }
    func interrupted(_ reason: StreamInterruption, _ error: CameraError) { state.withLock { $0.log.append("interrupted") } }

    func end(with error: CameraError?) {
        state.withLock { state in
            state.log.append("ended")
            state.hasEnded = true
        }
    }

    struct AccountingError: Error, CustomStringConvertible {
        let description: String
    }

    /// Checks that every buffer numbered `first ... last` was given to it or
    /// reported dropped, in order, none twice: between two buffers, the drops
    /// reported add up to the gap in their numbers, and so do those after the last.
    func checkAccounting(from first: UInt64, through last: UInt64) throws {
        let log = log
        var expected = first
        var dropped: UInt64 = 0
        for line in log {
            let words = line.split(separator: " ")
            switch words.first {
            case "frame":
                let sequence = UInt64(words[1])!
                guard sequence >= expected, sequence - expected == dropped else {
                    throw AccountingError(description: "frame \(sequence) after \(dropped) dropped, expecting \(expected) on: \(log)")
                }
                expected = sequence + 1
                dropped = 0
            case "dropped":
                dropped += UInt64(words[2])!
                // Each reason's report names the last of its drops.
                guard (expected..<expected + dropped).contains(UInt64(words[5])!) else {
                    throw AccountingError(description: "\(line) does not follow \(expected - 1) on: \(log)")
                }
            default:
                continue
            }
        }
        guard expected + dropped == last + 1 else {
            throw AccountingError(description: "accounted through \(expected + dropped - 1), not \(last), on: \(log)")
        }
    }
}
