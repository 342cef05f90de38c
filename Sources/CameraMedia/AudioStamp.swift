import Foundation

/// The signal a virtual microphone makes, the audio analogue of ``FrameStamp``:
/// a 1 kHz tone under a click pattern that names where each block of samples
/// belongs, so a listener can check continuity, order and gaps exactly.
///
/// At 48 kHz the signal is cut in blocks of ``blockFrames`` (20 ms). Block *n*
/// starts with a marker (``markerFrames`` samples high, as many low), then
/// 40 bits — *n* in 32 (most significant first) and a CRC-8 of it — each
/// ``bitFrames`` samples high (1) or low (0), then quiet to the block's end;
/// the tone runs under all of it. Every channel carries the same signal, so a
/// mono mix or a channel picked out still decodes. The marks are long and
/// their edges few, so they survive a resampler (44.1 or 16 kHz) and a sample
/// format's rounding (S16): ``decode(_:sampleRate:)`` finds each whole block in a
/// run of samples and where it starts — exactly at 48 kHz, within a sample or
/// two after resampling.
public enum AudioStamp {
    /// The rate the signal is made at.
    public static let sampleRate = 48_000
    public static let blockFrames = 960
    public static let markerFrames = 24
    public static let bitFrames = 20
    static let bitCount = 40
    static let markerLevel: Float = 0.9
    static let bitLevel: Float = 0.3
    /// The tone: 1 kHz, exactly 48 samples a period at 48 kHz, its peak 0.1 (−20 dBFS).
    public static let toneFrequency = 1_000
    public static let toneLevel: Float = 0.1

    /// The sample at `position` frames from the microphone's start, at 48 kHz.
    public static func sample(at position: UInt64) -> Float {
        toneLevel * sine[Int(position % UInt64(sine.count))] + mark(at: position, word: word(of: block(at: position)))
    }

    /// Frames `position ..< position + samples.count / channels` of the tone
    /// alone, its peak `amplitude`, interleaved, `channels` copies each: exact
    /// at any position, no sine computed a sample.
    public static func renderTone(into samples: UnsafeMutableBufferPointer<Float>, channels: Int, from position: UInt64,
                                  amplitude: Float = toneLevel) {
        sine.withUnsafeBufferPointer { sine in
            var index = Int(position % UInt64(sine.count))
            for frame in 0..<samples.count / channels {
                let value = amplitude * sine[index]
                for channel in 0..<channels { samples[frame * channels + channel] = value }
                index += 1
                if index == sine.count { index = 0 }
            }
        }
    }

    /// Frames `position ..< position + count`, interleaved, `channels` copies each.
    public static func render(into samples: UnsafeMutableBufferPointer<Float>, channels: Int, from position: UInt64) {
        render(frames: samples.count / channels, from: position) { frame, value in
            for channel in 0..<channels { samples[frame * channels + channel] = value }
        }
    }

    /// The same as signed 16-bit samples (ALSA's S16_LE).
    public static func render(into samples: UnsafeMutableBufferPointer<Int16>, channels: Int, from position: UInt64) {
        render(frames: samples.count / channels, from: position) { frame, value in
            let sample = Int16(clamping: Int((value * 32767).rounded()))
            for channel in 0..<channels { samples[frame * channels + channel] = sample }
        }
    }

    /// Each frame's value in turn, counted along: a block's bits worked out once,
    /// no division a sample.
    private static func render(frames: Int, from position: UInt64, _ write: (Int, Float) -> Void) {
        sine.withUnsafeBufferPointer { tone in
            var toneIndex = Int(position % UInt64(tone.count))
            var block = block(at: position)
            var word = word(of: block)
            var inBlock = Int(position % UInt64(blockFrames))
            for frame in 0..<frames {
                write(frame, toneLevel * tone[toneIndex] + mark(inBlock: inBlock, word: word))
                toneIndex += 1
                if toneIndex == tone.count { toneIndex = 0 }
                inBlock += 1
                if inBlock == blockFrames {
                    inBlock = 0
                    block &+= 1
                    word = Self.word(of: block)
                }
            }
        }
    }

    /// One block found in received samples.
    public struct Block: Hashable, Sendable, CustomStringConvertible {
        /// Its number: it began ``AudioStamp/blockFrames`` × `number` frames after the microphone started (at 48 kHz).
        public let number: UInt32
        /// The index, in the samples decoded, of its first sample.
        public let offset: Int

        public init(number: UInt32, offset: Int) {
            self.number = number
            self.offset = offset
        }

        public var description: String { "block \(number) at \(offset)" }
    }

    /// Every whole block in `samples` (one channel at `sampleRate`), in the order found.
    /// A block cut by the run's end, or whose CRC does not hold, is left out.
    public static func decode(_ samples: [Float], sampleRate: Int) -> [Block] {
        let scale = Double(sampleRate) / Double(Self.sampleRate)
        let half = max(1, Int((Double(markerFrames) * scale).rounded()))
        let blockLength = Double(blockFrames) * scale
        // Sums from the start, so any window's mean is two lookups.
        var sums = [Double](repeating: 0, count: samples.count + 1)
        for index in samples.indices { sums[index + 1] = sums[index] + Double(samples[index]) }
        func mean(_ start: Int, _ count: Int) -> Double { (sums[start + count] - sums[start]) / Double(count) }
        let threshold = 0.6

        var blocks: [Block] = []
        var index = 0
        let needed = Int((Double(markerFrames * 2 + bitFrames * bitCount) * scale).rounded(.up)) + 2
        while index + needed < samples.count {
            guard mean(index, half) > threshold, mean(index + half, half) < -threshold else {
                index += 1
                continue
            }
            // The marker's edge: where high then low differ most, among the starts that match.
            var best = index
            var bestContrast = -Double.infinity
            var start = index
            while start + needed < samples.count, mean(start, half) > threshold, mean(start + half, half) < -threshold {
                let contrast = mean(start, half) - mean(start + half, half)
                if contrast > bestContrast { (best, bestContrast) = (start, contrast) }
                start += 1
            }
            if let block = readBits(from: best, scale: scale, mean: mean) {
                blocks.append(block)
                index = best + Int(blockLength * 0.9)
            } else {
                index = start
            }
        }
        return blocks
    }

    /// The 40 bits after a marker at `start`: the block, if its CRC holds.
    private static func readBits(from start: Int, scale: Double, mean: (Int, Int) -> Double) -> Block? {
        var bits: UInt64 = 0
        for bit in 0..<bitCount {
            // The middle half of the bit: clear of its edges after a resampler.
            let from = Double(start) + (Double(markerFrames * 2 + bit * bitFrames) + Double(bitFrames) * 0.25) * scale
            let count = max(1, Int((Double(bitFrames) * 0.5 * scale).rounded()))
            // A bit is ±bitLevel: anything nearer 0 (silence after a marker) is no bit at all.
            let level = mean(Int(from.rounded()), count)
            guard abs(level) > Double(bitLevel) / 2 else { return nil }
            bits = bits << 1 | (level > 0 ? 1 : 0)
        }
        let number = UInt32(truncatingIfNeeded: bits >> 8)
        guard UInt8(truncatingIfNeeded: bits) == crc(number) else { return nil }
        return Block(number: number, offset: start)
    }

    private static func block(at position: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: position / UInt64(blockFrames))
    }

    /// A block's 40 bits: its number, then the number's CRC.
    private static func word(of block: UInt32) -> UInt64 { UInt64(block) << 8 | UInt64(crc(block)) }

    /// The click pattern at `position` in a block of bits `word` (0 where the block is quiet).
    private static func mark(at position: UInt64, word: UInt64) -> Float {
        mark(inBlock: Int(position % UInt64(blockFrames)), word: word)
    }

    /// The click pattern `frame` frames into a block of bits `word`.
    private static func mark(inBlock frame: Int, word: UInt64) -> Float {
        if frame < markerFrames { return markerLevel }
        if frame < markerFrames * 2 { return -markerLevel }
        let bit = (frame - markerFrames * 2) / bitFrames
        guard bit < bitCount else { return 0 }
        return (word >> UInt64(bitCount - 1 - bit)) & 1 == 1 ? bitLevel : -bitLevel
    }

    private static func crc(_ number: UInt32) -> UInt8 { FrameStamp.crc8(UInt128(number)) }

    /// One period of the tone at 48 kHz, its peak 1.
    private static let sine: [Float] = (0..<sampleRate / toneFrequency).map {
        Float(sin(2 * Double.pi * Double($0) * Double(toneFrequency) / Double(sampleRate)))
    }
}
