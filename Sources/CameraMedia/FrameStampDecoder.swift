
/// Reads the ``FrameStamp`` a virtual camera drew into a frame, from its luma.
///
/// The block geometry is proportional to the frame, so this works on scaled,
/// converted and JPEG-compressed frames alike. Each block is read from the
/// middle half of its area and thresholded half-way between black and white.
public enum FrameStampDecoder {
    /// What both bands say. A torn frame has `top != bottom`.
    public struct Result: Equatable, Sendable {
        public var top: FrameStamp?
        public var bottom: FrameStamp?

        /// The stamp when both bands read and agree.
        public var stamp: FrameStamp? { top != nil && top == bottom ? top : nil }
        public var isTorn: Bool { top != bottom }
    }

    /// Decodes both bands from a luma plane of `width`×`height`, `bytesPerRow` apart,
    /// one byte per pixel (or `pixelStride` bytes apart, for packed YUYV: 2).
    public static func decode(
        luma: UnsafeRawBufferPointer, width: Int, height: Int, bytesPerRow: Int, pixelStride: Int = 1
    ) -> Result {
        func band(top: Bool) -> FrameStamp? {
            var bits: [Bool] = []
            for index in 0..<FrameStamp.Layout.bitCount {
                let block = FrameStamp.Layout.block(index, top: top, width: width, height: height)
                let x = middleHalf(block.x)
                let y = middleHalf(block.y)
                var sum = 0
                for row in y {
                    for column in x { sum += Int(luma[row * bytesPerRow + column * pixelStride]) }
                }
                let mean = sum / max(1, x.count * y.count)
                bits.append(mean >= 128)
            }
            return FrameStamp(bits: bits)
        }
        return Result(top: band(top: true), bottom: band(top: false))
    }

    /// Decodes a tightly packed frame of `format` (YUYV, NV12, I420, BGRA or ARGB).
    public static func decode(frame: UnsafeRawBufferPointer, format: PixelFormat, width: Int, height: Int) -> Result {
        switch format {
        case .yuyv:
            return decode(luma: frame, width: width, height: height, bytesPerRow: width * 2, pixelStride: 2)
        case .nv12, .i420:
            return decode(luma: frame, width: width, height: height, bytesPerRow: width)
        case .bgra, .argb:
            let luma = bgraLuma(frame, width: width, height: height, blueAt: format == .argb ? 3 : 0)
            return luma.withUnsafeBytes { decode(luma: $0, width: width, height: height, bytesPerRow: width) }
        default:
            preconditionFailure("FrameStampDecoder cannot read \(format)")
        }
    }

    /// BT.601 limited-range luma of a BGRA image (`blueAt` 0), or of an ARGB
    /// one (`blueAt` 3: the bytes the other way round).
    public static func bgraLuma(_ frame: UnsafeRawBufferPointer, width: Int, height: Int, blueAt: Int = 0) -> [UInt8] {
        var luma = [UInt8](repeating: 0, count: width * height)
        let step = blueAt == 0 ? 1 : -1
        for index in 0..<width * height {
            let blue = index * 4 + blueAt
            let b = Int(frame[blue]), g = Int(frame[blue + step]), r = Int(frame[blue + 2 * step])
            luma[index] = UInt8(clamping: (66 * r + 129 * g + 25 * b + 128) >> 8 + 16)
        }
        return luma
    }

    private static func middleHalf(_ range: Range<Int>) -> Range<Int> {
        let quarter = range.count / 4
        let result = range.lowerBound + quarter..<range.upperBound - quarter
        return result.isEmpty ? range : result
    }
}
