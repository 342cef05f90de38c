@testable import CameraDaemon
import CameraMedia
import CameraTestSupport
import Logging
import Testing

/// A virtual microphone's periods through its node: every one given or
/// reported dropped, in order, each the stamp's samples for its place, its
/// timestamp the capture time of its first sample.
@Suite struct VirtualMicrophoneTests {
    let budget = ClientBudget()
    let logger = Logger(label: "test")
    static let stereo = AudioLayout(sampleRate: 48_000, channels: 2, sampleFormat: .s16, framesPerPeriod: 480)

    @Test func everyPeriodIsTheStampsSamplesForItsPlaceAndAHoldingListenerHarmsNobody() async throws {
        let microphone = try VirtualMicrophoneCapture(name: "the virtual microphone", layout: Self.stereo, budget: budget, logger: logger)
        let prompt = GraphSink(releasesAtOnce: true)
        let holding = GraphSink(releasesAtOnce: false)
        _ = try microphone.node.subscribe(prompt, policy: SubscriptionPolicy(maxInFlight: 2), for: .daemon)
        _ = try microphone.node.subscribe(holding, policy: SubscriptionPolicy(maxInFlight: 1), for: .daemon)
        // A second of periods (on an emulated CPU, however long that takes).
        #expect(await waitUntil(timeout: .seconds(120)) { prompt.frames.count >= 100 })
        microphone.stop()
        #expect(prompt.hasEnded && holding.hasEnded)

        let periods = prompt.frames
        let first = try #require(periods.first)
        let last = max(prompt.accountedThrough, holding.accountedThrough)
        try prompt.checkAccounting(from: first.sequence, through: prompt.accountedThrough)
        // The holding listener kept its first period; the rest it missed, each reported.
        try holding.checkAccounting(from: holding.frames.first?.sequence ?? first.sequence, through: holding.accountedThrough)
        #expect(holding.frames.count == 1 && holding.dropCount(.frameWasLate) > 0)
        #expect(last >= first.sequence + 99)

        let period = Int64(10_000_000)  // 480 frames at 48 kHz
        for (previous, next) in zip(periods, periods.dropFirst()) {
            #expect(next.timestampNanoseconds - previous.timestampNanoseconds == Int64(next.sequence - previous.sequence) * period,
                    "period \(next.sequence): its first sample's capture time")
        }
        for received in periods {
            var expected = [Int16](repeating: 0, count: 480 * 2)
            expected.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: 2, from: received.sequence * 480) }
            #expect(received.bytes == expected.withUnsafeBytes { Array($0) }, "period \(received.sequence): byte for byte")
        }

        // Read back as a listener would: the left channel of the periods in a
        // row decodes to blocks in order, each where its number puts it.
        let run = periods.enumerated().prefix { $0.element.sequence == first.sequence + UInt64($0.offset) }.map(\.element)
        let left = run.flatMap { received in
            stride(from: 0, to: received.bytes.count, by: 4).map {
                Float(Int16(bitPattern: UInt16(received.bytes[$0]) | UInt16(received.bytes[$0 + 1]) << 8)) / 32767
            }
        }
        let blocks = AudioStamp.decode(left, sampleRate: 48_000)
        #expect(blocks.count >= run.count / 2 - 2, "\(blocks.count) blocks in \(run.count) periods")
        for block in blocks {
            #expect(Int(UInt64(block.number) * 960) - Int(first.sequence * 480) == block.offset, "\(block)")
        }
    }

    @Test func everySampleFormatCarriesTheSameSignal() {
        for format in [AudioLayout.SampleFormat.s16, .s32, .f32] {
            let layout = AudioLayout(sampleRate: 48_000, channels: 1, sampleFormat: format, framesPerPeriod: 960)
            var bytes = [UInt8](repeating: 0, count: layout.capacity)
            let written = bytes.withUnsafeMutableBytes { VirtualMicrophoneCapture.render(layout, from: 960 * 7, into: $0) }
            #expect(written == layout.capacity)
            let samples = bytes.withUnsafeBytes { format.floats(in: $0) }
            // One whole block, number 7, from the first sample.
            #expect(AudioStamp.decode(samples + [0, 0, 0], sampleRate: 48_000) == [AudioStamp.Block(number: 7, offset: 0)], "\(format)")
        }
    }

    @Test func onlyTheStampsRateIsOffered() {
        let layout = AudioLayout(sampleRate: 44_100, channels: 2, sampleFormat: .s16, framesPerPeriod: 441)
        #expect(throws: CameraError.self) { try VirtualMicrophoneCapture(name: "a 44.1 kHz one", layout: layout, budget: budget, logger: logger) }
    }
}
