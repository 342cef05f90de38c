import CameraIPC
import CameraMedia
import Logging

/// A microphone's variant (ARCHITECTURE.md, "Audio's transport"): the
/// microphone's periods resampled to its layout — rate, channels, sample
/// format — and cut into its period size, written once into its node's pool
/// for all its listeners, who subscribe to ``node`` as to any node.
///
/// Its periods are numbered by position: period *s* holds output frames from
/// *s* × frames-per-period on, on the microphone's clock (the microphone's frame
/// *p* is the variant's *p* × rate ÷ the microphone's rate, within two samples:
/// libswresample holds its filter's lookahead back but shifts nothing, so the
/// timestamps need no correction for it). A gap in the microphone's periods (its
/// own overrun, or this variant's input falling behind) restarts the resampler
/// at the next period boundary after the gap: the periods in between are
/// reported as a discontinuity, so a gap in the numbers is a gap in samples.
final class AudioVariant: Sendable {
    let layout: AudioLayout
    private let derived: DerivedNode
    var node: MediaNode { derived.node }

    /// Makes the variant and subscribes it to `source` (charged to camerad).
    ///
    /// - Throws: INVALID_ARGUMENT for a layout libswresample cannot make;
    ///   RESOURCE_EXHAUSTED when its pool, worker or subscription cannot be had.
    /// `onTheClock`: its frames resampled onto CLOCK_MONOTONIC as the
    /// microphone's clock drifts (a recording's sound); otherwise they keep
    /// the microphone's clock, numbered by position.
    init(of source: MediaNode, layout sourceLayout: AudioLayout, as layout: AudioLayout, onTheClock: Bool = false, slots: Int? = nil,
         budget: ClientBudget, logger: Logger) throws(CameraError) {
        let cutter: PeriodCutter
        do {
            cutter = try PeriodCutter(from: sourceLayout, to: layout, onTheClock: onTheClock)
        } catch {
            throw CameraError(.invalidArgument, "\(source.name) cannot be heard as \(layout): \(error)")
        }
        self.layout = layout
        let node = try MediaNode(name: "\(source.name) as \(layout)", media: .audio(layout), slots: slots ?? layout.poolSlots, budget: budget, logger: logger)
        derived = try DerivedNode(node, reading: source, inFlight: Self.periodsInFlight, passesDropsOn: false,
                                  priority: .sound) { period, node in
            cutter.take(period, into: node)
        }
    }

    /// The microphone's periods its worker may hold: 160 ms of 10 ms periods,
    /// past a loaded machine's stalls (4 lost periods to the VM's, where the
    /// microphone's own listener with 16 lost none).
    static let periodsInFlight = 16

    /// Stops reading the microphone and ends the variant's listeners.
    func stop() { derived.stop() }
}

/// The variant's work on its input's worker: resample and cut into periods
/// under its lock (never contended: one period after another), then publish
/// them and report its gaps with the lock let go.
private final class PeriodCutter: Sendable {
    private struct State {
        var resampler: AudioResampler
        /// Resampled bytes not yet a whole period; the first is output frame ``position``.
        var pending: [UInt8] = []
        var position: UInt64 = 0
        /// Output frames still to throw away to reach a period boundary after a restart.
        var skip = 0
        /// The microphone's period expected next; nil before the first.
        var nextInput: UInt64?
        /// The output frame and capture time the timestamps are counted from.
        var origin: (position: UInt64, timestampNanoseconds: Int64) = (0, 0)
        /// The output frame the resampler writes next (before the frames skipped to a boundary).
        var produced: Int64 = 0
        /// Whether the resampler's ratio follows the microphone's clock (once it was found off).
        var compensating = false
    }

    /// A period made, to publish.
    private struct Made {
        let sequence: UInt64
        let timestampNanoseconds: Int64
        let bytes: [UInt8]
    }

    private let source: AudioLayout
    private let target: AudioLayout
    /// Whether ``followTheClock(after:_:)`` keeps its output on CLOCK_MONOTONIC.
    private let onTheClock: Bool
    private let state: OrderedMutex<State>

    init(from source: AudioLayout, to target: AudioLayout, onTheClock: Bool) throws(ConversionError) {
        self.source = source
        self.target = target
        self.onTheClock = onTheClock
        state = OrderedMutex(.audioWork, State(resampler: try AudioResampler(from: source, to: target)))
    }

    func take(_ period: PooledFrame, into node: MediaNode) {
        let (gap, made) = state.withLock { state -> (DropTally?, [Made]) in
            var gap: DropTally?
            if state.nextInput != period.sequence { gap = restart(at: period, &state) }
            state.nextInput = period.sequence + 1
            var made: [Made] = []
            do {
                made = try cut(period, &state)
                if onTheClock { try followTheClock(after: period, &state) }
            } catch {
                node.logger.error("\(node.name): \(error)")
            }
            return (gap, made)
        }
        if let gap { node.report(gap) }
        let duration = Int64(target.framesPerPeriod) * 1_000_000_000 / Int64(target.sampleRate)
        for period in made {
            node.publish(sequence: period.sequence, timestampNanoseconds: period.timestampNanoseconds, durationNanoseconds: duration) { slot in
                period.bytes.withUnsafeBytes { slot.copyMemory(from: $0) }
                return period.bytes.count
            }
        }
    }

    /// Resamples one of the microphone's periods; the variant's periods it completes.
    private func cut(_ period: PooledFrame, _ state: inout State) throws -> [Made] {
        var converted = [UInt8](repeating: 0, count: state.resampler.maximumOutputFrames(forInput: source.framesPerPeriod)
                                    * target.bytesPerFrame)
        let resampler = state.resampler
        let written = try converted.withUnsafeMutableBytes { try resampler.convert(period.bytes, into: $0) }
        state.produced += Int64(written)
        let skipped = min(state.skip, written)
        state.skip -= skipped
        state.pending += converted[skipped * target.bytesPerFrame..<written * target.bytesPerFrame]
        let frames = UInt64(target.framesPerPeriod)
        var made: [Made] = []
        while state.pending.count - made.count * target.capacity >= target.capacity {
            let offset = made.count * target.capacity
            let timestamp = state.origin.timestampNanoseconds
                + (Int64(state.position) - Int64(state.origin.position)) * 1_000_000_000 / Int64(target.sampleRate)
            made.append(Made(sequence: state.position / frames, timestampNanoseconds: timestamp,
                             bytes: Array(state.pending[offset..<offset + target.capacity])))
            state.position += frames
        }
        state.pending.removeFirst(made.count * target.capacity)
        return made
    }

    /// Keeps the output on CLOCK_MONOTONIC (ARCHITECTURE.md, "Sound on the
    /// picture's clock"): a sound card's clock is tens of ppm off, so its
    /// frames at the nominal rate would drift from the picture (360 ms an hour
    /// at 100 ppm) and so would the timestamps counted from them. After each
    /// period, the output frame its end comes out at (frames written and held)
    /// is compared with where its capture time puts it; once that is a
    /// millisecond off, the resampler's ratio is corrected by the difference
    /// over the next quarter second, every period from then on — the error
    /// stays within a few frames of 0, a few ppm of pitch.
    private func followTheClock(after period: PooledFrame, _ state: inout State) throws {
        let rate = Double(target.sampleRate)
        // In doubles: a microphone may run for days, past what nanoseconds × rate hold in 64 bits.
        let end = Double(period.timestampNanoseconds - state.origin.timestampNanoseconds) / 1e9
            + Double(source.framesPerPeriod) / Double(source.sampleRate)
        let expected = Double(state.origin.position) + end * rate
        let error = Double(state.produced + Int64(state.resampler.delayedFrames)) - expected
        guard state.compensating || abs(error) > rate / 1000 else { return }
        state.compensating = true
        // At most 2 % faster or slower: a card further off is broken, and its listeners hear it late or early.
        let distance = target.sampleRate / 4
        let limit = Double(target.sampleRate / 50)
        try state.resampler.compensate(by: -Int(max(-limit, min(limit, error)).rounded()), over: distance)
    }

    /// The first period, or one after a gap: the resampler starts afresh and
    /// output starts at the first period boundary at or after where this
    /// period's first sample falls. Returns the periods not made since, if any.
    private func restart(at period: PooledFrame, _ state: inout State) -> DropTally? {
        var start = period.sequence * UInt64(source.framesPerPeriod) * UInt64(target.sampleRate) / UInt64(source.sampleRate)
        if onTheClock && state.nextInput != nil {
            // On the clock the output's positions are the clock's, not the microphone's: the period falls where its
            // capture time puts it — never before what was made (a microphone running slow is ahead of its numbers).
            let elapsed = Double(period.timestampNanoseconds - state.origin.timestampNanoseconds) / 1e9
            let clock = (Double(state.origin.position) + elapsed * Double(target.sampleRate)).rounded()
            start = max(state.position, clock > 0 ? UInt64(clock) : 0)
        }
        let frames = UInt64(target.framesPerPeriod)
        let aligned = (start + frames - 1) / frames * frames
        var gap: DropTally?
        if state.nextInput != nil {
            if let fresh = try? AudioResampler(from: source, to: target) {
                state.resampler = fresh
                state.compensating = false
            }
            let lost = aligned > state.position ? aligned / frames - state.position / frames : 0
            if lost > 0 {
                var drops = DropTally()
                drops.add(.discontinuity, count: Int(lost), sequence: aligned / frames - 1)
                gap = drops
            }
        }
        state.pending = []
        state.produced = Int64(start)
        state.position = aligned
        state.skip = Int(aligned - start)
        state.origin = (start, period.timestampNanoseconds)
        return gap
    }
}
