internal import CV4L2
import Glibc

/// mmap streaming on a device: buffers requested, mapped and queued; frames
/// dequeued as the driver fills them and queued again by the caller.
///
/// ```
/// let queue = try V4L2BufferQueue(device: device, count: 4)
/// try queue.start()
/// while let frame = try queue.dequeue() {   // nil: none ready (poll the device)
///     use(frame.planes)
///     try queue.enqueue(frame.index)
/// }
/// queue.stop()
/// ```
///
/// Works with the single- and the multi-planar API; with the latter, each memory
/// plane is its own mapping.
public final class V4L2BufferQueue {
    public let device: V4L2Device
    /// Per buffer, per memory plane: the mapping.
    private var mappings: [[UnsafeMutableRawBufferPointer]] = []
    private var streaming = false

    /// One filled buffer. Its planes are valid until it is enqueued again.
    public struct Frame {
        public let index: Int
        /// The driver's frame counter; a gap means frames were lost.
        public let sequence: UInt32
        /// The capture time, in the clock the flags name (CLOCK_MONOTONIC for
        /// V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC, which UVC and vivid use).
        public let timestampNanoseconds: Int64
        public let flags: UInt32
        /// The bytes used in each memory plane.
        public let planes: [UnsafeRawBufferPointer]
        /// Whether the first plane's bytes start where its buffer does (the
        /// driver put no header before them).
        public let startsAtBuffer: Bool

        /// The timestamp is CLOCK_MONOTONIC (else the driver's own clock, or none).
        public var hasMonotonicTimestamp: Bool {
            flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        }

        /// The driver marked the frame as corrupted (V4L2_BUF_FLAG_ERROR).
        public var isCorrupted: Bool { flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 }
    }

    /// Requests `count` mmap buffers (the driver may give more or fewer), maps
    /// and queues them.
    ///
    /// - Throws: `EBUSY` when another program streams from the node.
    public init(device: V4L2Device, count: Int) throws(V4L2Error) {
        self.device = device
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = device.bufferType
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try device.ioctl(CV4L2_VIDIOC_REQBUFS, "VIDIOC_REQBUFS", &request)
        guard request.count > 0 else { throw V4L2Error("VIDIOC_REQBUFS", path: device.path, code: ENOMEM) }
        do throws(V4L2Error) {
            for index in 0..<Int(request.count) {
                mappings.append(try map(index))
                try enqueue(index)
            }
        } catch {
            release()
            throw error
        }
    }

    deinit {
        stop()
    }

    public var bufferCount: Int { mappings.count }

    private var isMultiplanar: Bool { device.capability.isMultiplanar }

    private func map(_ index: Int) throws(V4L2Error) -> [UnsafeMutableRawBufferPointer] {
        var planes = [v4l2_plane](repeating: v4l2_plane(), count: Int(VIDEO_MAX_PLANES))
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = device.bufferType
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        let regions: [(length: Int, offset: Int64)] = try planes.withUnsafeMutableBufferPointer { planes throws(V4L2Error) in
            if isMultiplanar {
                buffer.length = UInt32(planes.count)
                buffer.m.planes = planes.baseAddress
            }
            try device.ioctl(CV4L2_VIDIOC_QUERYBUF, "VIDIOC_QUERYBUF", &buffer)
            if isMultiplanar {
                return (0..<Int(buffer.length)).map { (Int(planes[$0].length), Int64(planes[$0].m.mem_offset)) }
            }
            return [(Int(buffer.length), Int64(buffer.m.offset))]
        }
        var mapped: [UnsafeMutableRawBufferPointer] = []
        for region in regions {
            let address = CV4L2_mmap(region.length, device.descriptor, region.offset)
            guard let address, address != MAP_FAILED else {
                let error = V4L2Error("mmap", path: device.path)
                for plane in mapped { _ = CV4L2_munmap(plane.baseAddress, plane.count) }
                throw error
            }
            mapped.append(UnsafeMutableRawBufferPointer(start: address, count: region.length))
        }
        return mapped
    }

    /// Exports a buffer's first memory plane as a dma-buf (`VIDIOC_EXPBUF`),
    /// read-only and close-on-exec: a descriptor another process can map to
    /// read the buffer where the driver fills it. The caller owns it.
    ///
    /// - Throws: ``V4L2Error`` when the driver cannot export (no dma-buf
    ///   support, or libv4l2 converts the node's frames in buffers of its own).
    public func export(_ index: Int) throws(V4L2Error) -> Int32 {
        let fd = CV4L2_export_buffer(device.descriptor, UInt32(index))
        guard fd >= 0 else { throw V4L2Error("VIDIOC_EXPBUF", path: device.path) }
        return fd
    }

    /// VIDIOC_STREAMON.
    public func start() throws(V4L2Error) {
        var type = Int32(device.bufferType)
        try device.ioctl(CV4L2_VIDIOC_STREAMON, "VIDIOC_STREAMON", &type)
        streaming = true
    }

    /// VIDIOC_STREAMOFF, then the buffers are unmapped and freed. Safe to call twice.
    public func stop() {
        if streaming {
            var type = Int32(device.bufferType)
            try? device.ioctl(CV4L2_VIDIOC_STREAMOFF, "VIDIOC_STREAMOFF", &type)
            streaming = false
        }
        release()
    }

    private func release() {
        guard !mappings.isEmpty else { return }
        for buffer in mappings {
            for plane in buffer { _ = CV4L2_munmap(plane.baseAddress, plane.count) }
        }
        mappings = []
        var request = v4l2_requestbuffers()
        request.count = 0
        request.type = device.bufferType
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try? device.ioctl(CV4L2_VIDIOC_REQBUFS, "VIDIOC_REQBUFS", &request)
    }

    /// Gives a buffer back to the driver.
    public func enqueue(_ index: Int) throws(V4L2Error) {
        var planes = [v4l2_plane](repeating: v4l2_plane(), count: Int(VIDEO_MAX_PLANES))
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = device.bufferType
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        try planes.withUnsafeMutableBufferPointer { planes throws(V4L2Error) in
            if isMultiplanar {
                buffer.length = UInt32(mappings[index].count)
                buffer.m.planes = planes.baseAddress
            }
            try device.ioctl(CV4L2_VIDIOC_QBUF, "VIDIOC_QBUF", &buffer)
        }
    }

    /// The next filled buffer, or nil when none is ready yet (the node is
    /// non-blocking: poll its descriptor for POLLIN).
    ///
    /// - Throws: ``V4L2Error``; ``V4L2Error/meansDeviceLost`` when it was unplugged.
    public func dequeue() throws(V4L2Error) -> Frame? {
        var planes = [v4l2_plane](repeating: v4l2_plane(), count: Int(VIDEO_MAX_PLANES))
        var buffer = v4l2_buffer()
        buffer.type = device.bufferType
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        let used: [(offset: Int, count: Int)]? = try planes.withUnsafeMutableBufferPointer { planes throws(V4L2Error) in
            if isMultiplanar {
                buffer.length = UInt32(planes.count)
                buffer.m.planes = planes.baseAddress
            }
            do throws(V4L2Error) {
                try device.ioctl(CV4L2_VIDIOC_DQBUF, "VIDIOC_DQBUF", &buffer)
            } catch where error.code == EAGAIN {
                return nil
            }
            if isMultiplanar {
                return (0..<Int(buffer.length)).map { index in
                    let offset = Int(planes[index].data_offset)
                    return (offset, max(0, Int(planes[index].bytesused) - offset))
                }
            }
            return [(0, Int(buffer.bytesused))]
        }
        guard let used else { return nil }
        let index = Int(buffer.index)
        let mapped = mappings[index]
        let views = zip(mapped, used).map { plane, used in
            let start = min(used.offset, plane.count)
            return UnsafeRawBufferPointer(rebasing: plane[start..<min(plane.count, start + used.count)])
        }
        let timestamp = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1000
        return Frame(index: index, sequence: buffer.sequence, timestampNanoseconds: timestamp, flags: buffer.flags,
                     planes: views, startsAtBuffer: views.first?.baseAddress == UnsafeRawPointer(mapped.first?.baseAddress))
    }
}
