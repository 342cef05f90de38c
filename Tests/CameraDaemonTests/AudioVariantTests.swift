@testable import CameraDaemon
import CameraMedia
import CameraTestSupport
import Logging
import Testing

/// A microphone heard at another rate, channel count and format: the
/// variant's periods are numbered by position on the microphone's clock, every
/// one given or reported, and the stamp decodes where its blocks belong —
/// before and after a gap in the microphone's periods.
@Suite struct AudioVariantTests {
    let budget = ClientBudget()
    let logger = Logger(label: "test")
    static let microphone = AudioLayout(sampleRate: 48_000, channels: 2, sampleFormat: .s16, framesPerPeriod: 480)

    /// The samples of `periods` that follow each other from the first, as floats, and their first frame's position.
    static func firstRun(_ periods: [GraphSink.Received], _ layout: AudioLayout) -> (position: Int, samples: [Float]) {
        guard let first = periods.first else { return (0, []) }
        let run = periods.enumerated().prefix { $0.element.sequence == first.sequence + UInt64($0.offset) }.map(\.element)
        // The layouts here are mono: every sample is the first channel's.
        let samples = run.flatMap { period in period.bytes.withUnsafeBytes { layout.sampleFormat.floats(in: $0) } }
        return (Int(first.sequence) * layout.framesPerPeriod, samples)
    }

    /// Each block's position on the variant's clock is its number's, scaled, within two samples (libswresample's output is aligned with its input).
    static func checkBlocks(_ blocks: [AudioStamp.Block], from position: Int, rate: Int) {
        for block in blocks {
            let expected = Double(block.number) * 960 * Double(rate) / 48_000
            let found = Double(position + block.offset)
            #expect(abs(found - expected) <= 2, "\(block) at \(position): expected \(expected)")
        }
    }

    @Test func aLiveMicrophoneHeardAt44_1kHzMonoFloat() async throws {
        let microphone = try VirtualMicrophoneCapture(name: "the virtual microphone", layout: Self.microphone, budget: budget, logger: logger)
        let layout = AudioLayout(sampleRate: 44_100, channels: 1, sampleFormat: .f32, framesPerPeriod: 441)
        let variant = try AudioVariant(of: microphone.node, layout: Self.microphone, as: layout, budget: budget, logger: logger)
        let listener = try GraphSink.listening(to: variant.node)
        #expect(await waitUntil(timeout: .seconds(120)) { listener.frames.count >= 100 })
        microphone.stop()
        #expect(await waitUntil { listener.hasEnded }, "the microphone's end ends its variant's listeners")

        let periods = listener.frames
        let first = try #require(periods.first)
        try listener.checkAccounting(from: first.sequence, through: listener.accountedThrough)
        #expect(periods.allSatisfy { $0.bytes.count == 441 * 4 })
        for (previous, next) in zip(periods, periods.dropFirst()) {
            #expect(next.timestampNanoseconds - previous.timestampNanoseconds == Int64(next.sequence - previous.sequence) * 10_000_000)
        }
        let (position, samples) = Self.firstRun(periods, layout)
        let blocks = AudioStamp.decode(samples, sampleRate: 44_100)
        #expect(blocks.count >= samples.count / 882 - 2, "\(blocks.count) blocks in \(samples.count) samples")
        #expect(zip(blocks, blocks.dropFirst()).allSatisfy { $1.number == $0.number + 1 })
        Self.checkBlocks(blocks, from: position, rate: 44_100)
    }

    @Test func aGapInTheMicrophonesPeriodsIsReportedAndTheClockKept() async throws {
        let source = try MediaNode(name: "a microphone", media: .audio(Self.microphone), slots: 16, budget: budget, logger: logger)
        let layout = AudioLayout(sampleRate: 16_000, channels: 1, sampleFormat: .s16, framesPerPeriod: 160)
        let variant = try AudioVariant(of: source, layout: Self.microphone, as: layout, budget: budget, logger: logger)
        let listener = try GraphSink.listening(to: variant.node, inFlight: 4)
        // Periods 0 to 39, then 50 to 89: the microphone lost ten. Each is
        // offered until the variant's input takes it (its in-flight limit), as a
        // device paces them; what the input refuses never reaches the variant.
        for sequence in Array(0..<40) + Array(50..<90) as [UInt64] {
            _ = await waitUntil { source.publish(sequence: sequence, timestampNanoseconds: Int64(sequence) * 10_000_000,
                                                 durationNanoseconds: 10_000_000) { slot in
                VirtualMicrophoneCapture.render(Self.microphone, from: sequence * 480, into: slot)
            } }
        }
        #expect(await waitUntil { listener.accountedThrough >= 85 })
        source.end()
        #expect(await waitUntil { listener.hasEnded })

        try listener.checkAccounting(from: 0, through: listener.accountedThrough)
        #expect(listener.dropCount(.discontinuity) >= 10, "the ten lost periods at least (and what the resampler held)")
        let periods = listener.frames
        let before = periods.filter { $0.sequence < 40 }
        let after = periods.filter { $0.sequence >= 50 }
        #expect(after.first?.sequence == 50, "output starts again where the microphone's period 50 falls")
        for part in [before, after] {
            let (position, samples) = Self.firstRun(part, layout)
            let blocks = AudioStamp.decode(samples, sampleRate: 16_000)
            #expect(blocks.count >= samples.count / 320 - 2, "\(blocks.count) blocks in \(samples.count) samples")
            Self.checkBlocks(blocks, from: position, rate: 16_000)
        }
    }

    /// A microphone whose clock runs off CLOCK_MONOTONIC, as a sound card's
    /// crystal does: a recording's variant (`onTheClock`) stays on the monotonic clock — every
    /// stamp block lies, by the variant's timestamps, within a period of its
    /// capture time — over 90 s at ±4000 ppm, the 360 ms an hour at 100 ppm
    /// would be off uncorrected (simulated faster than real time: the periods
    /// are published as fast as the variant takes them, stamped as the
    /// drifting clock captured them), across a gap. A listener's variant of the same layout
    /// keeps the microphone's clock: every block exactly where its number puts it.
    @Test(arguments: [4_000, -4_000])
    func aDriftingMicrophoneIsResampledOntoTheClock(ppm: Int) async throws {
        let source = try MediaNode(name: "a drifting microphone", media: .audio(Self.microphone), slots: 16, budget: budget, logger: logger)
        let layout = AudioLayout(sampleRate: 48_000, channels: 1, sampleFormat: .f32, framesPerPeriod: 480)
        let variant = try AudioVariant(of: source, layout: Self.microphone, as: layout, onTheClock: true, budget: budget, logger: logger)
        let listener = try GraphSink.listening(to: variant.node, inFlight: 16)
        let plain = try AudioVariant(of: source, layout: Self.microphone, as: layout, budget: budget, logger: logger)
        let plainListener = try GraphSink.listening(to: plain.node, inFlight: 16)
        let start: Int64 = 5_000_000_000
        func captured(_ position: UInt64) -> Int64 { SyncMarks.captureTime(of: position, start: start, rate: 48_000, driftPPM: ppm) }
        let periods: UInt64 = 9_000
        // Ten periods the microphone lost (an overrun): the variant starts again where the clock puts the next.
        for sequence in 0..<periods where !(3_000..<3_010).contains(sequence) {
            _ = await waitUntil(every: .microseconds(100)) {
                source.publish(sequence: sequence, timestampNanoseconds: captured(sequence * 480), durationNanoseconds: 10_000_000) { slot in
                    VirtualMicrophoneCapture.render(Self.microphone, from: sequence * 480, into: slot)
                }
            }
        }
        // The variant makes fewer periods than it was given when the microphone runs fast, more when slow.
        #expect(await waitUntil(timeout: .seconds(120)) { listener.accountedThrough >= periods * 98 / 100 })
        source.end()
        #expect(await waitUntil { listener.hasEnded && plainListener.hasEnded })
        try listener.checkAccounting(from: 0, through: listener.accountedThrough)
        // The listener's variant, every unbroken run of it (a listener fed this fast misses some): blocks where their numbers put them.
        var rest = plainListener.frames[...]
        var onItsClock = 0
        while !rest.isEmpty {
            let (position, samples) = Self.firstRun(Array(rest), layout)
            let blocks = AudioStamp.decode(samples, sampleRate: 48_000)
            Self.checkBlocks(blocks, from: position, rate: 48_000)
            onItsClock += blocks.count
            rest = rest.dropFirst(samples.count / layout.framesPerPeriod)
        }
        #expect(onItsClock >= 2_000, "\(onItsClock) blocks on the microphone's clock")

        // Each unbroken run decoded as it came; a block's time is where the variant's timestamps put its offset.
        var worst = 0.0, uncorrected = 0.0, blocks = 0
        var run: (first: GraphSink.Received, next: UInt64, decoder: AudioStamp.Decoder)?
        func check(_ found: [AudioStamp.Block], from first: GraphSink.Received) {
            for block in found {
                let time = Double(first.timestampNanoseconds) + Double(block.offset) * 1e9 / 48_000
                let position = UInt64(block.number) * UInt64(AudioStamp.blockFrames)
                worst = max(worst, abs(time - Double(captured(position))))
                uncorrected = max(uncorrected, abs(Double(start) + Double(position) * 1e9 / 48_000 - Double(captured(position))))
                blocks += 1
            }
        }
        for period in listener.frames {
            if run?.next != period.sequence {
                if var ended = run { check(ended.decoder.finish(), from: ended.first) }
                run = (period, period.sequence, AudioStamp.Decoder(sampleRate: 48_000))
            }
            let samples = period.bytes.withUnsafeBytes { layout.sampleFormat.floats(in: $0) }
            run!.next += 1
            check(run!.decoder.add(samples), from: run!.first)
        }
        if var ended = run { check(ended.decoder.finish(), from: ended.first) }
        print("\(ppm) ppm: \(blocks) blocks, at most \(String(format: "%.3f", worst / 1e6)) ms from their capture times "
              + "(\(String(format: "%.0f", uncorrected / 1e6)) ms at the nominal rate)")
        #expect(blocks >= 4_400, "the 90 s decode: \(blocks) blocks")
        #expect(uncorrected > 300e6, "the microphone's clock is off: \(uncorrected / 1e6) ms by the end")
        #expect(worst <= 10e6, "every block within a period (10 ms) of its capture time: \(worst / 1e6) ms")
    }

    @Test func stoppingAVariantEndsItsListenersAndNobodyElses() async throws {
        let microphone = try VirtualMicrophoneCapture(name: "the virtual microphone", layout: Self.microphone, budget: budget, logger: logger)
        defer { microphone.stop() }
        let direct = try GraphSink.listening(to: microphone.node)
        let layout = AudioLayout(sampleRate: 16_000, channels: 1, sampleFormat: .s16, framesPerPeriod: 160)
        let variant = try AudioVariant(of: microphone.node, layout: Self.microphone, as: layout, budget: budget, logger: logger)
        let listener = try GraphSink.listening(to: variant.node)
        #expect(await waitUntil(timeout: .seconds(120)) { listener.frames.count >= 5 })
        variant.stop()
        #expect(await waitUntil { listener.hasEnded })
        let heard = direct.frames.count
        #expect(await waitUntil(timeout: .seconds(120)) { direct.frames.count >= heard + 5 }, "the microphone goes on")
        #expect(!direct.hasEnded)
        try listener.checkAccounting(from: listener.frames.first?.sequence ?? 0, through: listener.accountedThrough)
    }
}
