import CameraMedia
import Foundation
import Testing

/// The virtual microphone's signal read back: every block where it was made,
/// through a cut, S16 rounding, a channel picked out and a resampler.
@Suite struct AudioStampTests {
    static let start: UInt64 = 1_234  // not on a block's edge

    static func rendered(seconds: Double, channels: Int = 1, from position: UInt64 = start) -> [Float] {
        var samples = [Float](repeating: 0, count: Int(seconds * Double(AudioStamp.sampleRate)) * channels)
        samples.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: channels, from: position) }
        return samples
    }

    /// Where block `number` starts in samples that begin at `start`, at 48 kHz.
    static func offset(of number: UInt32, from start: UInt64 = start) -> Int {
        Int(UInt64(number) * UInt64(AudioStamp.blockFrames)) - Int(start)
    }

    @Test func everyWholeBlockIsFoundWhereItStartsAt48kHz() {
        let blocks = AudioStamp.decode(Self.rendered(seconds: 2), sampleRate: 48_000)
        // Block 1 starts at 960 − 1234 < 0 (cut); block 2 at 686, then every 960 frames.
        #expect(blocks.first?.number == 2)
        #expect(blocks.count == 99, "blocks 2 to 100 are whole in 96,000 samples from 1,234: \(blocks.count)")
        for (index, block) in blocks.enumerated() {
            #expect(block.number == UInt32(2 + index) && block.offset == Self.offset(of: block.number), "\(block)")
        }
    }

    /// A gap (an overrun) shows as blocks that start exactly as many samples early as were lost.
    @Test func aGapIsMeasuredToTheSample() {
        var samples = Self.rendered(seconds: 2)
        let lost = 30_000..<30_777
        samples.removeSubrange(lost)
        let blocks = AudioStamp.decode(samples, sampleRate: 48_000)
        let before = blocks.filter { $0.offset + AudioStamp.blockFrames <= lost.lowerBound }
        let after = blocks.filter { $0.offset >= lost.lowerBound }
        #expect(before.allSatisfy { $0.offset == Self.offset(of: $0.number) })
        #expect(after.allSatisfy { $0.offset == Self.offset(of: $0.number) - lost.count }, "\(after.prefix(3))")
        #expect(before.count + after.count == blocks.count, "no block straddling the cut is misread")
        #expect(blocks.count >= 97, "at most two blocks lost with 777 samples: \(blocks.count)")
        #expect(zip(blocks, blocks.dropFirst()).allSatisfy { $0.number < $1.number }, "in order")
    }

    @Test func s16RoundingAndAChannelPickedOutStillDecode() {
        let channels = 2
        var s16 = [Int16](repeating: 0, count: 48_000 * channels)
        s16.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: channels, from: Self.start) }
        let right = stride(from: 1, to: s16.count, by: channels).map { Float(s16[$0]) / 32767 }
        let blocks = AudioStamp.decode(right, sampleRate: 48_000)
        #expect(blocks.count == 49 && blocks.allSatisfy { $0.offset == Self.offset(of: $0.number) })
        let float = Self.rendered(seconds: 1, channels: channels)
        #expect(zip(float, s16).allSatisfy { abs($0 * 32767 - Float($1)) <= 0.5 }, "S16 is the float signal, rounded")
    }

    /// Through a band-limited resampler (windowed sinc, as libswresample's is):
    /// every block found, in order, within two samples of where it belongs.
    @Test(arguments: [44_100, 16_000, 96_000])
    func aResampledSignalDecodesWithinTwoSamples(rate: Int) {
        let resampled = Self.resample(Self.rendered(seconds: 2), to: rate)
        let blocks = AudioStamp.decode(resampled, sampleRate: rate)
        #expect(blocks.count >= 98, "\(blocks.count) blocks at \(rate) Hz")
        #expect(zip(blocks, blocks.dropFirst()).allSatisfy { $1.number == $0.number + 1 }, "consecutive")
        for block in blocks {
            let expected = Double(Self.offset(of: block.number)) * Double(rate) / 48_000
            #expect(abs(Double(block.offset) - expected) <= 2, "\(block) at \(rate) Hz, expected \(expected)")
        }
    }

    /// Given as periods come — of a listener's sizes, and odd ones — the
    /// decoder finds exactly the blocks the whole run gives at once, each
    /// once, holding no more than a fraction of a second between periods.
    @Test(arguments: [48_000, 44_100, 16_000])
    func periodsDecodedAsTheyComeFindWhatTheWholeRunGives(rate: Int) {
        var samples = rate == 48_000 ? Self.rendered(seconds: 3) : Self.resample(Self.rendered(seconds: 3), to: rate)
        samples.removeSubrange(rate..<rate + 333)  // a gap a second in: blocks after it start early
        let whole = AudioStamp.decode(samples, sampleRate: rate)
        #expect(whole.count >= 145, "\(whole.count) blocks in the whole run at \(rate) Hz")
        for period in [rate / 100, 1, 997, 20_000] {
            var decoder = AudioStamp.Decoder(sampleRate: rate)
            var found: [AudioStamp.Block] = []
            var start = 0
            while start < samples.count {
                let end = min(start + period, samples.count)
                found += decoder.add(samples[start..<end])
                #expect(decoder.samplesHeld <= period + rate / 4, "\(decoder.samplesHeld) samples held, periods of \(period)")
                start = end
            }
            found += decoder.finish()
            #expect(found == whole, "periods of \(period) at \(rate) Hz: \(found.count) blocks, \(whole.count) at once")
        }
    }

    @Test func noiseDecodesToNothing() {
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<480_000).map { _ in Float.random(in: -1...1, using: &generator) }
        #expect(AudioStamp.decode(noise, sampleRate: 48_000).isEmpty)
        #expect(AudioStamp.decode([], sampleRate: 48_000).isEmpty)
    }

    /// A marker cut off by silence (or by the tone alone) is no block: silence
    /// is not a run of 0 bits — which, CRC-8 of 0 being 0, would read as block 0.
    /// snd-aloop hands a capture a few milliseconds of a stale buffer (a block's
    /// marker) after its playback ends: that was "block 0" after the last block.
    @Test func aMarkerBeforeSilenceIsNoBlock() {
        let whole = Self.rendered(seconds: 0.1, from: 0)
        let tone = (0..<2_000).map { AudioStamp.toneLevel * Float(sin(2 * Double.pi * Double($0 + 48) / 48)) }
        for tail in [[Float](repeating: 0, count: 2_000), tone] {
            let samples = Array(whole[0..<(2 * AudioStamp.markerFrames)]) + tail
            #expect(AudioStamp.decode(samples, sampleRate: 48_000).isEmpty, "a marker, then \(tail.allSatisfy { $0 == 0 } ? "silence" : "the tone")")
        }
        #expect(AudioStamp.decode(whole, sampleRate: 48_000).map(\.number) == [0, 1, 2, 3, 4], "whole blocks still decode")
    }

    /// The tone is 1 kHz at −20 dBFS peak: in a block's quiet tail, the samples are the tone alone.
    @Test func theToneIsTheSignalBetweenTheMarks() {
        let quietStart = 48 + 40 * AudioStamp.bitFrames
        for position in UInt64(quietStart)..<UInt64(AudioStamp.blockFrames) {
            let expected = 0.1 * sin(2 * Double.pi * Double(position) / 48)
            #expect(abs(Double(AudioStamp.sample(at: position)) - expected) < 1e-6)
        }
    }

    /// A windowed-sinc resampler: each output sample from 32 input samples
    /// around it, low-passed below the lower rate's Nyquist frequency.
    static func resample(_ input: [Float], to rate: Int) -> [Float] {
        let ratio = Double(rate) / 48_000
        let cutoff = min(1, ratio) * 0.9
        let taps = 16
        return (0..<Int(Double(input.count) * ratio)).map { index in
            let center = Double(index) / ratio
            var sum = 0.0
            for tap in Int(center) - taps...Int(center) + taps where input.indices.contains(tap) {
                let x = Double(tap) - center
                let sinc = x == 0 ? cutoff : sin(Double.pi * x * cutoff) / (Double.pi * x)
                let window = 0.5 + 0.5 * cos(Double.pi * x / Double(taps + 1))
                sum += Double(input[tap]) * sinc * window
            }
            return Float(sum)
        }
    }
}
