/// The source of a device's graph: its capture — where it is in its
/// lifecycle, each generation's capture stream, the buffers it shares, who
/// waits for it to run, the numbers of its frames. A value in its
/// ``DeviceStreamer``'s state, under the streamer's lock; its jobs run on the
/// device's executor (`DeviceStreamer+Capture.swift`).
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
}
