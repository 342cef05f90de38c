internal import CTurboJPEG
internal import CYUV

/// A failure inside libturbojpeg, with its message.
public struct JPEGError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { "JPEG: \(message)" }
}

/// Compresses frames to JPEG with libturbojpeg (the `tjCompress*` calls of its
/// 2.1 API). Not thread-safe: use one per thread.
public final class JPEGEncoder {
    private let handle: tjhandle

    public init() throws {
        guard let handle = tjInitCompress() else { throw JPEGError(message: "tjInitCompress failed") }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// The largest JPEG a `width`×`height` 4:2:0 image can compress to.
    public static func maxSize(width: Int, height: Int) -> Int {
        Int(tjBufSize(Int32(width), Int32(height), Int32(TJSAMP_420.rawValue)))
    }

    /// Compresses a tightly packed, full-range I420 frame (JPEG's range), keeping
    /// its 4:2:0 chroma as it is.
    ///
    /// The call is `tjCompressFromYUVPlanes`.
    public func encodeFullRangeI420(_ frame: UnsafeRawBufferPointer, width: Int, height: Int, quality: Int) throws -> [UInt8] {
        let planes = PixelFormat.i420.planes(width: width, height: height)!
        precondition(frame.count >= planes[2].offset + planes[2].byteCount, "I420 frame too small")
        let base = frame.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var sources: [UnsafePointer<UInt8>?] = planes.map { UnsafePointer(base + $0.offset) }
        var strides: [Int32] = planes.map { Int32($0.bytesPerRow) }
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        defer { if let output { tjFree(output) } }
        let result = tjCompressFromYUVPlanes(
            handle, &sources, Int32(width), &strides, Int32(height), Int32(TJSAMP_420.rawValue),
            &output, &size, Int32(quality), 0)
        guard result == 0, let output else { throw JPEGError(message: String(cString: tjGetErrorStr2(handle))) }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }
}

/// Decompresses JPEG images with libturbojpeg (`tjDecompress2`). Not thread-safe.
public final class JPEGDecoder {
    private let handle: tjhandle

    public init() throws {
        guard let handle = tjInitDecompress() else { throw JPEGError(message: "tjInitDecompress failed") }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// The image's width and height, from its header.
    ///
    /// The call is `tjDecompressHeader3`.
    public func dimensions(of jpeg: [UInt8]) throws -> (width: Int, height: Int) {
        try jpeg.withUnsafeBytes { try dimensions(of: $0) }
    }

    /// The image's width and height, from its header.
    public func dimensions(of jpeg: UnsafeRawBufferPointer) throws -> (width: Int, height: Int) {
        let header = try self.header(jpeg)
        return (header.width, header.height)
    }

    private func header(_ jpeg: UnsafeRawBufferPointer) throws -> (width: Int, height: Int, subsampling: Int32) {
        var width: Int32 = 0
        var height: Int32 = 0
        var subsampling: Int32 = 0
        var colorspace: Int32 = 0
        let result = tjDecompressHeader3(handle, jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt(jpeg.count),
                                         &width, &height, &subsampling, &colorspace)
        guard result == 0 else { throw JPEGError(message: String(cString: tjGetErrorStr2(handle))) }
        return (Int(width), Int(height), subsampling)
    }

    /// Decodes into a video-range I420 image of the JPEG's size, whatever its
    /// chroma subsampling (webcams often send 4:2:2). JPEG's YCbCr is full range.
    ///
    /// The call is `tjDecompressToYUVPlanes`, then libyuv for anything but 4:2:0.
    func decodeI420(_ jpeg: UnsafeRawBufferPointer, into image: I420Image) throws {
        let header = try self.header(jpeg)
        let source = jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self)
        func decompress(_ planes: [UnsafeMutablePointer<UInt8>?], _ strides: [Int32]) throws {
            var planes = planes
            var strides = strides
            let result = tjDecompressToYUVPlanes(handle, source, UInt(jpeg.count), &planes, Int32(header.width),
                                                 &strides, Int32(header.height), 0)
            guard result == 0 else { throw JPEGError(message: String(cString: tjGetErrorStr2(handle))) }
        }
        switch header.subsampling {
        case Int32(TJSAMP_420.rawValue):
            try decompress([image.y, image.u, image.v], [image.strideY, image.strideUV, image.strideUV])
        case Int32(TJSAMP_GRAY.rawValue):
            try decompress([image.y, nil, nil], [image.strideY, 0, 0])
            let chroma = Int(image.strideUV) * Int((image.height + 1) / 2)
            image.u.initialize(repeating: 128, count: chroma)
            image.v.initialize(repeating: 128, count: chroma)
        case Int32(TJSAMP_422.rawValue), Int32(TJSAMP_444.rawValue):
            let is422 = header.subsampling == Int32(TJSAMP_422.rawValue)
            let chromaWidth = is422 ? (header.width + 1) / 2 : header.width
            let planeSize = chromaWidth * header.height
            let chroma = UnsafeMutablePointer<UInt8>.allocate(capacity: planeSize * 2)
            defer { chroma.deallocate() }
            try decompress([image.y, chroma, chroma + planeSize], [image.strideY, Int32(chromaWidth), Int32(chromaWidth)])
            let convert = is422 ? I422ToI420 : I444ToI420
            let result = convert(image.y, image.strideY, chroma, Int32(chromaWidth), chroma + planeSize, Int32(chromaWidth),
                                 image.y, image.strideY, image.u, image.strideUV, image.v, image.strideUV,
                                 image.width, image.height)
            guard result == 0 else { throw JPEGError(message: "libyuv could not convert the JPEG's chroma") }
        default:
            throw JPEGError(message: "unsupported JPEG chroma subsampling \(header.subsampling)")
        }
        YUVRange.toVideoRange(image)
    }

    /// The image's luma as one byte per pixel, rows tightly packed.
    public func decodeGray(_ jpeg: [UInt8]) throws -> (pixels: [UInt8], width: Int, height: Int) {
        try decode(jpeg, pixelFormat: TJPF_GRAY, bytesPerPixel: 1)
    }

    /// The image as BGRA (B, G, R, A in memory), rows tightly packed.
    public func decodeBGRA(_ jpeg: [UInt8]) throws -> (pixels: [UInt8], width: Int, height: Int) {
        try decode(jpeg, pixelFormat: TJPF_BGRA, bytesPerPixel: 4)
    }

    private func decode(_ jpeg: [UInt8], pixelFormat: TJPF, bytesPerPixel: Int) throws -> (pixels: [UInt8], width: Int, height: Int) {
        let (width, height) = try dimensions(of: jpeg)
        var pixels = [UInt8](repeating: 0, count: width * height * bytesPerPixel)
        let result = jpeg.withUnsafeBufferPointer { source in
            pixels.withUnsafeMutableBufferPointer { destination in
                tjDecompress2(handle, source.baseAddress, UInt(source.count), destination.baseAddress,
                              Int32(width), Int32(width * bytesPerPixel), Int32(height), Int32(pixelFormat.rawValue), 0)
            }
        }
        guard result == 0 else { throw JPEGError(message: String(cString: tjGetErrorStr2(handle))) }
        return (pixels, width, height)
    }
}
