import CameraIPC
import CameraMedia

/// The device's capture: ``CaptureLifecycle`` decides, the jobs it asks for run
/// on the device's executor, one after another, and report back.
extension DeviceStreamer {
    /// The jobs of a lifecycle outcome; an illegal transition is our bug, logged.
    func planned(_ outcome: CaptureLifecycle.Outcome) -> [CaptureLifecycle.Job] {
        switch outcome {
        case .jobs(let jobs): return jobs
        case .ignored: return []
        case .illegal(let reason):
            logger.error("\(device.uniqueID): capture lifecycle: \(reason)")
            assertionFailure(reason)
            return []
        }
    }

    /// Stops the capture when nothing needs it any more.
    func stopIfUnused(_ state: inout State) -> [CaptureLifecycle.Job] {
        state.isUsed ? [] : planned(state.source.lifecycle.handle(.stop))
    }

    /// Queues jobs on the device's executor, in order. Call outside the lock.
    func perform(_ jobs: [CaptureLifecycle.Job]) {
        for job in jobs {
            switch job {
            case .start(let mode, let generation):
                device.executor.enqueue { [self] in runStart(mode, generation) }
            case .stop(let generation):
                device.executor.enqueue { [self] in runStop(generation) }
            }
        }
    }

    /// Waits until the capture runs. Returns at once if it does.
    ///
    /// - Throws: why it could not start, or ended before it ran.
    func waitUntilRunning() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let result = locked { state in state.source.waitUntilRunning(continuation, device: device.uniqueID) }
            if let result { continuation.wake(with: result) }
        }
    }

    /// A start job, on the executor.
    private func runStart(_ mode: CaptureMode, _ generation: UInt64) {
        let result = Result {
            try device.startCapture(mode, onFrame: { [weak self] frame in
                self?.deliver(frame, generation: generation)
            }, onFailure: { [weak self] error in
                self?.captureFailed(error, generation: generation)
            })
        }
        // The variants' pools for the new capture, made here with the lock let go.
        var prepared: [FrameVariant: Result<VariantPool, CameraError>] = [:]
        if case .success(let capture) = result {
            for need in poolsToRebuild(mode, buffers: capture.buffers) {
                prepared[need.variant] = Result { () throws(CameraError) in try makePool(need) }
            }
        }
        typealias Settled = (waiters: [CheckedContinuation<Void, any Error>], outcome: Result<Void, CameraError>?, jobs: [CaptureLifecycle.Job])
        let (waiters, outcome, jobs) = locked { state -> Settled in
            switch result {
            case .success(let capture):
                state.source.captures[generation] = capture
                guard state.source.lifecycle.currentGeneration == generation else {
                    // Superseded: the stop job queued with the newer start stops it.
                    return ([], nil, planned(state.source.lifecycle.handle(.started(generation: generation))))
                }
                let jobs = planned(state.source.lifecycle.handle(.started(generation: generation)))
                let waiters = state.source.takeStartWaiters()
                guard state.source.lifecycle.isRunning else {
                    // It failed, or was no longer wanted, as it started: it stops again.
                    return (waiters, .failure(CameraError(.deviceBusy, "\(device.uniqueID) stopped as it started; try again")), jobs)
                }
                state.source.run(capture)
                rebuildPools(&state, prepared: prepared)
                logger.info("\(device.uniqueID): capturing \(mode)")
                if let reason = capture.unsharedBecause {
                    logger.notice("\(device.uniqueID): its buffers cannot be shared with clients (\(reason)); frames of its own format are copied")
                }
                return (waiters, .success(()), jobs)
            case .failure(let error):
                let failure = error as? CameraError ?? CameraError(.deviceBusy, "\(device.uniqueID) cannot start: \(error)")
                guard state.source.lifecycle.currentGeneration == generation else { return ([], nil, []) }
                let jobs = planned(state.source.lifecycle.handle(.startFailed(generation: generation, failure)))
                return (state.source.takeStartWaiters(), .failure(failure), jobs)
            }
        }
        if let outcome {
            for waiter in waiters { waiter.wake(with: outcome) }
        }
        perform(jobs)
    }

    /// A stop job, on the executor: stops the capture (waiting for its thread).
    /// The torch stays as it is: it is the client's that lit it
    /// (``ConfigurationClaims``), with or without a capture.
    private func runStop(_ generation: UInt64) {
        let capture = locked { state in state.source.takeCapture(generation) }
        capture?.stop()
        locked { state in _ = planned(state.source.lifecycle.handle(.stopped(generation: generation))) }
        if capture != nil { logger.info("\(device.uniqueID): capture stopped") }
    }

    /// The device failed under a capture: gone (the registry removes it and ends
    /// the streams as disconnected), or failed in place (the streams end as failed).
    func captureFailed(_ error: CameraError, generation: UInt64) {
        let (current, jobs) = locked { state in
            (state.source.lifecycle.currentGeneration == generation, planned(state.source.lifecycle.handle(.failed(generation: generation))))
        }
        perform(jobs)
        guard current else { return }
        logger.error("\(device.uniqueID): capture ended: \(error.message)")
        if error.code == .deviceDisconnected {
            onDeviceLost(error)
        } else {
            interrupt(.deviceFailed, error)
        }
    }

    /// The lock holder changed the device's mode (``CameraBackend/configure(_:)``
    /// already has it): a capture restarts in it, after whatever is queued on the
    /// device. Every stream keeps its own output (pixel format, size,
    /// orientation), gets a pool made from the new frames and a FormatChanged;
    /// the old pool's slots stay valid until released, so no frame is torn. A
    /// stream whose output cannot be made from the new mode ends with
    /// UNSUPPORTED_FORMAT. An idle device just starts in it next time.
    ///
    /// - Throws: ``CameraError`` when the device will not start in `mode` (it is
    ///   started again in the mode it ran; if that fails too, its streams end).
    func switchMode(to mode: CaptureMode) async throws {
        let (previous, jobs) = locked { state -> (CaptureMode?, [CaptureLifecycle.Job]) in
            guard let running = state.source.lifecycle.mode, running != mode else { return (nil, []) }
            return (running, planned(state.source.lifecycle.handle(.restart(mode))))
        }
        guard let previous else { return }
        perform(jobs)
        do {
            try await waitUntilRunning()
        } catch {
            let failure = error as? CameraError ?? CameraError(.deviceBusy, "\(device.uniqueID) cannot start in \(mode): \(error)")
            // Back to what ran, so the streams go on.
            let jobs = locked { state in
                state.isUsed ? planned(state.source.lifecycle.handle(.start(previous))) : []
            }
            perform(jobs)
            if !jobs.isEmpty, (try? await waitUntilRunning()) == nil { interrupt(.deviceFailed, failure) }
            throw failure
        }
    }
}
