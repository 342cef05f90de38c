/// Makes a still photo from one camera frame: a JPEG with EXIF, or the frame
/// uncompressed in another pixel format.
///
/// A JPEG is the frame made into full-range I420 at the photo's size, turned
/// and mirrored as asked, then compressed with turbojpeg (`tjCompressFromYUVPlanes`).
/// A camera's own JPEG (MJPEG) at the asked size with no turn or mirror passes
/// through: its image data is not touched, only the EXIF segment goes in.
public final class PhotoEncoder {
    private var encoder: JPEGEncoder?

    public init() {}

    /// Whether a JPEG of `target` from frames of `source` is the camera's own, untouched.
    public static func passesThrough(_ source: FrameLayout, _ target: FrameVariant) -> Bool {
        source.format == .mjpeg && target.width == source.width && target.height == source.height
            && target.rotation == .none && !target.mirrored
    }

    /// The frame as a JPEG of `target`'s size, turn and mirroring (its format is ignored).
    ///
    /// - Parameter quality: 1 to 100.
    public func jpeg(
        _ frame: UnsafeRawBufferPointer, source: FrameLayout, target: FrameVariant, quality: Int,
        metadata: PhotoMetadata, zoom: Double = 1
    ) throws -> [UInt8] {
        if zoom <= 1 && Self.passesThrough(source, target) {
            return try EXIF.insert(metadata, into: Array(frame))
        }
        let i420 = FrameVariant(format: .i420, width: target.width, height: target.height, rotation: target.rotation,
                                mirrored: target.mirrored)
        var image = try uncompressed(frame, source: source, target: i420, zoom: zoom)
        image.withUnsafeMutableBytes { bytes in
            YUVRange.toFullRange(I420Image(packedAt: bytes.baseAddress!, width: target.width, height: target.height))
        }
        if encoder == nil { encoder = try JPEGEncoder() }
        let compressed = try image.withUnsafeBytes { bytes in
            try encoder!.encodeFullRangeI420(bytes, width: target.width, height: target.height,
                                             quality: min(100, max(1, quality)))
        }
        return try EXIF.insert(metadata, into: compressed)
    }

    /// The frame in `target`'s pixel format, size, turn and mirroring.
    public func uncompressed(
        _ frame: UnsafeRawBufferPointer, source: FrameLayout, target: FrameVariant, zoom: Double = 1
    ) throws -> [UInt8] {
        let converter = try FrameConverter(source: source, target: target)
        var output = [UInt8](repeating: 0, count: converter.targetLayout.capacity)
        let written = try output.withUnsafeMutableBytes { try converter.convert(frame, into: $0, zoom: zoom) }
        return Array(output.prefix(written))
    }
}
