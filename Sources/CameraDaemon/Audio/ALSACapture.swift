import CALSA
import CameraIPC
import CameraMedia
import Glibc
import Logging
import Synchronization

/// An ALSA microphone capturing: periods read on a thread of its own as the
/// device fills them, published by its ``MediaNode``.
///
/// Period *n* holds frames from *n* × period frames on: positions count every
/// frame the device captured, so a gap in the numbers is exactly what was
/// lost. A period's timestamp is its first sample's capture time on
/// CLOCK_MONOTONIC, from the device's own timestamp of its hardware pointer
/// (`snd_pcm_htimestamp`): it follows the device's clock, which drifts from
/// the monotonic clock by tens of ppm — measured, and logged every minute. An
/// overrun (the thread held up past the device's second of buffer)
/// restarts the device; the frames lost, measured by the timestamps (to a few
/// samples), are reported as a discontinuity of whole periods and skipped in
/// the positions. A device that fails (it
/// was unplugged) ends the node with an interruption and calls `onFailure`.
final class ALSACapture: AudioCapture {
    let node: MediaNode
    private let thread: PollingThread
    private let stopRequested = Atomic(false)

    /// Takes `pcm` over: its capture thread reads it and closes it as it ends
    /// (on a failure here, it is closed as it is let go).
    init(pcm: sending ALSAPCM, layout: AudioLayout, name: String, budget: ClientBudget, logger: Logger,
         onFailure: @escaping @Sendable (CameraError) -> Void) throws(CameraError) {
        node = try MediaNode(name: name, media: .audio(layout), slots: layout.poolSlots, budget: budget, logger: logger)
        do {
            thread = try PollingThread(name: "camerad-alsa", watching: pcm.pollDescriptor, priority: .sound)
            try thread.start { [self, node] thread in
                let failure = Self.run(pcm: pcm, layout: layout, node: node, stop: stopRequested, thread: thread, logger: logger)
                pcm.close()
                if let failure {
                    node.end(.deviceDisconnected, failure)
                    onFailure(failure)
                }
            }
        } catch {
            node.end()
            throw CameraError(.resourceExhausted, "cannot start \(name)'s capture thread: \(error)")
        }
    }

    /// Stops the capture thread, which closes the device before it ends.
    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        thread.wake()
        thread.join()
        node.end()
    }

    /// The capture thread; returns why the device failed, or nil when stopped as asked.
    private static func run(pcm: ALSAPCM, layout: AudioLayout, node: MediaNode, stop: borrowing Atomic<Bool>,
                            thread: PollingThread, logger: Logger) -> CameraError? {
        let frames = layout.framesPerPeriod
        let rate = Int64(layout.sampleRate)
        let periodNanoseconds = Int64(frames) * 1_000_000_000 / rate
        var scratch = [UInt8](repeating: 0, count: layout.capacity)
        var position: UInt64 = 0
        /// A period's capture time and position the others are measured from (the
        /// first, and the first after an overrun), and when drift was last logged.
        var origin: (position: UInt64, time: Int64)?
        var overran = false
        var reported = monotonicNanoseconds()
        if let failure = start(pcm) { return failure }
        while !stop.load(ordering: .relaxed) {
            _ = thread.wait(timeout: periodNanoseconds * 4)
            while !stop.load(ordering: .relaxed) {
                // A whole period or nothing: a partial read would cut the periods off their places.
                let available = snd_pcm_avail_update(pcm.handle)
                let read = available >= 0 && available < frames ? -Int(EAGAIN)
                    : available < 0 ? Int(available)
                    : scratch.withUnsafeMutableBytes { snd_pcm_readi(pcm.handle, $0.baseAddress, snd_pcm_uframes_t(frames)) }
                if read == -Int(EAGAIN) { break }
                if read == -Int(EPIPE) || read == -Int(ESTRPIPE) {
                    // Overrun: restart, and count what was lost from the device's clock.
                    if let failure = start(pcm) { return failure }
                    overran = true
                    continue
                }
                if read < 0 { return ALSAPCM.error(Int32(read), "reading \(pcm.path)") }
                guard read == frames else { return CameraError(.internalError, "\(pcm.path) gave \(read) frames of a period of \(frames) it had") }
                var avail: snd_pcm_uframes_t = 0
                var stamp = timespec()
                let captured: Int64
                if snd_pcm_htimestamp(pcm.handle, &avail, &stamp) == 0, stamp.tv_sec > 0 {
                    let pointer = Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec)
                    captured = pointer - (Int64(avail) + Int64(frames)) * 1_000_000_000 / rate
                } else {
                    captured = monotonicNanoseconds() - periodNanoseconds
                }
                if overran, let measured = origin {
                    // Frames the device captured that never reached us, by its clock: whole periods reported lost.
                    overran = false
                    let expected = Double(measured.position) + Double(captured - measured.time) * Double(rate) / 1e9
                    let lost = max(0, expected - Double(position))
                    let periods = UInt64((lost / Double(frames)).rounded(.up))
                    if periods > 0 {
                        var drops = DropTally()
                        drops.add(.discontinuity, count: Int(periods), sequence: position / UInt64(frames) + periods - 1)
                        node.report(drops)
                        position += periods * UInt64(frames)
                    }
                    logger.notice("\(pcm.path) overran: about \(Int(lost)) frames lost, reported as \(periods) periods")
                    origin = (position, captured)
                }
                if origin == nil { origin = (position, captured) }
                node.publish(sequence: position / UInt64(frames), timestampNanoseconds: captured,
                             durationNanoseconds: periodNanoseconds) { slot in
                    scratch.withUnsafeBytes { slot.copyMemory(from: $0) }
                    return layout.capacity
                }
                position += UInt64(frames)
                let now = monotonicNanoseconds()
                if let origin, now - reported > 60_000_000_000, captured > origin.time {
                    reported = now
                    let measured = Double(position - origin.position) * 1e9 / Double(captured - origin.time)
                    logger.info("\(pcm.path) runs at \(String(format: "%.1f", measured)) Hz by CLOCK_MONOTONIC (\(String(format: "%+.0f", (measured / Double(rate) - 1) * 1e6)) ppm)")
                }
            }
        }
        return nil
    }

    /// Prepares and starts the device; a failure is the device's end.
    private static func start(_ pcm: ALSAPCM) -> CameraError? {
        let prepared = snd_pcm_prepare(pcm.handle)
        if prepared < 0 { return ALSAPCM.error(prepared, "preparing \(pcm.path)") }
        let started = snd_pcm_start(pcm.handle)
        if started < 0 { return ALSAPCM.error(started, "starting \(pcm.path)") }
        return nil
    }
}
