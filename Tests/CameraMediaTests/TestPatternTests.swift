import CYUV
import CameraMedia
import CameraTestSupport
import Testing

/// A rendered frame, tightly packed.
struct RenderedFrame {
    var bytes: [UInt8]
    var format: PixelFormat
    var width: Int
    var height: Int

    init(_ stamp: FrameStamp, _ format: PixelFormat, width: Int, height: Int) {
        let pattern = TestPattern(width: width, height: height)
        bytes = [UInt8](repeating: 0xAA, count: pattern.frameSize(format))
        bytes.withUnsafeMutableBytes { pattern.render(stamp, format: format, into: $0) }
        self.format = format
        self.width = width
        self.height = height
    }

    init(bytes: [UInt8], format: PixelFormat, width: Int, height: Int) {
        self.bytes = bytes
        self.format = format
        self.width = width
        self.height = height
    }

    func decode() -> FrameStampDecoder.Result {
        bytes.withUnsafeBytes { FrameStampDecoder.decode(frame: $0, format: format, width: width, height: height) }
    }

    /// Y, U, V at a pixel of an NV12 frame.
    func nv12Pixel(x: Int, y: Int) -> (UInt8, UInt8, UInt8) {
        let uv = width * height + (y / 2) * width + (x / 2) * 2
        return (bytes[y * width + x], bytes[uv], bytes[uv + 1])
    }
}

let stamp = FrameStamp(sequence: 4242, timestampNanoseconds: 1_234_567_890_123)

@Suite struct TestPatternTests {
    @Test(arguments: [PixelFormat.yuyv, .nv12, .i420], [(640, 480), (1280, 720), (1920, 1080)])
    func eachFormatCarriesItsStampInBothBands(format: PixelFormat, size: (Int, Int)) {
        let result = RenderedFrame(stamp, format, width: size.0, height: size.1).decode()
        #expect(result.top == stamp)
        #expect(result.bottom == stamp)
        #expect(!result.isTorn)
    }

    /// A still picture redraws only the stamp blocks that changed: the bands
    /// then read exactly as a whole new frame's, the rest as the old frame's.
    @Test(arguments: [PixelFormat.yuyv, .nv12, .i420], [(640, 480), (1000, 562), (1920, 1080)])
    func redrawingTheStampOverTheLastMatchesANewFrameInTheBands(format: PixelFormat, size: (Int, Int)) throws {
        let (width, height) = size
        let old = FrameStamp(sequence: 7, timestampNanoseconds: 1_000_000_000)
        let new = FrameStamp(sequence: 15, timestampNanoseconds: 1_266_666_666)
        let pattern = TestPattern(width: width, height: height)
        var redrawn = RenderedFrame(old, format, width: width, height: height)
        let before = redrawn.bytes
        redrawn.bytes.withUnsafeMutableBytes { pattern.render(new, format: format, into: $0, over: old) }
        let whole = RenderedFrame(new, format, width: width, height: height)
        #expect(redrawn.decode().top == new && redrawn.decode().bottom == new)
        let band = FrameStamp.Layout.bandHeight(frameHeight: height)
        let luma = try #require(format.planes(width: width, height: height)?.first)
        var differences = 0
        for row in 0..<height {
            let line = luma.offset + row * luma.bytesPerRow
            let span = line..<line + width * (format == .yuyv ? 2 : 1)
            let expected = row < band || row >= height - band ? whole.bytes[span] : before[span]
            if redrawn.bytes[span] != expected { differences += 1 }
        }
        #expect(differences == 0, "luma rows that differ from what a whole redraw gives")
        let chroma = luma.offset + luma.bytesPerRow * height
        #expect(Array(redrawn.bytes[chroma...]) == Array(before[chroma...]), "the chroma is untouched")
        #expect(redrawn.bytes != before)
    }

    @Test func theBarsHaveTheirColours() {
        let frame = RenderedFrame(FrameStamp(sequence: 0, timestampMicroseconds: 0), .nv12, width: 640, height: 480)
        for (index, bar) in TestPattern.bars.enumerated() {
            let (y, u, v) = frame.nv12Pixel(x: index * 80 + 40, y: 240)
            #expect(y == bar.y && u == bar.u && v == bar.v, "bar \(index)")
        }
    }

    @Test func theBarsMoveEveryFrame() {
        let first = RenderedFrame(FrameStamp(sequence: 0, timestampMicroseconds: 0), .nv12, width: 640, height: 480)
        let second = RenderedFrame(FrameStamp(sequence: 1, timestampMicroseconds: 0), .nv12, width: 640, height: 480)
        let row = 240 * 640
        #expect(Array(second.bytes[row..<row + 640 - 4]) == Array(first.bytes[row + 4..<row + 640]))
        #expect(first.bytes[row..<row + 640] != second.bytes[row..<row + 640])
    }

    @Test func aFrameWhoseHalvesComeFromTwoFramesReadsAsTorn() {
        let a = RenderedFrame(FrameStamp(sequence: 1, timestampMicroseconds: 10), .nv12, width: 640, height: 480)
        let b = RenderedFrame(FrameStamp(sequence: 2, timestampMicroseconds: 20), .nv12, width: 640, height: 480)
        var torn = a
        torn.bytes.replaceSubrange(240 * 640..<480 * 640, with: b.bytes[240 * 640..<480 * 640])
        let result = torn.decode()
        #expect(result.isTorn)
        #expect(result.top?.sequence == 1)
        #expect(result.bottom?.sequence == 2)
        #expect(result.stamp == nil)
    }

    @Test(arguments: [(480, 270), (320, 180), (3840, 2160)])
    func theStampSurvivesScaling(size: (Int, Int)) {
        let source = RenderedFrame(stamp, .nv12, width: 1920, height: 1080)
        var scaled = [UInt8](repeating: 0, count: PixelFormat.nv12.frameSize(width: size.0, height: size.1)!)
        let result = source.bytes.withUnsafeBufferPointer { src in
            scaled.withUnsafeMutableBufferPointer { dst in
                NV12Scale(src.baseAddress, 1920, src.baseAddress! + 1920 * 1080, 1920, 1920, 1080,
                          dst.baseAddress, Int32(size.0), dst.baseAddress! + size.0 * size.1, Int32(size.0),
                          Int32(size.0), Int32(size.1), kFilterBilinear)
            }
        }
        #expect(result == 0)
        #expect(RenderedFrame(bytes: scaled, format: .nv12, width: size.0, height: size.1).decode().stamp == stamp)
    }

    @Test func theStampSurvivesConversionToBGRA() {
        let source = RenderedFrame(stamp, .nv12, width: 1280, height: 720)
        var bgra = [UInt8](repeating: 0, count: 1280 * 720 * 4)
        let result = source.bytes.withUnsafeBufferPointer { src in
            bgra.withUnsafeMutableBufferPointer { dst in
                NV12ToARGB(src.baseAddress, 1280, src.baseAddress! + 1280 * 720, 1280, dst.baseAddress, 1280 * 4, 1280, 720)
            }
        }
        #expect(result == 0)
        #expect(RenderedFrame(bytes: bgra, format: .bgra, width: 1280, height: 720).decode().stamp == stamp)
    }

    @Test func yuyvAndNV12FramesMatchAfterConversion() {
        let yuyv = RenderedFrame(stamp, .yuyv, width: 640, height: 480)
        let nv12 = RenderedFrame(stamp, .nv12, width: 640, height: 480)
        var converted = [UInt8](repeating: 0, count: 640 * 480 * 3 / 2)
        let result = yuyv.bytes.withUnsafeBufferPointer { src in
            converted.withUnsafeMutableBufferPointer { dst in
                YUY2ToNV12(src.baseAddress, 1280, dst.baseAddress, 640, dst.baseAddress! + 640 * 480, 640, 640, 480)
            }
        }
        #expect(result == 0)
        #expect(Array(converted[0..<640 * 480]) == Array(nv12.bytes[0..<640 * 480]), "the same luma")
    }

    @Test(arguments: [95, 50])
    func theStampSurvivesJPEG(quality: Int) throws {
        let pattern = TestPattern(width: 1280, height: 720)
        let jpeg = try pattern.renderJPEG(stamp, quality: quality)
        #expect(jpeg.prefix(2) == [0xFF, 0xD8], "a JPEG starts with SOI")
        let decoder = try JPEGDecoder()
        let (luma, width, height) = try decoder.decodeGray(jpeg)
        #expect(width == 1280 && height == 720)
        let result = luma.withUnsafeBytes { FrameStampDecoder.decode(luma: $0, width: width, height: height, bytesPerRow: width) }
        #expect(result.stamp == stamp)
    }

    @Test func aJPEGFrameHasTheBarsColours() throws {
        let jpeg = try TestPattern(width: 640, height: 480).renderJPEG(FrameStamp(sequence: 0, timestampMicroseconds: 0), quality: 95)
        let (pixels, _, _) = try JPEGDecoder().decodeBGRA(jpeg)
        // Yellow (bar 1) and blue (bar 6) at 75%: B, G, R.
        let yellow = (240 * 640 + 120) * 4
        let blue = (240 * 640 + 520) * 4
        #expect(pixels[yellow] < 40 && pixels[yellow + 1] > 160 && pixels[yellow + 2] > 160)
        #expect(pixels[blue] > 160 && pixels[blue + 1] < 40 && pixels[blue + 2] < 40)
    }
}
