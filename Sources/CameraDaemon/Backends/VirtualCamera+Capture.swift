import CameraIPC
import CameraMedia
import Foundation
import Synchronization

extension VirtualCamera {
    /// Virtual cameras do not fail: `onFailure` is never called.
    func startCapture(
        _ mode: CaptureMode, onFrame: @escaping @Sendable (CapturedFrame) -> Void,
        onFailure: @escaping @Sendable (CameraError) -> Void
    ) throws -> any CaptureStream {
        do {
            return try VirtualCameraCapture(mode: mode, options: options, picture: { [weak self] in self?.picture ?? (1, 1) },
                                            onFrame: onFrame)
        } catch {
            throw CameraError(.resourceExhausted, "\(uniqueID) cannot make its buffers: \(error); free some memory and try again")
        }
    }

    /// How the picture is drawn, from the controls: its ``TestPattern/level``
    /// (the brightness control; in manual exposure, exposure time (250 = 1) and
    /// gain; the torch; a flash strobe; in automatic exposure the camera makes up for the rest)
    /// and its ``TestPattern/zoom`` (the zoom control over its minimum).
    var picture: (level: Float, zoom: Double) {
        let (controls, strobeUntil) = state.withLock { ($0.controls, $0.strobeUntil) }
        func value(_ id: ControlID) -> Int64? { controls.first { $0.id == id }?.value }
        var level: Float = 1
        if let brightness = value(.brightness) { level *= 1 + Float(brightness - 128) / 256 }
        if value(.exposureAuto) == ExposureAutoMode.manual.rawValue {
            level *= Float(value(.exposureAbsolute) ?? 250) / 250
            level *= 1 + Float(value(.gain) ?? 0) / 255
        }
        if value(.flashLEDMode) == FlashLEDMode.torch.rawValue {
            level *= 1 + Float(value(.flashTorchIntensity) ?? 100) / 200
        }
        if monotonicNanoseconds() < strobeUntil { level *= 1.8 }
        let zoom = controls.first { $0.id == .zoomAbsolute }
            .map { $0.minimum > 0 ? Double($0.value) / Double($0.minimum) : 1 } ?? 1
        return (min(4, max(0, level)), zoom)
    }
}

/// The capture thread of a virtual camera: draws ``TestPattern`` frames at the
/// mode's frame duration, on absolute CLOCK_MONOTONIC deadlines, into one of a
/// few buffers in shared memory (``DeviceBuffers``), and hands each to the
/// streamer, which gives it back when its conversions are done and no client
/// holds it (the device's own format is shared as drawn, no copy). A frame's timestamp is its deadline. When it falls more than
/// a frame behind, it skips ahead as a real camera would, leaving a gap in the
/// sequence numbers. It sleeps until a deadline in its ``PollingThread``'s
/// wait, so ``stop()`` wakes it at once instead of after the frame.
final class VirtualCameraCapture: CaptureStream, Sendable {
    private let stopRequested = Atomic(false)
    private let thread: PollingThread
    let buffers: DeviceBuffers?

    init(
        mode: CaptureMode, options: VirtualCamera.Options,
        picture: @escaping @Sendable () -> (level: Float, zoom: Double),
        onFrame: @escaping @Sendable (CapturedFrame) -> Void
    ) throws(SystemError) {
        let thread = try PollingThread(name: "camerad-capture")
        self.thread = thread
        let buffers = try DeviceBuffers(memfdNamed: "camerad-capture", count: Self.bufferCount,
                                        bufferSize: mode.layout.capacity,
                                        leases: BufferLeases(count: Self.bufferCount) { thread.wake() })
        self.buffers = buffers
        // The thread keeps this object until it ends.
        try thread.start { [self] thread in
            Self.run(mode: mode, options: options, picture: picture, stop: stopRequested,
                     thread: thread, buffers: buffers, onFrame: onFrame)
        }
    }

    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        thread.wake()
        thread.join()
    }

    /// Buffers a virtual camera draws into, as many as a V4L2 capture asks for:
    /// each output's worker holds up to two frames, and one is being drawn. The
    /// one back last is drawn into next, so buffers never needed at once are
    /// never touched.
    static let bufferCount = V4L2Camera.bufferCount

    private static func run(
        mode: CaptureMode, options: VirtualCamera.Options, picture: () -> (level: Float, zoom: Double),
        stop: borrowing Atomic<Bool>,
        thread: PollingThread, buffers: DeviceBuffers, onFrame: (CapturedFrame) -> Void
    ) {
        let layout = mode.layout
        let pattern = TestPattern(width: layout.width, height: layout.height)
        // Stopped once no frame is converted any more (clients may still hold buffers).
        let leases = buffers.leases
        defer { leases.waitUntilFramesGone { _ = thread.wait() } }
        let duration = mode.frameDuration.nanoseconds
        let start = monotonicNanoseconds()
        var sequence: UInt64 = 0
        // The stamp each buffer shows over the picture as drawn now: a static
        // picture redraws only the stamp blocks that differ.
        var drawn = [FrameStamp?](repeating: nil, count: buffers.count)
        while !stop.load(ordering: .relaxed) {
            var timestamp = start + Int64(sequence) * duration
            if options.unthrottled {
                // As fast as frames are delivered: one converting, the next ready.
                leases.waitUntilFree(atMostFrames: 1) { _ = thread.wait() }
                if stop.load(ordering: .relaxed) { break }
                timestamp = monotonicNanoseconds()
            } else {
                let now = monotonicNanoseconds()
                if now > timestamp + duration {
                    // Behind: skip to the frame due now.
                    sequence = UInt64((now - start) / duration)
                    timestamp = start + Int64(sequence) * duration
                }
                // Until the frame is due; woken early by a stop (any other wake-up: it sleeps on).
                var remaining = timestamp - monotonicNanoseconds()
                while remaining > 0, !stop.load(ordering: .relaxed) {
                    _ = thread.wait(timeout: remaining)
                    remaining = timestamp - monotonicNanoseconds()
                }
                if stop.load(ordering: .relaxed) { break }
            }
            defer { sequence += 1 }
            let stamp = FrameStamp(sequence: UInt32(truncatingIfNeeded: sequence), timestampNanoseconds: timestamp)
            var wanted = picture()
            if options.syncMarks && SyncMarks.flashes(frameAt: timestamp, duration: duration) { wanted.level = SyncMarks.flashLevel }
            if wanted.level != pattern.level || wanted.zoom != pattern.zoom {
                pattern.level = wanted.level
                pattern.zoom = wanted.zoom
                drawn = drawn.map { _ in nil }
            }
            // Every buffer still out (its conversions behind, or held by
            // clients): the frame is lost, as a camera out of buffers loses it;
            // the gap in the numbers says so.
            guard let index = leases.take() else { continue }
            let buffer = buffers.bytes(index)
            var used = layout.capacity
            if layout.format == .mjpeg {
                // Encoded anew each frame, then put in the buffer as a camera's would be.
                guard let jpeg = try? pattern.renderJPEG(stamp), jpeg.count <= buffer.count else {
                    leases.frameDone(index)
                    break
                }
                jpeg.withUnsafeBytes { buffer.copyMemory(from: $0) }
                used = jpeg.count
            } else {
                pattern.render(stamp, format: layout.format, into: buffer, over: options.staticPicture ? drawn[index] : nil)
                drawn[index] = stamp
            }
            onFrame(CapturedFrame(bytes: UnsafeRawBufferPointer(rebasing: buffer[..<used]), sequence: sequence,
                                  timestampNanoseconds: timestamp, durationNanoseconds: duration,
                                  buffer: DeviceBuffers.Buffer(buffers: buffers, index: index),
                                  giveBack: { leases.frameDone(index) }))
        }
    }
}
