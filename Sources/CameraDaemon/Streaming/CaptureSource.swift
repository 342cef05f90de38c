/// The source of a device's graph: its capture — where it is in its
/// lifecycle, each generation's capture stream, the buffers it shares, who
/// waits for it to run, the numbers of its frames. A value in its
/// ``DeviceStreamer``'s state, under the streamer's lock; its jobs run on the
/// device's executor (`DeviceStreamer+Capture.swift`), and change it through
/// the methods below.
struct CaptureSource {
    var lifecycle = CaptureLifecycle()
    /// Each generation's capture, from its start job to its stop job.
    var captures: [UInt64: any CaptureStream] = [:]
    /// The running capture's buffers, when they can be shared: the first
    /// slots of the pool of the device's own frames.
    var deviceBuffers: DeviceBuffers?
    /// Waiting for the capture now starting to run (or fail).
    var startWaiters: [CheckedContinuation<Void, any Error>] = []
    var lastSequence: UInt64?
    var framesCaptured: UInt64 = 0
    /// Why the streams were last ended all at once (the device went or
    /// failed), for a stream that was opening then: it is told that, not
    /// that the device stopped as it started. Cleared by the next open.
    var interruption: CameraError?

    /// What a waiter for the capture to run is told now: it runs, or why it
    /// does not; nil while it starts (the waiter is kept, to be woken with
    /// the start's outcome: ``takeStartWaiters()``).
    mutating func waitUntilRunning(
        _ waiter: CheckedContinuation<Void, any Error>, device: String
    ) -> Result<Void, CameraError>? {
        switch lifecycle.state {
        case .running: return .success(())
        case .starting(_, _, stopWhenStarted: false):
            startWaiters.append(waiter)
            return nil
        case .failed(let reason):
            return .failure(reason)
        case .starting, .stopping, .idle:
            // Ended by an interruption before this waiter came: told why.
            return .failure(interruption ?? CameraError(.deviceBusy, "\(device) stopped as it started; try again"))
        }
    }

    /// The waiters of the start that just settled, to wake once the lock is let go.
    mutating func takeStartWaiters() -> [CheckedContinuation<Void, any Error>] {
        defer { startWaiters.removeAll() }
        return startWaiters
    }

    /// A start job's capture, now running as the current one: its frames
    /// are numbered anew, its buffers shared.
    mutating func run(_ capture: any CaptureStream) {
        lastSequence = nil
        deviceBuffers = capture.buffers
    }

    /// The capture of `generation`, taken for its stop job; its buffers are
    /// no longer shared.
    mutating func takeCapture(_ generation: UInt64) -> (any CaptureStream)? {
        let capture = captures.removeValue(forKey: generation)
        if let buffers = capture?.buffers, buffers === deviceBuffers { deviceBuffers = nil }
        return capture
    }
}
