/// Conversion between full-range YCbCr (0–255, what JPEG/JFIF uses) and video
/// range (Y 16–235, Cb/Cr 16–240, what NV12, I420 and YUYV carry), by table.
enum YUVRange {
    private static let lumaToVideo = table { 16 + $0 * 219 / 255 }
    private static let chromaToVideo = table { 128 + ($0 - 128) * 224 / 255 }
    private static let lumaToFull = table { ($0 - 16) * 255 / 219 }
    private static let chromaToFull = table { 128 + ($0 - 128) * 255 / 224 }

    /// Full range → video range, in place.
    static func toVideoRange(_ image: I420Image) {
        apply(lumaToVideo, chromaToVideo, image)
    }

    /// Video range → full range, in place.
    static func toFullRange(_ image: I420Image) {
        apply(lumaToFull, chromaToFull, image)
    }

    /// Video range → full range, in place, for `rows` rows of `width` luma bytes.
    static func toFullRange(luma plane: UnsafeMutableRawPointer, rows: Int, width: Int, bytesPerRow: Int) {
        apply(lumaToFull, plane, rows: rows, width: width, bytesPerRow: bytesPerRow)
    }

    /// Video range → full range, in place, for `rows` rows of `width` chroma
    /// bytes (Cb and Cr alike: interleaved, as NV12 has them, or not).
    static func toFullRange(chroma plane: UnsafeMutableRawPointer, rows: Int, width: Int, bytesPerRow: Int) {
        apply(chromaToFull, plane, rows: rows, width: width, bytesPerRow: bytesPerRow)
    }

    private static func apply(_ table: [UInt8], _ plane: UnsafeMutableRawPointer, rows: Int, width: Int, bytesPerRow: Int) {
        table.withUnsafeBufferPointer { table in
            for row in 0..<rows {
                let line = (plane + row * bytesPerRow).assumingMemoryBound(to: UInt8.self)
                for x in 0..<width { line[x] = table[Int(line[x])] }
            }
        }
    }

    private static func apply(_ luma: [UInt8], _ chroma: [UInt8], _ image: I420Image) {
        apply(luma, UnsafeMutableRawPointer(image.y), rows: Int(image.height), width: Int(image.width),
              bytesPerRow: Int(image.strideY))
        for plane in [image.u, image.v] {
            apply(chroma, UnsafeMutableRawPointer(plane), rows: Int((image.height + 1) / 2), width: Int((image.width + 1) / 2),
                  bytesPerRow: Int(image.strideUV))
        }
    }

    private static func table(_ map: (Double) -> Double) -> [UInt8] {
        (0..<256).map { UInt8(clamping: Int(map(Double($0)).rounded())) }
    }
}
