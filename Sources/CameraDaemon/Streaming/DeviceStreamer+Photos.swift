import Dispatch
import Foundation

/// Photos: a frame taken from the capture, starting it for the shot when idle.
extension DeviceStreamer {
    /// A photo: waiting for the capture to run (no continuation yet), then for
    /// the next frame after `skip` more.
    struct PhotoTap {
        let id: UInt64
        var skip = 0
        var continuation: CheckedContinuation<PhotoFrame, any Error>?
        /// Why it was ended before it waited for its frame.
        var failure: (any Error)?
    }

    /// One frame taken for a photo: its bytes (copied), and the mode it was made in.
    struct PhotoFrame: Sendable {
        let bytes: [UInt8]
        let mode: CaptureMode
        let sequence: UInt64
        let timestampNanoseconds: Int64
    }

    /// How long a photo waits for its frame at least; longer for slow modes:
    /// twice the frames it lets pass, and one more.
    static let photoTimeout: Duration = .seconds(5)

    /// The next frame the device makes, copied: from the running capture, or
    /// from a capture started in `idleMode` for it (after `warmUpFrames`, which a
    /// real camera needs to settle its exposure), stopped again after. At least
    /// `skipping` frames are let pass first (a flash lights a later one).
    ///
    /// - Throws: ``CameraError`` when the device cannot start, fails, goes, or makes
    ///   no frame in time (``photoTimeout``); `CancellationError` when the call goes.
    func takePhotoFrame(idleMode: CaptureMode, warmUpFrames: Int, skipping: Int = 0) async throws -> PhotoFrame {
        let (id, startsIt, jobs) = state.withLock { state in
            defer { state.nextStreamID += 1 }
            let startsIt = state.lifecycle.mode == nil
            // A user of the capture from now, so a stream closing meanwhile does not stop it.
            state.photoTaps.append(PhotoTap(id: state.nextStreamID))
            return (state.nextStreamID, startsIt, planned(state.lifecycle.handle(.start(idleMode))))
        }
        perform(jobs)
        let frameDuration = (runningMode ?? idleMode).frameDuration.nanoseconds
        let waitNanoseconds = max(Self.photoTimeout.nanoseconds, 2 * Int64(max(warmUpFrames, skipping) + 1) * frameDuration)
        let timeout = DispatchWorkItem { [weak self] in
            let seconds = String(format: "%.1f", Double(waitNanoseconds) / 1e9)
            self?.failPhoto(id, CameraError(.timedOut, "\(self?.device.uniqueID ?? "the device") made no frame for the photo within \(seconds) s; try again"))
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(waitNanoseconds)), execute: timeout)
        defer { timeout.cancel() }
        do {
            try await waitUntilRunning()
        } catch {
            let jobs = state.withLock { state -> [CaptureLifecycle.Job] in
                state.photoTaps.removeAll { $0.id == id }
                return stopIfUnused(&state)
            }
            perform(jobs)
            throw error
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PhotoFrame, any Error>) in
                let (failure, jobs) = state.withLock { state -> ((any Error)?, [CaptureLifecycle.Job]) in
                    guard let index = state.photoTaps.firstIndex(where: { $0.id == id }) else {
                        return (CameraError(.timedOut, "the photo of \(device.uniqueID) ended before its frame came; try again"), [])
                    }
                    if let failure = state.photoTaps[index].failure {
                        state.photoTaps.remove(at: index)
                        return (failure, stopIfUnused(&state))
                    }
                    state.photoTaps[index].skip = startsIt ? max(skipping, warmUpFrames) : skipping
                    state.photoTaps[index].continuation = continuation
                    return (nil, [])
                }
                if let failure { continuation.resume(throwing: failure) }
                perform(jobs)
            }
        } onCancel: {
            failPhoto(id, CancellationError())
        }
    }

    /// Ends a photo with `error` (resumed outside the lock, as every waiter here
    /// is: see ARCHITECTURE.md), and stops a capture only it kept. A photo not
    /// yet waiting for its frame finds `error` when it comes to wait.
    func failPhoto(_ id: UInt64, _ error: any Error) {
        let (continuation, jobs) = state.withLock { state -> (CheckedContinuation<PhotoFrame, any Error>?, [CaptureLifecycle.Job]) in
            guard let index = state.photoTaps.firstIndex(where: { $0.id == id }) else { return (nil, []) }
            guard let continuation = state.photoTaps[index].continuation else {
                state.photoTaps[index].failure = error
                return (nil, [])
            }
            state.photoTaps.remove(at: index)
            return (continuation, stopIfUnused(&state))
        }
        continuation?.resume(throwing: error)
        perform(jobs)
    }
}
