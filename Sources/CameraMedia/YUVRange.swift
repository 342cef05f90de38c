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

    private static func apply(_ luma: [UInt8], _ chroma: [UInt8], _ image: I420Image) {
        let chromaWidth = Int((image.width + 1) / 2)
        let chromaHeight = Int((image.height + 1) / 2)
        luma.withUnsafeBufferPointer { table in
            for row in 0..<Int(image.height) {
                let line = image.y + row * Int(image.strideY)
                for x in 0..<Int(image.width) { line[x] = table[Int(line[x])] }
            }
        }
        chroma.withUnsafeBufferPointer { table in
            for plane in [image.u, image.v] {
                for row in 0..<chromaHeight {
                    let line = plane + row * Int(image.strideUV)
                    for x in 0..<chromaWidth { line[x] = table[Int(line[x])] }
                }
            }
        }
    }

    private static func table(_ map: (Double) -> Double) -> [UInt8] {
        (0..<256).map { UInt8(clamping: Int(map(Double($0)).rounded())) }
    }
}
