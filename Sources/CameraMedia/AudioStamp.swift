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
        var decoder = Decoder(sampleRate: sampleRate)
        return decoder.add(samples) + decoder.finish()
    }

    /// ``decode(_:sampleRate:)`` as the samples come: each call scans what
    /// came since the last, keeping only the tail a block may still start in,
    /// so a run of any length costs its length once and holds a fraction of a
    /// second (a listener checking an hour of sound never stops to decode it).
    /// The blocks found are those the whole run decoded at once would give.
    public struct Decoder: Sendable {
        private let scale: Double
        /// A marker half's length at this rate.
        private let half: Int
        private let blockLength: Double
        /// Samples a block needs after its marker's start to be read.
        private let needed: Int
        /// Samples before the end a scan stops at while more may come: past the
        /// `needed` a block's bits take, the width of a marker's edge search.
        private let margin: Int
        /// Samples gathered before a scan: a few blocks' worth.
        private let chunk: Int
        /// The samples from `base` on (the run's index of the first).
        private var samples: [Float] = []
        private var base = 0
        /// Where the next scan starts, in the run's indexes.
        private var next = 0

        /// Samples it holds for the next scan: the tail a block may still start in, and what came since.
        public var samplesHeld: Int { samples.count }

        public init(sampleRate: Int) {
            scale = Double(sampleRate) / Double(AudioStamp.sampleRate)
            half = max(1, Int((Double(markerFrames) * scale).rounded()))
            blockLength = Double(blockFrames) * scale
            needed = Int((Double(markerFrames * 2 + bitFrames * bitCount) * scale).rounded(.up)) + 2
            margin = 4 * half
            chunk = Int(blockLength * 10)
        }

        /// The blocks found in what came so far, whole and not found before (their offsets from the run's start).
        public mutating func add(_ more: some Collection<Float>) -> [Block] {
            samples.append(contentsOf: more)
            return base + samples.count - next >= chunk + needed + margin ? scan(until: needed + margin) : []
        }

        /// At the run's end: the blocks in its tail.
        public mutating func finish() -> [Block] { scan(until: needed) }

        /// Finds blocks starting from `next` up to `reserve` samples before the
        /// end, then lets go of the samples before where the next scan starts.
        private mutating func scan(until reserve: Int) -> [Block] {
            let count = samples.count
            // Sums from the scan's start, so any window's mean is two lookups.
            let first = next - base
            guard first < count else { return [] }
            var sums = [Double](repeating: 0, count: count - first + 1)
            samples.withUnsafeBufferPointer { samples in
                var sum = 0.0
                for index in first..<count {
                    sum += Double(samples[index])
                    sums[index - first + 1] = sum
                }
            }
            let half = half
            func mean(_ start: Int, _ length: Int) -> Double { (sums[start - first + length] - sums[start - first]) / Double(length) }
            func isMarker(_ start: Int) -> Bool { mean(start, half) > 0.6 && mean(start + half, half) < -0.6 }

            var blocks: [Block] = []
            var index = first
            while index + reserve < count {
                guard isMarker(index) else {
                    index += 1
                    continue
                }
                // The marker's edge: where high then low differ most, among the starts that match.
                var best = index
                var bestContrast = -Double.infinity
                var start = index
                while start + needed < count, isMarker(start) {
                    let contrast = mean(start, half) - mean(start + half, half)
                    if contrast > bestContrast { (best, bestContrast) = (start, contrast) }
                    start += 1
                }
                if let number = readBits(from: best, scale: scale, mean: mean) {
                    blocks.append(Block(number: number, offset: base + best))
                    index = best + Int(blockLength * 0.9)
                } else {
                    index = start
                }
            }
            next = base + index
            let kept = min(index, count)
            samples.removeFirst(kept)
            base += kept
            return blocks
        }
    }

    /// The 40 bits after a marker at `start`: the block's number, if its CRC holds.
    private static func readBits(from start: Int, scale: Double, mean: (Int, Int) -> Double) -> UInt32? {
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
        return UInt8(truncatingIfNeeded: bits) == crc(number) ? number : nil
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
