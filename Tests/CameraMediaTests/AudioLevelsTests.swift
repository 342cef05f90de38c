import CameraMedia
import Foundation
import Testing

/// The meter of AVCaptureAudioChannel: known tones read their RMS and peak in
/// dBFS, per channel; a click is held, then falls; silence reads the floor.
@Suite struct AudioLevelsTests {
    /// `seconds` of a 1 kHz sine per channel at 48 kHz, interleaved, from frame `start`.
    static func sine(_ amplitudes: [Float], seconds: Double, from start: Int = 0) -> [Float] {
        let frames = Int(seconds * 48_000)
        return (start..<start + frames).flatMap { frame in
            amplitudes.map { $0 * Float(sin(2 * Double.pi * 1_000 * Double(frame) / 48_000)) }
        }
    }

    static func decibels(_ amplitude: Double) -> Float { Float(20 * log10(amplitude)) }

    @Test func aSineReadsItsRMSAndPeakOnEachChannel() {
        var levels = AudioLevels(channels: 2, sampleRate: 48_000)
        Self.sine([0.5, 0.1], seconds: 0.5).withUnsafeBufferPointer { levels.add($0) }
        let (left, right) = (levels.readings[0], levels.readings[1])
        // A sine's RMS is its peak over √2: 3.01 dB below it.
        #expect(abs(left.averagePowerLevel - Self.decibels(0.5 / 2.0.squareRoot())) < 0.05, "\(left)")
        #expect(abs(left.peakHoldLevel - Self.decibels(0.5)) < 0.05, "\(left)")
        #expect(abs(right.averagePowerLevel - Self.decibels(0.1 / 2.0.squareRoot())) < 0.05, "\(right)")
        #expect(abs(right.peakHoldLevel - Self.decibels(0.1)) < 0.05, "\(right)")
    }

    @Test func aFullScaleSineInS16ReadsMinus3dB() {
        var levels = AudioLevels(channels: 1, sampleRate: 48_000)
        let samples = Self.sine([1], seconds: 0.2).map { Int16(($0 * 32767).rounded()) }
        samples.withUnsafeBufferPointer { levels.add($0) }
        #expect(abs(levels.readings[0].averagePowerLevel - -3.01) < 0.05 && abs(levels.readings[0].peakHoldLevel) < 0.05,
                "\(levels.readings[0])")
    }

    @Test func silenceAndNothingYetReadTheFloor() {
        var levels = AudioLevels(channels: 2, sampleRate: 48_000)
        let floor = AudioLevels.Reading(averagePowerLevel: AudioLevels.minimumLevel, peakHoldLevel: AudioLevels.minimumLevel)
        #expect(levels.readings == [floor, floor])
        [Float](repeating: 0, count: 48_000 * 2).withUnsafeBufferPointer { levels.add($0) }
        #expect(levels.readings == [floor, floor])
    }

    /// A click at full scale over a quiet tone: the peak holds it for the hold
    /// time, then falls to the tone's; the average follows the window.
    @Test func aClickIsHeldForASecondThenTheLevelFalls() {
        var levels = AudioLevels(channels: 1, sampleRate: 48_000)
        var samples = Self.sine([0.1], seconds: 0.3)
        samples[samples.count / 2] = 1
        samples.withUnsafeBufferPointer { levels.add($0) }
        #expect(abs(levels.readings[0].peakHoldLevel) < 0.01, "the click: \(levels.readings[0])")
        Self.sine([0.1], seconds: 0.7, from: 14_400).withUnsafeBufferPointer { levels.add($0) }
        #expect(abs(levels.readings[0].peakHoldLevel) < 0.01, "held 0.85 s after it: \(levels.readings[0])")
        Self.sine([0.1], seconds: 0.4, from: 48_000).withUnsafeBufferPointer { levels.add($0) }
        #expect(abs(levels.readings[0].peakHoldLevel - Self.decibels(0.1)) < 0.05, "1.25 s after it: \(levels.readings[0])")
        #expect(abs(levels.readings[0].averagePowerLevel - Self.decibels(0.1 / 2.0.squareRoot())) < 0.05)
    }
}
