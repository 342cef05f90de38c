/// The picture of a virtual camera: colour bars that scroll a little every frame,
/// between two bands carrying the frame's ``FrameStamp``.
///
/// Renders YUYV, NV12 and I420 directly (BT.601 limited range) and MJPEG through
/// ``JPEGEncoder``. Keeps scratch memory, so use one per thread.
public final class TestPattern {
    public let width: Int
    public let height: Int

    /// The eight 75% colour bars, as (Y, U, V): white, yellow, cyan, green,
    /// magenta, red, blue, black.
    public static let bars: [(y: UInt8, u: UInt8, v: UInt8)] = [
        (180, 128, 128), (162, 44, 142), (131, 156, 44), (112, 72, 58),
        (84, 184, 198), (65, 100, 212), (35, 212, 114), (16, 128, 128),
    ]
    /// Luma of a set bit and of a clear one in the stamp bands.
    public static let setLuma: UInt8 = 235
    public static let clearLuma: UInt8 = 16
    /// Pixels the bars move per frame.
    public static let scrollPerFrame = 4

    // One period of each row kind, written twice so that any scroll offset is one copy.
    private var barLuma: [UInt8] = []
    private var barChromaInterleaved: [UInt8] = []
    private var barU: [UInt8] = []
    private var barV: [UInt8] = []
    private var barYUYV: [UInt8] = []

    /// How bright the bars are drawn: their luma above black (16) times this,
    /// clamped to 235. The stamp bands stay as they are, so the stamp still reads.
    public var level: Float = 1 {
        didSet { if level != oldValue { drawRows() } }
    }

    /// How magnified the bars are, about the frame's centre (1: eight bars
    /// across). The stamp bands stay as they are.
    public var zoom: Double = 1 {
        didSet { if zoom != oldValue { drawRows() } }
    }
    private var scratch: [UInt8] = []
    private var encoder: JPEGEncoder?

    /// - Precondition: `width` and `height` are even and at least 16.
    public init(width: Int, height: Int) {
        precondition(width >= 16 && height >= 16 && width % 2 == 0 && height % 2 == 0, "pattern of \(width)x\(height)")
        self.width = width
        self.height = height
        drawRows()
    }

    /// Fills the bar rows for the current ``level`` and ``zoom``.
    private func drawRows() {
        let centre = Double(width) / 2
        func bar(atPixel x: Int) -> (y: UInt8, u: UInt8, v: UInt8) {
            let unzoomed = centre + (Double(x) + 0.5 - centre) / max(1, zoom)
            let bar = Self.bars[min(Self.bars.count - 1, max(0, Int(unzoomed) * Self.bars.count / width))]
            let luma = level == 1 ? bar.y : UInt8(min(235, max(16, (16 + (Float(bar.y) - 16) * level).rounded())))
            return (luma, bar.u, bar.v)
        }
        var luma: [UInt8] = []
        var u: [UInt8] = []
        var v: [UInt8] = []
        var interleaved: [UInt8] = []
        var yuyv: [UInt8] = []
        for pair in 0..<width / 2 {
            let left = bar(atPixel: pair * 2)
            let right = bar(atPixel: pair * 2 + 1)
            luma += [left.y, right.y]
            u.append(left.u)
            v.append(left.v)
            interleaved += [left.u, left.v]
            yuyv += [left.y, left.u, right.y, left.v]
        }
        barLuma = luma + luma
        barU = u + u
        barV = v + v
        barChromaInterleaved = interleaved + interleaved
        barYUYV = yuyv + yuyv
    }

    /// Bytes of one frame in `format` (for MJPEG, an upper bound).
    public func frameSize(_ format: PixelFormat) -> Int {
        if format == .mjpeg { return JPEGEncoder.maxSize(width: width, height: height) }
        return format.frameSize(width: width, height: height)!
    }

    /// Draws frame `stamp` in `format` (YUYV, NV12 or I420) into `buffer`, top to bottom.
    ///
    /// - Parameter drawn: the stamp `buffer` already shows, over this picture
    ///   as it is now (a still picture whose stamp still changes): only the
    ///   stamp's blocks that differ are redrawn.
    /// - Precondition: `buffer` holds at least ``frameSize(_:)`` bytes.
    public func render(
        _ stamp: FrameStamp, format: PixelFormat, into buffer: UnsafeMutableRawBufferPointer, over drawn: FrameStamp? = nil
    ) {
        let planes = format.planes(width: width, height: height)!
        precondition(buffer.count >= frameSize(format), "buffer too small for a \(width)x\(height) \(format) frame")
        if let drawn {
            return redrawStamp(from: drawn, to: stamp, luma: planes[0], step: format == .yuyv ? 2 : 1,
                               base: buffer.baseAddress!)
        }
        let shift = (Int(stamp.sequence) * Self.scrollPerFrame) % width & ~1
        let bandRows = bandLumaRows(stamp)
        let band = FrameStamp.Layout.bandHeight(frameHeight: height)
        let base = buffer.baseAddress!

        func isBand(_ row: Int) -> Bool { row < band || row >= height - band }
        func bandRow(_ row: Int) -> [UInt8] {
            bandRows[(row < band ? 0 : FrameStamp.Layout.rows) + blockRow(ofBandRow: row)]
        }
        func copyRow(_ source: [UInt8], from offset: Int, count: Int, to destination: UnsafeMutableRawPointer) {
            source.withUnsafeBytes { destination.copyMemory(from: $0.baseAddress! + offset, byteCount: count) }
        }
        func fill(_ destination: UnsafeMutableRawPointer, _ value: UInt8, _ count: Int) {
            destination.initializeMemory(as: UInt8.self, repeating: value, count: count)
        }

        switch format {
        case .yuyv:
            let plane = planes[0]
            for row in 0..<height {
                let line = base + plane.offset + row * plane.bytesPerRow
                if isBand(row) {
                    let luma = bandRow(row)
                    let pixels = line.assumingMemoryBound(to: UInt8.self)
                    for x in 0..<width {
                        pixels[x * 2] = luma[x]
                        pixels[x * 2 + 1] = 128
                    }
                } else {
                    copyRow(barYUYV, from: shift * 2, count: width * 2, to: line)
                }
            }
        case .nv12, .i420:
            let luma = planes[0]
            for row in 0..<height {
                let line = base + luma.offset + row * luma.bytesPerRow
                if isBand(row) {
                    copyRow(bandRow(row), from: 0, count: width, to: line)
                } else {
                    copyRow(barLuma, from: shift, count: width, to: line)
                }
            }
            for row in 0..<height / 2 {
                let band = isBand(row * 2)
                if format == .nv12 {
                    let line = base + planes[1].offset + row * planes[1].bytesPerRow
                    if band { fill(line, 128, width) } else { copyRow(barChromaInterleaved, from: shift, count: width, to: line) }
                } else {
                    for (plane, source) in [(planes[1], barU), (planes[2], barV)] {
                        let line = base + plane.offset + row * plane.bytesPerRow
                        if band { fill(line, 128, width / 2) } else { copyRow(source, from: shift / 2, count: width / 2, to: line) }
                    }
                }
            }
        default:
            preconditionFailure("TestPattern cannot render \(format) directly")
        }
    }

    /// Frame `stamp` as a JPEG image (4:2:0, full range as JFIF says).
    public func renderJPEG(_ stamp: FrameStamp, quality: Int = 85) throws -> [UInt8] {
        let size = frameSize(.i420)
        if scratch.count != size { scratch = [UInt8](repeating: 0, count: size) }
        scratch.withUnsafeMutableBytes { bytes in
            render(stamp, format: .i420, into: bytes)
            YUVRange.toFullRange(I420Image(packedAt: bytes.baseAddress!, width: width, height: height))
        }
        if encoder == nil { encoder = try JPEGEncoder() }
        return try scratch.withUnsafeBytes { bytes in
            try encoder!.encodeFullRangeI420(bytes, width: width, height: height, quality: quality)
        }
    }

    /// Which row of blocks frame row `row` (in a band) shows.
    private func blockRow(ofBandRow row: Int) -> Int {
        let band = FrameStamp.Layout.bandHeight(frameHeight: height)
        let bandTop = row < band ? 0 : height - band
        return min((row - bandTop) * FrameStamp.Layout.rows / band, FrameStamp.Layout.rows - 1)
    }

    /// Turns the stamp blocks that differ between `old` and `new` (in both
    /// bands' luma; `step`: bytes from one pixel's luma to the next). Runs per
    /// frame on a still picture, so it allocates nothing: changed neighbours
    /// of one value make one span, each drawn with one fill per pixel row.
    private func redrawStamp(
        from old: FrameStamp, to new: FrameStamp, luma: PlaneLayout, step: Int, base: UnsafeMutableRawPointer
    ) {
        typealias Layout = FrameStamp.Layout
        let newWord = new.word
        let changed = old.word ^ newWord
        guard changed != 0 else { return }
        let band = Layout.bandHeight(frameHeight: height)
        withUnsafeTemporaryAllocation(of: (x: Int, count: Int, value: UInt8).self, capacity: Layout.columns) { spans in
            // The changed blocks of one block row, as spans.
            var spanCount = 0
            var spansOfBlockRow = -1
            func findSpans(blockRow: Int) {
                spanCount = 0
                for column in 0..<Layout.columns {
                    let index = blockRow * Layout.columns + column
                    guard FrameStamp.bit(index, of: changed) else { continue }
                    let x = Layout.columnSpan(column, width: width)
                    let value = FrameStamp.bit(index, of: newWord) ? Self.setLuma : Self.clearLuma
                    if spanCount > 0, spans[spanCount - 1].value == value, spans[spanCount - 1].x + spans[spanCount - 1].count == x.lowerBound {
                        spans[spanCount - 1].count += x.count
                    } else {
                        spans[spanCount] = (x.lowerBound, x.count, value)
                        spanCount += 1
                    }
                }
                spansOfBlockRow = blockRow
            }
            for bandTop in stride(from: 0, through: height - band, by: height - band) {
                for row in bandTop..<bandTop + band {
                    let blockRow = blockRow(ofBandRow: row)
                    if blockRow != spansOfBlockRow { findSpans(blockRow: blockRow) }
                    let line = (base + luma.offset + row * luma.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    for span in spans[..<spanCount] {
                        if step == 1 {
                            (line + span.x).update(repeating: span.value, count: span.count)
                        } else {
                            for x in span.x..<span.x + span.count { line[x * step] = span.value }
                        }
                    }
                }
            }
        }
    }

    /// The luma rows of each block row: the top band's four, then the bottom band's.
    private func bandLumaRows(_ stamp: FrameStamp) -> [[UInt8]] {
        let word = stamp.word
        var rows: [[UInt8]] = []
        for top in [true, false] {
            for blockRow in 0..<FrameStamp.Layout.rows {
                var row = [UInt8](repeating: Self.clearLuma, count: width)
                for column in 0..<FrameStamp.Layout.columns {
                    let index = blockRow * FrameStamp.Layout.columns + column
                    guard FrameStamp.bit(index, of: word) else { continue }
                    let block = FrameStamp.Layout.block(index, top: top, width: width, height: height)
                    for x in block.x { row[x] = Self.setLuma }
                }
                rows.append(row)
            }
        }
        return rows
    }
}
