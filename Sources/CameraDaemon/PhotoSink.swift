import CameraIPC
import Foundation
import Synchronization

/// A photo's stream of the device's frames: a sink inside the daemon, on the
/// device's own variant, that hands each frame to the photo waiting for it.
/// The photo reads the frame where the variant's worker put it (no copy of its
/// own when clients stream that variant too) and gives the slot back through
/// its handle (``FrameHandle/release()``), or by closing the stream.
///
/// It is opened with one frame in flight and late frames discarded, so frames
/// that come while the photo holds one are dropped for it alone (and not even
/// converted for it: ``DeviceStreamer`` converts only for a sink with room).
final class PhotoSink: FrameSink {
    private struct State {
        /// A frame not yet asked for (at most one: one frame in flight).
        var frame: FrameHandle?
        var waiter: CheckedContinuation<FrameHandle, any Error>?
        /// Why the stream ended, once it has.
        var failure: (any Error)?
    }
    private let state = OrderedMutex(.photoSink, State())
    /// Where the wait's deadline runs: the daemon's event loop.
    private let timers: EventLoop

    init(timers: EventLoop) {
        self.timers = timers
    }

    /// The next frame: one already here, else the next to come within `timeout`.
    ///
    /// - Throws: why the stream ended (the device went or failed), `TIMED_OUT`
    ///   naming `device` when no frame comes in time, `CancellationError` when
    ///   the call goes.
    func next(within timeout: Duration, of device: String) async throws -> FrameHandle {
        let timer = timers.schedule(after: timeout) { [weak self] in
            let seconds = String(format: "%.1f", timeout.seconds)
            self?.fail(CameraError(.timedOut, "\(device) made no frame for the photo within \(seconds) s; try again"))
        }
        defer { timer.stop() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<FrameHandle, any Error>? in
                    if let frame = state.frame {
                        state.frame = nil
                        return .success(frame)
                    }
                    if let failure = state.failure { return .failure(failure) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.wake(with: ready) }
            }
        } onCancel: {
            fail(CancellationError())
        }
    }

    /// Ends the wait, if any, with `error`; a later ``next(within:of:)`` throws it too.
    private func fail(_ error: any Error) {
        // Resumed outside the sink's lock: a cancelled task holds its own lock
        // while it calls `fail`, and resuming may take that lock.
        let waiter = state.withLock { state in
            if state.failure == nil { state.failure = error }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.wake(throwing: error)
    }

    // MARK: - FrameSink

    func started(_ news: StreamNews) {}

    func frame(_ frame: FrameHandle) -> Bool {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.frame = frame
                return nil as CheckedContinuation<FrameHandle, any Error>?
            }
            state.waiter = nil
            return waiter
        }
        waiter?.wake(returning: frame)
        return true
    }

    func dropped(_ drops: DropTally) {}

    func formatChanged(_ news: StreamNews) {}

    func interrupted(_ reason: StreamInterruption, _ error: CameraError) {
        fail(error)
    }

    func end(with error: CameraError?) {
        fail(error ?? CameraError(.timedOut, "the photo's stream ended before its frame came; try again"))
    }
}
