import CameraIPC
import CameraMedia
import Foundation
import Logging
import Synchronization

/// A virtual microphone capturing (``VirtualMicrophone/startCapture(budget:logger:)``): the
/// ``AudioStamp`` signal (or a plain tone, for levels, or sync clicks) at 48 kHz in periods of its layout, made on its own
/// thread on absolute CLOCK_MONOTONIC deadlines and published by its
/// ``MediaNode``, whose subscriptions get each period as a camera's streams get
/// a frame — the same pool, in-flight limits and drop accounting.
///
/// Period *n* holds the samples from position *n* × frames-per-period on; its
/// timestamp is the capture time of its first sample (the start plus the
/// position over the rate, so periods never drift from the clock — or drift by
/// exactly `driftPPM`, when it is given one) and it is
/// published once its last sample is due. Like a sound card's ring, it holds
/// ``bufferPeriods`` periods: a thread held up for less than that (a busy
/// machine) catches up, publishing the periods it owes at once; one that falls
/// further behind skips to the period due now, as an ALSA device overruns: the
/// periods skipped are reported to every subscription as a discontinuity, and
/// the stamp's positions skip with them.
final class VirtualMicrophoneCapture: AudioCapture {
    typealias Signal = VirtualMicrophone.Signal

    let node: MediaNode
    let layout: AudioLayout
    let signal: Signal
    private let thread: PollingThread
    private let stopRequested = Atomic(false)

    /// Starts it.
    ///
    /// - Throws: INVALID_ARGUMENT for a rate other than 48 kHz; RESOURCE_EXHAUSTED
    ///   when its pool or thread cannot be made.
    init(name: String, layout: AudioLayout, signal: Signal = .stamp, gain: VirtualMicrophone.Gain = .init(), driftPPM: Int = 0,
         slots: Int? = nil, budget: ClientBudget, logger: Logger) throws(CameraError) {
        guard layout.sampleRate == AudioStamp.sampleRate else {
            throw CameraError(.invalidArgument, "a virtual microphone runs at \(AudioStamp.sampleRate) Hz, not \(layout.sampleRate)")
        }
        self.layout = layout
        self.signal = signal
        node = try MediaNode(name: name, media: .audio(layout), slots: slots ?? layout.poolSlots, budget: budget, logger: logger)
        do {
            thread = try PollingThread(name: "camerad-mic", priority: .sound)
            // The thread keeps this object until it ends.
            try thread.start { [self] thread in
                Self.run(layout: layout, signal: signal, gain: gain, driftPPM: driftPPM, node: node, stop: stopRequested, thread: thread)
            }
        } catch {
            node.end()
            throw CameraError(.resourceExhausted, "cannot start \(name)'s thread: \(error)")
        }
    }

    /// Stops making periods and ends every subscription (as asked: no error).
    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        thread.wake()
        thread.join()
        node.end()
    }

    /// Periods it holds for a late thread, as a sound card's ring does (80 ms of 10 ms periods).
    static let bufferPeriods = 8

    private static func run(layout: AudioLayout, signal: Signal, gain: VirtualMicrophone.Gain, driftPPM: Int, node: MediaNode,
                            stop: borrowing Atomic<Bool>, thread: PollingThread) {
        let frames = UInt64(layout.framesPerPeriod)
        let rate = layout.sampleRate
        let start = monotonicNanoseconds()
        /// When frame `position` was captured.
        func timestamp(of position: UInt64, start: Int64) -> Int64 {
            SyncMarks.captureTime(of: position, start: start, rate: rate, driftPPM: driftPPM)
        }
        let duration = timestamp(of: frames, start: 0)
        var sequence: UInt64 = 0
        while !stop.load(ordering: .relaxed) {
            // Due once its last sample is captured.
            var due = timestamp(of: (sequence + 1) * frames, start: start)
            let now = monotonicNanoseconds()
            if now > due + duration * Int64(bufferPeriods) {
                // Behind by more than its buffer: the periods it could not hold are lost.
                let caughtUp = UInt64((now - start) / duration) - 1
                if caughtUp > sequence {
                    var drops = DropTally()
                    drops.add(.discontinuity, count: Int(caughtUp - sequence), sequence: caughtUp - 1)
                    node.report(drops)
                    sequence = caughtUp
                    due = timestamp(of: (sequence + 1) * frames, start: start)
                }
            }
            var remaining = due - monotonicNanoseconds()
            while remaining > 0, !stop.load(ordering: .relaxed) {
                _ = thread.wait(timeout: remaining)
                remaining = due - monotonicNanoseconds()
            }
            if stop.load(ordering: .relaxed) { break }
            let position = sequence * frames
            node.publish(sequence: sequence, timestampNanoseconds: timestamp(of: position, start: start),
                         durationNanoseconds: duration) { slot in
                render(layout, signal: signal, gain: gain.value, from: position, start: start, driftPPM: driftPPM, into: slot)
            }
            sequence += 1
        }
    }

    /// One period of `signal` from `position` (of a microphone started at
    /// `start`), times `gain`, in the layout's sample format; the bytes written.
    static func render(_ layout: AudioLayout, signal: Signal = .stamp, gain: Float = 1, from position: UInt64, start: Int64 = 0,
                       driftPPM: Int = 0, into slot: UnsafeMutableRawBufferPointer) -> Int {
        // Made in floats on the stack, then stored in the layout's format: no allocation a period.
        withUnsafeTemporaryAllocation(of: Float.self, capacity: layout.framesPerPeriod * layout.channels) { floats in
            switch signal {
            case .stamp:
                AudioStamp.render(into: floats, channels: layout.channels, from: position)
            case .tone(let amplitude):
                AudioStamp.renderTone(into: floats, channels: layout.channels, from: position, amplitude: amplitude)
            case .syncClicks:
                SyncMarks.renderClicks(into: floats, channels: layout.channels, from: position, start: start, rate: layout.sampleRate,
                                       driftPPM: driftPPM)
            }
            if gain != 1 {
                for index in floats.indices { floats[index] *= gain }
            }
            layout.sampleFormat.store(UnsafeBufferPointer(floats), into: slot)
        }
        return layout.capacity
    }
}
