import CameraMedia
import Foundation
import Testing

/// libswresample between a microphone's layout and a listener's: the
/// virtual microphone's stamp still decodes, block after block, at the
/// listener's rate, and a same-rate change of format or channels is exact.
@Suite struct AudioResamplerTests {
    static let microphone = AudioLayout(sampleRate: 48_000, channels: 2, sampleFormat: .s16, framesPerPeriod: 480)

    /// `periods` of the stamp, each converted as it comes, the outputs one after the other.
    static func converted(to target: AudioLayout, periods: Int) throws -> [UInt8] {
        let resampler = try AudioResampler(from: microphone, to: target)
        var output: [UInt8] = []
        for period in 0..<periods {
            var samples = [Int16](repeating: 0, count: 480 * 2)
            samples.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: 2, from: UInt64(period * 480)) }
            var converted = [UInt8](repeating: 0, count: resampler.maximumOutputFrames(forInput: 480) * target.bytesPerFrame)
            let frames = try samples.withUnsafeBytes { input in
                try converted.withUnsafeMutableBytes { try resampler.convert(input, into: $0) }
            }
            output += converted.prefix(frames * target.bytesPerFrame)
        }
        return output
    }

    /// The first channel, as floats.
    static func firstChannel(_ bytes: [UInt8], _ layout: AudioLayout) -> [Float] {
        let samples = bytes.withUnsafeBytes { layout.sampleFormat.floats(in: $0) }
        return stride(from: 0, to: samples.count, by: layout.channels).map { samples[$0] }
    }

    @Test func aFormatAndChannelChangeAtTheSameRateIsExact() throws {
        let target = AudioLayout(sampleRate: 48_000, channels: 1, sampleFormat: .f32, framesPerPeriod: 480)
        let samples = Self.firstChannel(try Self.converted(to: target, periods: 100), target)
        #expect(samples.count == 48_000, "every frame, no delay at the same rate")
        // Stereo to mono: the two (equal) channels mixed back to the one signal.
        var reference = [Float](repeating: 0, count: 48_000)
        reference.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: 1, from: 0) }
        let largest = zip(samples, reference).map { abs($0 - $1) }.max() ?? 1
        #expect(largest < 1e-3, "within S16's rounding: \(largest)")
        let blocks = AudioStamp.decode(samples, sampleRate: 48_000)
        #expect(blocks.count == 50 && blocks.enumerated().allSatisfy { $0.element == AudioStamp.Block(number: UInt32($0.offset), offset: $0.offset * 960) },
                "\(blocks.prefix(3))")
    }

    /// At another rate: every block, consecutive, spaced by its length at that
    /// rate within two samples, the first where it belongs.
    @Test(arguments: [(44_100, AudioLayout.SampleFormat.f32, 1), (16_000, .s16, 2), (96_000, .s32, 1)])
    func aResampledStampDecodesBlockAfterBlock(rate: Int, format: AudioLayout.SampleFormat, channels: Int) throws {
        let target = AudioLayout(sampleRate: rate, channels: channels, sampleFormat: format, framesPerPeriod: rate / 100)
        let samples = Self.firstChannel(try Self.converted(to: target, periods: 200), target)
        #expect(abs(samples.count - rate * 2) <= 64, "two seconds less the filter's delay: \(samples.count)")
        let blocks = AudioStamp.decode(samples, sampleRate: rate)
        #expect(blocks.count >= 98, "\(blocks.count) blocks at \(rate) Hz")
        let first = try #require(blocks.first)
        let scale = Double(rate) / 48_000
        // libswresample holds its filter's lookahead back (latency) but makes no
        // priming: output frame i is input time i at the new rate, so a variant's
        // timestamps need no correction for it.
        #expect(abs(Double(first.offset) - Double(first.number) * 960 * scale) <= 2, "\(first): where it belongs, the filter adding no offset")
        for block in blocks {
            #expect(block.number == first.number + UInt32(blocks.firstIndex(of: block)!), "consecutive")
            let expected = Double(first.offset) + Double(block.number - first.number) * 960 * scale
            #expect(abs(Double(block.offset) - expected) <= 2, "\(block) at \(rate) Hz, expected \(expected)")
        }
    }

    @Test func aPairLibswresampleRefusesIsAClearError() {
        let strange = AudioLayout(sampleRate: 48_000, channels: 70, sampleFormat: .s16, framesPerPeriod: 480)
        #expect(throws: ConversionError.self) { try AudioResampler(from: strange, to: Self.microphone) }
    }
}
