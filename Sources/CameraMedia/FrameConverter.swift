internal import CYUV

/// Why a conversion cannot be made.
public struct ConversionError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Turns frames of one layout into one ``FrameVariant``: decode (YUYV, NV12, I420,
/// BGRA, or MJPEG through turbojpeg), scale, rotate, mirror, encode — with libyuv.
///
/// Common cases take one libyuv call (a copy, NV12 scaling, NV12 or YUYV to BGRA,
/// YUYV to NV12); the rest go through I420. MJPEG passes through untouched when
/// asked for at its own size. Keeps scratch memory: one converter per thread.
public final class FrameConverter {
    public let source: FrameLayout
    public let target: FrameVariant
    public let targetLayout: FrameLayout
    private let decoded = I420Scratch()
    private let scaled = I420Scratch()
    private let turned = I420Scratch()
    private var jpeg: JPEGDecoder?

    /// - Throws: ``ConversionError`` for a variant this source cannot give
    ///   (MJPEG output from other formats, or MJPEG scaled or turned).
    public init(source: FrameLayout, target: FrameVariant) throws {
        guard PixelFormat.known.contains(source.format) else {
            throw ConversionError(message: "cannot read \(source.format.code) frames")
        }
        guard PixelFormat.known.contains(target.format) else {
            throw ConversionError(message: "cannot make \(target.format.code) frames")
        }
        if target.format == .mjpeg {
            guard source.format == .mjpeg, target.width == source.width, target.height == source.height,
                  target.rotation == .none, !target.mirrored
            else {
                throw ConversionError(message:
                    "MJPEG is passed through only unchanged; ask for nv12, i420, yuyv, bgra or argb to scale, turn or convert")
            }
        }
        if target.fullRange && target.format != .nv12 {
            throw ConversionError(message: "full-range frames are made as NV12 only, not \(target.format.code)")
        }
        let fourByTwo = [PixelFormat.nv12, .i420, .yuyv]
        if fourByTwo.contains(target.format) && (target.width % 2 != 0 || target.height % 2 != 0) {
            throw ConversionError(message: "\(target.format.code) needs an even width and height, not \(target.width)x\(target.height)")
        }
        self.source = source
        self.target = target
        targetLayout = target.layout
    }

    /// Whether frames come out exactly as they go in — the source's own format
    /// and size, not turned or mirrored, not zoomed (MJPEG never is) — so a
    /// frame can be used as it is instead of converted.
    public func passesThrough(zoom: Double = 1) -> Bool {
        source.format == target.format && source.width == target.width && source.height == target.height
            && target.rotation == .none && !target.mirrored && !target.fullRange && (zoom <= 1 || source.format == .mjpeg)
    }

    /// Converts one frame.
    ///
    /// - Parameters:
    ///   - frame: the source bytes (for MJPEG, exactly the JPEG).
    ///   - destination: at least ``targetLayout``'s capacity.
    ///   - zoom: above 1, only the middle 1/`zoom` of the frame each way is
    ///     used, scaled up to the target (a digital zoom). MJPEG passed through
    ///     is never cropped.
    /// - Returns: the bytes written (for MJPEG, the JPEG's size).
    public func convert(
        _ frame: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer, zoom: Double = 1
    ) throws -> Int {
        let written = try convertInVideoRange(frame, into: destination, zoom: zoom)
        if target.fullRange {
            // Camera frames are video range: stretched once made.
            let planes = targetLayout.planes
            YUVRange.toFullRange(luma: destination.baseAddress!, rows: target.height, width: target.width,
                                 bytesPerRow: planes[0].bytesPerRow)
            YUVRange.toFullRange(chroma: destination.baseAddress! + planes[1].offset, rows: (target.height + 1) / 2,
                                 width: (target.width + 1) / 2 * 2, bytesPerRow: planes[1].bytesPerRow)
        }
        return written
    }

    /// ``convert(_:into:zoom:)`` but for the range: the values as the source has them.
    private func convertInVideoRange(
        _ frame: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer, zoom: Double
    ) throws -> Int {
        precondition(destination.count >= targetLayout.capacity, "destination too small for \(targetLayout)")
        let out = destination.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let src = frame.baseAddress!.assumingMemoryBound(to: UInt8.self)
        if source.format == .mjpeg && target.format == .mjpeg {
            destination.copyMemory(from: frame)
            return frame.count
        }
        if zoom <= 1, let written = try fastPath(src, frame.count, out) { return written }

        var image = try decode(frame).centre(zoomedBy: zoom)
        let turnedWidth = target.rotation.swapsDimensions ? target.height : target.width
        let turnedHeight = target.rotation.swapsDimensions ? target.width : target.height
        if Int(image.width) != turnedWidth || Int(image.height) != turnedHeight {
            let result = scaled.image(width: turnedWidth, height: turnedHeight)
            try check(I420Scale(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                                image.width, image.height,
                                result.y, result.strideY, result.u, result.strideUV, result.v, result.strideUV,
                                result.width, result.height, kFilterBilinear), "I420Scale")
            image = result
        }
        if target.rotation != .none || target.mirrored {
            let result = target.format == .i420
                ? I420Image(packedAt: destination.baseAddress!, width: target.width, height: target.height)
                : turned.image(width: target.width, height: target.height)
            try transform(image, into: result)
            if target.format == .i420 { return targetLayout.capacity }
            image = result
        }
        return try encode(image, out)
    }

    // MARK: - Steps

    /// One libyuv call for the common unscaled, unturned cases; nil otherwise.
    private func fastPath(_ src: UnsafePointer<UInt8>, _ count: Int, _ out: UnsafeMutablePointer<UInt8>) throws -> Int? {
        guard target.rotation == .none, !target.mirrored, source.format != .mjpeg else { return nil }
        let sameSize = source.width == target.width && source.height == target.height
        let (w, h) = (Int32(source.width), Int32(source.height))
        let sp = source.planes
        let dp = targetLayout.planes
        switch (source.format, target.format) {
        case let (a, b) where a == b && sameSize:
            UnsafeMutableRawPointer(out).copyMemory(from: src, byteCount: source.capacity)
        case (.nv12, .nv12):
            try check(NV12Scale(src, Int32(sp[0].bytesPerRow), src + sp[1].offset, Int32(sp[1].bytesPerRow), w, h,
                                out, Int32(dp[0].bytesPerRow), out + dp[1].offset, Int32(dp[1].bytesPerRow),
                                Int32(target.width), Int32(target.height), kFilterBilinear), "NV12Scale")
        case (.nv12, .bgra) where sameSize:
            try check(NV12ToARGB(src, Int32(sp[0].bytesPerRow), src + sp[1].offset, Int32(sp[1].bytesPerRow),
                                 out, Int32(dp[0].bytesPerRow), w, h), "NV12ToARGB")
        case (.yuyv, .bgra) where sameSize:
            try check(YUY2ToARGB(src, Int32(sp[0].bytesPerRow), out, Int32(dp[0].bytesPerRow), w, h), "YUY2ToARGB")
        case (.yuyv, .nv12) where sameSize:
            try check(YUY2ToNV12(src, Int32(sp[0].bytesPerRow), out, Int32(dp[0].bytesPerRow),
                                 out + dp[1].offset, Int32(dp[1].bytesPerRow), w, h), "YUY2ToNV12")
        default:
            return nil
        }
        return targetLayout.capacity
    }

    /// The source as I420 at its own size: borrowed for I420, decoded otherwise.
    private func decode(_ frame: UnsafeRawBufferPointer) throws -> I420Image {
        if source.format == .mjpeg {
            if jpeg == nil { jpeg = try JPEGDecoder() }
            let (width, height) = try jpeg!.dimensions(of: frame)
            let image = decoded.image(width: width, height: height)
            try jpeg!.decodeI420(frame, into: image)
            return image
        }
        let src = frame.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let sp = source.planes
        let (w, h) = (Int32(source.width), Int32(source.height))
        if source.format == .i420 {
            return I420Image(packedAt: UnsafeMutableRawPointer(mutating: frame.baseAddress!), width: source.width, height: source.height)
        }
        let image = decoded.image(width: source.width, height: source.height)
        switch source.format {
        case .yuyv:
            try check(YUY2ToI420(src, Int32(sp[0].bytesPerRow), image.y, image.strideY, image.u, image.strideUV,
                                 image.v, image.strideUV, w, h), "YUY2ToI420")
        case .nv12:
            try check(NV12ToI420(src, Int32(sp[0].bytesPerRow), src + sp[1].offset, Int32(sp[1].bytesPerRow),
                                 image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV, w, h), "NV12ToI420")
        case .bgra:
            try check(ARGBToI420(src, Int32(sp[0].bytesPerRow), image.y, image.strideY, image.u, image.strideUV,
                                 image.v, image.strideUV, w, h), "ARGBToI420")
        case .argb:
            // libyuv names a format by its 32-bit word: its "BGRA" is A, R, G, B in memory.
            try check(BGRAToI420(src, Int32(sp[0].bytesPerRow), image.y, image.strideY, image.u, image.strideUV,
                                 image.v, image.strideUV, w, h), "BGRAToI420")
        default:
            throw ConversionError(message: "cannot read \(source.format.code) frames")
        }
        return image
    }

    /// Rotates clockwise, then mirrors left to right in the result's own frame.
    /// A mirror after a rotation is a vertical flip before it, which libyuv does
    /// by reading the source bottom-up (a negative height).
    private func transform(_ image: I420Image, into result: I420Image) throws {
        let flipped = target.mirrored ? -image.height : image.height
        switch (target.rotation, target.mirrored) {
        case (.none, true):
            try check(I420Mirror(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                                 result.y, result.strideY, result.u, result.strideUV, result.v, result.strideUV,
                                 image.width, image.height), "I420Mirror")
        case (.clockwise180, true):
            try check(I420Copy(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                               result.y, result.strideY, result.u, result.strideUV, result.v, result.strideUV,
                               image.width, -image.height), "I420Copy")
        default:
            let mode = switch target.rotation {
            case .none: kRotate0
            case .clockwise90: kRotate90
            case .clockwise180: kRotate180
            case .clockwise270: kRotate270
            }
            try check(I420Rotate(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                                 result.y, result.strideY, result.u, result.strideUV, result.v, result.strideUV,
                                 image.width, flipped, mode), "I420Rotate")
        }
    }

    /// Writes an I420 image of the target size as the target format.
    private func encode(_ image: I420Image, _ out: UnsafeMutablePointer<UInt8>) throws -> Int {
        let dp = targetLayout.planes
        let (w, h) = (image.width, image.height)
        switch target.format {
        case .i420:
            let result = I420Image(packedAt: UnsafeMutableRawPointer(out), width: target.width, height: target.height)
            try check(I420Copy(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                               result.y, result.strideY, result.u, result.strideUV, result.v, result.strideUV, w, h), "I420Copy")
        case .nv12:
            try check(I420ToNV12(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                                 out, Int32(dp[0].bytesPerRow), out + dp[1].offset, Int32(dp[1].bytesPerRow), w, h), "I420ToNV12")
        case .yuyv:
            try check(I420ToYUY2(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                                 out, Int32(dp[0].bytesPerRow), w, h), "I420ToYUY2")
        case .bgra:
            try check(I420ToARGB(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                                 out, Int32(dp[0].bytesPerRow), w, h), "I420ToARGB")
        case .argb:
            try check(I420ToBGRA(image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                                 out, Int32(dp[0].bytesPerRow), w, h), "I420ToBGRA")
        default:
            throw ConversionError(message: "cannot make \(target.format.code) frames")
        }
        return targetLayout.capacity
    }

    private func check(_ result: Int32, _ call: String) throws {
        guard result == 0 else { throw ConversionError(message: "libyuv \(call) failed (\(result)) for \(source) → \(target)") }
    }
}
