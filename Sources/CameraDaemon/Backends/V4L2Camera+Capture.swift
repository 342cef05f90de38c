import CameraIPC
import CameraMedia
internal import CCameraShims
import Foundation
import Glibc
import Synchronization
import V4L2

extension V4L2Camera {
    /// Buffers the driver fills: enough to ride out a capture thread held up for
    /// a quarter second at 30 fps.
    static let bufferCount = 8

    /// Sets the node to `mode` and streams from it.
    ///
    /// - Throws: `DEVICE_BUSY` when another program streams from it,
    ///   `UNSUPPORTED_FORMAT` when the driver will not take the mode.
    func startCapture(
        _ mode: CaptureMode, onFrame: @escaping @Sendable (CapturedFrame) -> Void,
        onFailure: @escaping @Sendable (CameraError) -> Void
    ) throws -> any CaptureStream {
        do {
            let device = try V4L2Device(path: devicePath)
            let wanted = mode.format
            let format = try device.setFormat(fourcc: wanted.pixelFormat.fourcc, width: wanted.width, height: wanted.height)
            guard wanted.matches(PixelFormat(fourcc: format.fourcc), format.width, format.height),
                  format.planes.count == 1
            else {
                throw CameraError(.unsupportedFormat,
                                  "\(uniqueID) would not take \(mode); it gave \(PixelFormat(fourcc: format.fourcc).code) \(format.width)x\(format.height) in \(format.planes.count) plane(s)")
            }
            if !mode.format.frameRateRanges.isEmpty {
                _ = try? device.setFrameInterval(V4L2Fraction(mode.frameDuration.numerator, mode.frameDuration.denominator))
            }
            let queue = try V4L2BufferQueue(device: device, count: Self.bufferCount)
            try queue.start()
            let capture = try V4L2Capture(queue: queue, mode: mode, bytesPerLine: Int(format.planes[0].bytesPerLine),
                                          onFrame: onFrame, onEnd: { [weak self] error in
                self?.setCapturing(false)
                guard let error, let self else { return }
                onFailure(error.rpcError(for: uniqueID))
                if error.meansDeviceLost { onLost(devicePath) }
            })
            setCapturing(true)
            return capture
        } catch let error as V4L2Error {
            if error.meansBusy { markBusy() }
            throw error.rpcError(for: uniqueID)
        }
    }
}

/// The capture thread of a V4L2 node: waits on the node with poll(2), hands
/// each filled buffer to the streamer as a frame, and queues the buffer again
/// once that frame's last user lets go (its conversions run on other threads,
/// and clients may hold it: ``DeviceBuffers``).
///
/// The buffers are exported as dma-bufs (`VIDIOC_EXPBUF`) when the driver can
/// and their rows are tight, so the device's own format reaches clients in
/// them. Rows padded by the driver (bytes-per-line wider than the pixels) are
/// packed first, into memory of the buffer's own, so the streamer always sees
/// tightly packed frames. Sequence numbers are the driver's, so a gap is a
/// frame it lost (also while every buffer is out). A V4L2 error ends the thread
/// and is reported through `onEnd` (nil when stopped); either way the thread
/// waits for every frame to go before it stops the node.
final class V4L2Capture: CaptureStream, Sendable {
    private let thread: PollingThread
    private let stopped = Atomic(false)
    let buffers: DeviceBuffers?
    let unsharedBecause: String?

    init(
        queue: sending V4L2BufferQueue, mode: CaptureMode, bytesPerLine: Int,
        onFrame: @escaping @Sendable (CapturedFrame) -> Void, onEnd: @escaping @Sendable (V4L2Error?) -> Void
    ) throws(V4L2Error) {
        let thread: PollingThread
        do {
            thread = try PollingThread(name: "camerad-v4l2", watching: queue.device.fileDescriptor)
        } catch {
            throw V4L2Error("eventfd", path: queue.device.path)
        }
        self.thread = thread
        // A buffer free again wakes the thread, which queues it; one a client
        // gives back after the capture stopped wakes nobody (the leases keep
        // the thread's wake-up).
        let leases = BufferLeases(count: queue.bufferCount, free: false) { thread.wake() }
        let tight = bytesPerLine <= (mode.layout.planes.first?.bytesPerRow ?? 0) || mode.layout.planes.isEmpty
        do {
            guard tight else { throw CameraError(.unsupportedFormat, "its rows are padded to \(bytesPerLine) bytes") }
            buffers = try Self.export(queue, leases: leases)
            unsharedBecause = nil
        } catch {
            buffers = nil
            unsharedBecause = "\(error)"
        }
        let buffers = buffers
        let path = queue.device.path
        // The thread owns the queue from here on.
        do {
            try thread.start { [self] thread in
                let error = Self.run(queue: queue, mode: mode, bytesPerLine: bytesPerLine, thread: thread, leases: leases,
                                     buffers: buffers, stopped: stopped, onFrame: onFrame)
                leases.waitUntilFramesGone { _ = thread.wait(watching: false) }
                queue.stop()
                onEnd(stopped.load(ordering: .relaxed) ? nil : error)
            }
        } catch {
            throw V4L2Error("pthread_create", path: path)
        }
    }

    /// The queue's buffers as dma-bufs, mapped here.
    ///
    /// - Throws: when the driver cannot export them (its frames are then copied for clients).
    private static func export(_ queue: V4L2BufferQueue, leases: BufferLeases) throws -> DeviceBuffers {
        let descriptors = try (0..<queue.bufferCount).map { index throws in OwnedFD(adopting: try queue.export(index)) }
        return try DeviceBuffers(dmaBufs: descriptors, leases: leases)
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        thread.wake()
        thread.join()
    }

    private static func run(
        queue: V4L2BufferQueue, mode: CaptureMode, bytesPerLine: Int, thread: PollingThread, leases: BufferLeases,
        buffers: DeviceBuffers?, stopped: borrowing Atomic<Bool>, onFrame: (CapturedFrame) -> Void
    ) -> V4L2Error? {
        let layout = mode.layout
        let packers = (0..<queue.bufferCount).map { _ in RowPacker(layout: layout, bytesPerLine: bytesPerLine) }
        let duration = mode.frameDuration.nanoseconds
        var numbering = FrameNumbering()
        do throws(V4L2Error) {
            while true {
                let ready = thread.wait()
                if ready.woken {
                    if stopped.load(ordering: .relaxed) { return nil }
                    for index in leases.takeFree() { try queue.enqueue(index) }
                }
                // POLLERR: the driver stopped the queue; DQBUF says why.
                guard ready.descriptorIsReady, let frame = try queue.dequeue() else { continue }
                let sequence = numbering.number(forDriverCount: frame.sequence)
                guard !frame.isCorrupted, let bytes = packers[frame.index].pack(frame.planes[0]) else {
                    try queue.enqueue(frame.index)
                    continue
                }
                // A capture time cannot be later than the frame's arrival
                // (vivid's synthetic timestamps can be).
                let now = monotonicNanoseconds()
                let timestamp = frame.hasMonotonicTimestamp ? min(frame.timestampNanoseconds, now) : now
                let index = frame.index
                leases.lend(index)
                // Shared with clients only as the driver wrote it, from the buffer's start.
                let shared = buffers.flatMap { buffers in
                    frame.startsAtBuffer && bytes.baseAddress == frame.planes[0].baseAddress
                        ? DeviceBuffers.Buffer(buffers: buffers, index: index) : nil
                }
                onFrame(CapturedFrame(bytes: bytes, sequence: sequence, timestampNanoseconds: timestamp,
                                      durationNanoseconds: duration, buffer: shared, giveBack: { leases.frameDone(index) }))
            }
        } catch {
            return error
        }
    }
}

/// Numbers a capture's frames from the driver's 32-bit count (V4L2's
/// `sequence`): 64 bits, past the count's wrap, and strictly increasing. A
/// count that does not advance (vivid's repeats one when its thread is
/// starved) would read to clients as a frame out of order and break their
/// accounting: such a frame gets the number after the last, and the numbers
/// catch up with the count at its next gap.
struct FrameNumbering {
    private var wraps: UInt64 = 0
    private var lastCount: UInt32?
    private var lastNumber: UInt64?

    mutating func number(forDriverCount count: UInt32) -> UInt64 {
        // A wrap goes from near the top to near 0; a small step back is the driver's stumble.
        if let last = lastCount, count < last, last - count > 1 << 31 { wraps += 1 << 32 }
        lastCount = count
        var number = wraps + UInt64(count)
        if let last = lastNumber, number <= last { number = last + 1 }
        lastNumber = number
        return number
    }
}

/// Packs rows of a frame whose lines are padded to `bytesPerLine` into the
/// tight layout; hands tight frames through untouched. One per buffer: a
/// packed frame stays valid until that buffer is handed out again.
final class RowPacker {
    let layout: FrameLayout
    let bytesPerLine: Int
    private let scratch: UnsafeMutableRawBufferPointer?

    init(layout: FrameLayout, bytesPerLine: Int) {
        self.layout = layout
        self.bytesPerLine = bytesPerLine
        let tight = layout.planes.first?.bytesPerRow ?? 0
        scratch = layout.planes.isEmpty || bytesPerLine <= tight
            ? nil : UnsafeMutableRawBufferPointer.allocate(byteCount: layout.capacity, alignment: 64)
    }

    deinit { scratch?.deallocate() }

    /// The frame, tightly packed; nil when it is shorter than its format needs.
    func pack(_ frame: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let scratch, let first = layout.planes.first else {
            if layout.planes.isEmpty { return frame }
            return frame.count >= layout.capacity ? UnsafeRawBufferPointer(rebasing: frame[..<layout.capacity]) : nil
        }
        // Every plane's stride scales with the first one's (as V4L2 defines for
        // the single-buffer planar formats).
        var source = 0
        for plane in layout.planes {
            let stride = bytesPerLine * plane.bytesPerRow / first.bytesPerRow
            guard source + stride * (plane.height - 1) + plane.bytesPerRow <= frame.count else { return nil }
            for row in 0..<plane.height {
                let from = frame.baseAddress! + source + row * stride
                (scratch.baseAddress! + plane.offset + row * plane.bytesPerRow).copyMemory(from: from, byteCount: plane.bytesPerRow)
            }
            source += stride * plane.height
        }
        return UnsafeRawBufferPointer(scratch)
    }
}
