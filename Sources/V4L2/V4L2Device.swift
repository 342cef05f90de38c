internal import CV4L2
import Glibc

/// One V4L2 video capture node, opened through libv4l2.
///
/// ```
/// let device = try V4L2Device(path: "/dev/video0")
/// let capability = try device.capability()
/// for format in try device.formatDescriptions() { ... try device.frameSizes(format.fourcc) ... }
/// let format = try device.setFormat(fourcc: yuyv, width: 640, height: 480)
/// let queue = try V4L2BufferQueue(device: device, count: 4)
/// ```
///
/// Formats libv4lconvert emulates are skipped: camerad converts itself, once per
/// variant, and lists what the device really offers (as `v4l2-ctl` does). Every
/// call throws ``V4L2Error`` with errno. Not thread-safe: one owner at a time.
public final class V4L2Device {
    public let path: String
    let descriptor: Int32
    /// The buffer type of the node's API: single- or multi-planar capture.
    public let bufferType: UInt32
    public let capability: V4L2Capability

    /// Opens the node non-blocking and asks what it is.
    ///
    /// - Throws: ``V4L2Error`` when it cannot be opened or does not answer VIDIOC_QUERYCAP.
    public init(path: String) throws(V4L2Error) {
        self.path = path
        descriptor = CV4L2_open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw V4L2Error("open", path: path) }
        var raw = v4l2_capability()
        guard CV4L2_ioctl(descriptor, CV4L2_VIDIOC_QUERYCAP, &raw) == 0 else {
            let error = V4L2Error("VIDIOC_QUERYCAP", path: path)
            _ = CV4L2_close(descriptor)
            throw error
        }
        let capabilities = raw.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? raw.device_caps : raw.capabilities
        capability = V4L2Capability(
            driver: string(fromCArray: raw.driver), card: string(fromCArray: raw.card),
            busInfo: string(fromCArray: raw.bus_info), capabilities: capabilities)
        bufferType = capability.isMultiplanar
            ? V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue : V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    }

    deinit {
        _ = CV4L2_close(descriptor)
    }

    /// The file descriptor, for poll(2).
    public var fileDescriptor: Int32 { descriptor }

    func ioctl<T>(_ request: UInt, _ name: String, _ argument: inout T) throws(V4L2Error) {
        let result = withUnsafeMutablePointer(to: &argument) { CV4L2_ioctl(descriptor, request, $0) }
        guard result == 0 else { throw V4L2Error(name, path: path) }
    }

    // MARK: - Formats

    /// VIDIOC_ENUM_FMT, without libv4lconvert's emulated formats.
    public func formatDescriptions() throws(V4L2Error) -> [V4L2FormatDescription] {
        var formats: [V4L2FormatDescription] = []
        for index in UInt32(0)... {
            var raw = v4l2_fmtdesc()
            raw.index = index
            raw.type = bufferType
            do throws(V4L2Error) {
                try ioctl(CV4L2_VIDIOC_ENUM_FMT, "VIDIOC_ENUM_FMT", &raw)
            } catch where error.code == EINVAL {
                break
            }
            let format = V4L2FormatDescription(
                fourcc: raw.pixelformat, description: string(fromCArray: raw.description), flags: raw.flags)
            if !format.isEmulated { formats.append(format) }
        }
        return formats
    }

    /// VIDIOC_ENUM_FRAMESIZES for a pixel format.
    public func frameSizes(_ fourcc: UInt32) throws(V4L2Error) -> V4L2FrameSizes {
        var sizes: [V4L2Size] = []
        for index in UInt32(0)... {
            var raw = v4l2_frmsizeenum()
            raw.index = index
            raw.pixel_format = fourcc
            do throws(V4L2Error) {
                try ioctl(CV4L2_VIDIOC_ENUM_FRAMESIZES, "VIDIOC_ENUM_FRAMESIZES", &raw)
            } catch where error.code == EINVAL && index > 0 {
                break
            }
            if raw.type != V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                let stepwise = raw.stepwise
                return .stepwise(min: V4L2Size(stepwise.min_width, stepwise.min_height),
                                 max: V4L2Size(stepwise.max_width, stepwise.max_height),
                                 step: V4L2Size(max(1, stepwise.step_width), max(1, stepwise.step_height)))
            }
            sizes.append(V4L2Size(raw.discrete.width, raw.discrete.height))
        }
        return .discrete(sizes)
    }

    /// VIDIOC_ENUM_FRAMEINTERVALS for a pixel format at a size.
    public func frameIntervals(_ fourcc: UInt32, _ size: V4L2Size) throws(V4L2Error) -> V4L2FrameIntervals {
        var intervals: [V4L2Fraction] = []
        for index in UInt32(0)... {
            var raw = v4l2_frmivalenum()
            raw.index = index
            raw.pixel_format = fourcc
            raw.width = size.width
            raw.height = size.height
            do throws(V4L2Error) {
                try ioctl(CV4L2_VIDIOC_ENUM_FRAMEINTERVALS, "VIDIOC_ENUM_FRAMEINTERVALS", &raw)
            } catch where error.code == EINVAL && index > 0 {
                break
            }
            if raw.type != V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                let stepwise = raw.stepwise
                return .stepwise(min: V4L2Fraction(stepwise.min.numerator, stepwise.min.denominator),
                                 max: V4L2Fraction(stepwise.max.numerator, stepwise.max.denominator),
                                 step: V4L2Fraction(stepwise.step.numerator, stepwise.step.denominator))
            }
            intervals.append(V4L2Fraction(raw.discrete.numerator, raw.discrete.denominator))
        }
        return .discrete(intervals)
    }

    /// VIDIOC_G_FMT.
    public func format() throws(V4L2Error) -> V4L2Format {
        var raw = v4l2_format()
        raw.type = bufferType
        try ioctl(CV4L2_VIDIOC_G_FMT, "VIDIOC_G_FMT", &raw)
        return Self.format(from: raw, multiplanar: capability.isMultiplanar)
    }

    /// VIDIOC_S_FMT; the driver may adjust the size, so read the result.
    ///
    /// - Throws: `EBUSY` while another program streams from the node.
    @discardableResult
    public func setFormat(fourcc: UInt32, width: UInt32, height: UInt32) throws(V4L2Error) -> V4L2Format {
        var raw = v4l2_format()
        raw.type = bufferType
        if capability.isMultiplanar {
            raw.fmt.pix_mp.pixelformat = fourcc
            raw.fmt.pix_mp.width = width
            raw.fmt.pix_mp.height = height
            raw.fmt.pix_mp.field = V4L2_FIELD_NONE.rawValue
        } else {
            raw.fmt.pix.pixelformat = fourcc
            raw.fmt.pix.width = width
            raw.fmt.pix.height = height
            raw.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        }
        try ioctl(CV4L2_VIDIOC_S_FMT, "VIDIOC_S_FMT", &raw)
        return Self.format(from: raw, multiplanar: capability.isMultiplanar)
    }

    private static func format(from raw: v4l2_format, multiplanar: Bool) -> V4L2Format {
        if multiplanar {
            let pix = raw.fmt.pix_mp
            let planes = withUnsafeBytes(of: pix.plane_fmt) { bytes in
                (0..<Int(pix.num_planes)).map { index in
                    let plane = bytes.load(fromByteOffset: index * MemoryLayout<v4l2_plane_pix_format>.stride,
                                           as: v4l2_plane_pix_format.self)
                    return V4L2Format.Plane(bytesPerLine: plane.bytesperline, sizeImage: plane.sizeimage)
                }
            }
            return V4L2Format(fourcc: pix.pixelformat, width: pix.width, height: pix.height, planes: planes)
        }
        let pix = raw.fmt.pix
        return V4L2Format(fourcc: pix.pixelformat, width: pix.width, height: pix.height,
                          planes: [V4L2Format.Plane(bytesPerLine: pix.bytesperline, sizeImage: pix.sizeimage)])
    }

    // MARK: - Frame interval

    /// The frame interval (VIDIOC_G_PARM); nil when the driver cannot set one.
    public func frameInterval() throws(V4L2Error) -> V4L2Fraction? {
        var raw = v4l2_streamparm()
        raw.type = bufferType
        try ioctl(CV4L2_VIDIOC_G_PARM, "VIDIOC_G_PARM", &raw)
        guard raw.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0 else { return nil }
        let interval = raw.parm.capture.timeperframe
        return V4L2Fraction(interval.numerator, interval.denominator)
    }

    /// VIDIOC_S_PARM; returns the interval the driver chose.
    @discardableResult
    public func setFrameInterval(_ interval: V4L2Fraction) throws(V4L2Error) -> V4L2Fraction {
        var raw = v4l2_streamparm()
        raw.type = bufferType
        raw.parm.capture.timeperframe.numerator = interval.numerator
        raw.parm.capture.timeperframe.denominator = interval.denominator
        try ioctl(CV4L2_VIDIOC_S_PARM, "VIDIOC_S_PARM", &raw)
        let chosen = raw.parm.capture.timeperframe
        return V4L2Fraction(chosen.numerator, chosen.denominator)
    }

    // MARK: - Buffers

    /// Whether another file handle owns the node's buffers (it is streaming):
    /// VIDIOC_REQBUFS of 0 buffers fails with EBUSY then, and changes nothing otherwise.
    public func isBusy() -> Bool {
        var request = v4l2_requestbuffers()
        request.count = 0
        request.type = bufferType
        request.memory = V4L2_MEMORY_MMAP.rawValue
        do throws(V4L2Error) {
            try ioctl(CV4L2_VIDIOC_REQBUFS, "VIDIOC_REQBUFS", &request)
            return false
        } catch {
            return error.meansBusy
        }
    }
}
