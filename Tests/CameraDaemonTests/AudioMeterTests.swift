@testable import CameraDaemon
import CameraMedia
import CameraTestSupport
import Foundation
import Logging
import Testing

/// A microphone's levels, made once on the graph: a known tone reads its
/// level within 0.5 dB on every channel, reading after reading, each one
/// accounted for.
@Suite struct AudioMeterTests {
    let budget = ClientBudget()
    let logger = Logger(label: "test")

    @Test func aKnownToneReadsItsLevelOnEveryChannel() async throws {
        let layout = AudioLayout(sampleRate: 48_000, channels: 2, sampleFormat: .s16, framesPerPeriod: 480)
        let microphone = try VirtualMicrophoneCapture(name: "a tone", layout: layout, signal: .tone(amplitude: 0.5), budget: budget, logger: logger)
        let meter = try AudioMeter(of: microphone.node, layout: layout, interval: 0.1, budget: budget, logger: logger)
        let meters = try GraphSink.listening(to: meter.node)
        #expect(await waitUntil(timeout: .seconds(120)) { meters.frames.count >= 6 })
        microphone.stop()
        #expect(await waitUntil { meters.hasEnded })

        let records = meters.frames
        let first = try #require(records.first)
        try meters.checkAccounting(from: first.sequence, through: meters.accountedThrough)
        // A sine's RMS is 3.01 dB below its peak: −9.03 and −6.02 dBFS for a peak of 0.5.
        let average = Float(20 * log10(0.5 / 2.0.squareRoot())), peak = Float(20 * log10(0.5))
        for record in records {
            let readings = record.bytes.withUnsafeBytes { AudioMeter.readings(in: $0) }
            #expect(readings.count == 2, "a reading per channel")
            for reading in readings {
                #expect(abs(reading.averagePowerLevel - average) < 0.5 && abs(reading.peakHoldLevel - peak) < 0.5,
                        "reading \(record.sequence): \(reading)")
            }
        }
        let last = try #require(records.last).bytes.withUnsafeBytes { AudioMeter.readings(in: $0) }
        #expect(meter.latest == last, "the last reading, for a one-off question")
    }
}
