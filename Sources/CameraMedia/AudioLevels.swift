import Foundation

/// A microphone's meter, per channel, as AVCaptureAudioChannel reports it:
/// ``Reading/averagePowerLevel`` and ``Reading/peakHoldLevel`` in dBFS (0 dB is
/// a sample at full scale), computed from the samples as they come.
///
/// * The average power is the RMS of the last ``window`` of samples (100 ms by
///   default), in decibels: a full-scale sine reads −3.01 dB, as Core Audio's
///   level meters read it.
/// * The peak hold is the largest magnitude of the last ``hold`` (1 s), in
///   decibels: a click shows for a second, then the level falls to what came after.
/// * Silence, and a channel before its first sample, reads ``minimumLevel`` (−160 dB,
///   Core Audio's floor).
///
/// camerad keeps one per microphone and publishes its readings a few times a
/// second; it is a value, fed from one thread.
public struct AudioLevels: Sendable {
    /// One channel's levels, in dBFS.
    public struct Reading: Hashable, Sendable, CustomStringConvertible {
        public let averagePowerLevel: Float
        public let peakHoldLevel: Float

        public init(averagePowerLevel: Float, peakHoldLevel: Float) {
            self.averagePowerLevel = averagePowerLevel
            self.peakHoldLevel = peakHoldLevel
        }

        public var description: String {
            String(format: "average %.2f dB, peak %.2f dB", averagePowerLevel, peakHoldLevel)
        }
    }

    public static let minimumLevel: Float = -160

    public let channels: Int
    /// Seconds the average power is taken over.
    public let window: Double
    /// Seconds a peak is held.
    public let hold: Double

    /// Frames in one window.
    private let windowFrames: Int
    /// Per channel: the window being filled (sum of squares, peak) and its frames so far.
    private var filling: [(squares: Double, peak: Float)]
    private var filled = 0
    /// Per channel: the last whole window's mean square, and the peaks of the windows held, newest last.
    private var lastMeanSquare: [Double]
    private var peaks: [[Float]]
    private let windowsHeld: Int

    public init(channels: Int, sampleRate: Int, window: Double = 0.1, hold: Double = 1) {
        precondition(channels > 0 && sampleRate > 0 && window > 0 && hold >= window)
        self.channels = channels
        self.window = window
        self.hold = hold
        windowFrames = max(1, Int((window * Double(sampleRate)).rounded()))
        windowsHeld = max(1, Int((hold / window).rounded()))
        filling = Array(repeating: (0, 0), count: channels)
        lastMeanSquare = Array(repeating: 0, count: channels)
        peaks = Array(repeating: [], count: channels)
    }

    /// Interleaved samples, −1...1.
    public mutating func add(_ samples: UnsafeBufferPointer<Float>) {
        add(frames: samples.count / channels) { samples[$0] }
    }

    /// Interleaved signed 16-bit samples (ALSA's S16_LE).
    public mutating func add(_ samples: UnsafeBufferPointer<Int16>) {
        add(frames: samples.count / channels) { Float(samples[$0]) / 32768 }
    }

    /// Packed samples of `format`, as a period holds them.
    public mutating func add(_ bytes: UnsafeRawBufferPointer, format: AudioLayout.SampleFormat) {
        let count = bytes.count / format.bytes
        switch format {
        case .s16: bytes.withMemoryRebound(to: Int16.self) { add(UnsafeBufferPointer(rebasing: $0.prefix(count))) }
        case .f32: bytes.withMemoryRebound(to: Float.self) { add(UnsafeBufferPointer(rebasing: $0.prefix(count))) }
        case .s32: format.floats(in: bytes).withUnsafeBufferPointer { add($0) }
        }
    }

    private mutating func add(frames: Int, _ sample: (Int) -> Float) {
        for frame in 0..<frames {
            for channel in 0..<channels {
                let value = sample(frame * channels + channel)
                filling[channel].squares += Double(value) * Double(value)
                filling[channel].peak = max(filling[channel].peak, abs(value))
            }
            filled += 1
            if filled == windowFrames { closeWindow() }
        }
    }

    private mutating func closeWindow() {
        for channel in 0..<channels {
            lastMeanSquare[channel] = filling[channel].squares / Double(windowFrames)
            peaks[channel].append(filling[channel].peak)
            if peaks[channel].count > windowsHeld { peaks[channel].removeFirst(peaks[channel].count - windowsHeld) }
            filling[channel] = (0, 0)
        }
        filled = 0
    }

    /// Each channel's levels now: the last whole window's power, the peak of the
    /// windows held and the one being filled.
    public var readings: [Reading] {
        (0..<channels).map { channel in
            let peak = max(peaks[channel].max() ?? 0, filling[channel].peak)
            return Reading(averagePowerLevel: Self.decibels(power: lastMeanSquare[channel]),
                           peakHoldLevel: Self.decibels(amplitude: Double(peak)))
        }
    }

    static func decibels(power: Double) -> Float {
        power > 0 ? max(minimumLevel, Float(10 * log10(power))) : minimumLevel
    }

    static func decibels(amplitude: Double) -> Float {
        amplitude > 0 ? max(minimumLevel, Float(20 * log10(amplitude))) : minimumLevel
    }
}
