import CTurboJPEG
import CYUV
import CameraMedia
import CameraTestSupport
import Testing

/// A source frame of the test pattern in any format.
func sourceFrame(_ format: PixelFormat, width: Int, height: Int, stamp: FrameStamp) throws -> [UInt8] {
    let pattern = TestPattern(width: width, height: height)
    if format == .mjpeg { return try pattern.renderJPEG(stamp, quality: 90) }
    if format == .bgra {
        let nv12 = RenderedFrame(stamp, .nv12, width: width, height: height).bytes
        var bgra = [UInt8](repeating: 0, count: width * height * 4)
        _ = nv12.withUnsafeBufferPointer { src in
            bgra.withUnsafeMutableBufferPointer { dst in
                NV12ToARGB(src.baseAddress, Int32(width), src.baseAddress! + width * height, Int32(width),
                           dst.baseAddress, Int32(width * 4), Int32(width), Int32(height))
            }
        }
        return bgra
    }
    if format == .argb {
        // BGRA's bytes the other way round: A, R, G, B.
        let bgra = try sourceFrame(.bgra, width: width, height: height, stamp: stamp)
        return stride(from: 0, to: bgra.count, by: 4).flatMap { bgra[$0..<$0 + 4].reversed() }
    }
    return RenderedFrame(stamp, format, width: width, height: height).bytes
}

func convert(_ frame: [UInt8], from source: FrameLayout, to variant: FrameVariant) throws -> [UInt8] {
    let converter = try FrameConverter(source: source, target: variant)
    var output = [UInt8](repeating: 0, count: converter.targetLayout.capacity)
    let written = try frame.withUnsafeBytes { input in
        try output.withUnsafeMutableBytes { try converter.convert(input, into: $0) }
    }
    return Array(output.prefix(written))
}

func meanAbsoluteDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
    precondition(a.count == b.count)
    var total = 0
    for index in a.indices { total += abs(Int(a[index]) - Int(b[index])) }
    return Double(total) / Double(a.count)
}

let converterStamp = FrameStamp(sequence: 31_337, timestampNanoseconds: 9_876_543_210_000)

@Suite struct FrameConverterTests {
    @Test(arguments: [PixelFormat.yuyv, .nv12, .i420, .bgra, .argb, .mjpeg], [PixelFormat.nv12, .i420, .yuyv, .bgra, .argb])
    func everyOutputFormatCarriesTheStamp(source: PixelFormat, target: PixelFormat) throws {
        let layout = FrameLayout(format: source, width: 1280, height: 720)
        let frame = try sourceFrame(source, width: 1280, height: 720, stamp: converterStamp)
        let output = try convert(frame, from: layout, to: FrameVariant(format: target, width: 1280, height: 720))
        #expect(output.count == target.frameSize(width: 1280, height: 720))
        let result = output.withUnsafeBytes { FrameStampDecoder.decode(frame: $0, format: target, width: 1280, height: 720) }
        #expect(result.stamp == converterStamp)
    }

    @Test(arguments: [(320, 240), (640, 360), (2560, 1440)], [PixelFormat.nv12, .bgra, .argb, .yuyv, .i420])
    func scaledOutputsCarryTheStamp(size: (Int, Int), target: PixelFormat) throws {
        for source in [PixelFormat.yuyv, .nv12, .mjpeg] {
            let layout = FrameLayout(format: source, width: 1920, height: 1080)
            let frame = try sourceFrame(source, width: 1920, height: 1080, stamp: converterStamp)
            let output = try convert(frame, from: layout, to: FrameVariant(format: target, width: size.0, height: size.1))
            let result = output.withUnsafeBytes { FrameStampDecoder.decode(frame: $0, format: target, width: size.0, height: size.1) }
            #expect(result.stamp == converterStamp, "\(source) → \(target) \(size)")
        }
    }

    @Test func unscaledOutputsEqualLibyuvsOwnConversion() throws {
        let (w, h) = (1280, 720)
        let nv12 = try sourceFrame(.nv12, width: w, height: h, stamp: converterStamp)
        let layout = FrameLayout(format: .nv12, width: w, height: h)
        let src = nv12.withUnsafeBufferPointer { $0.baseAddress! }
        let uv = src + w * h

        var i420 = [UInt8](repeating: 0, count: w * h * 3 / 2)
        i420.withUnsafeMutableBufferPointer { dst in
            let d = dst.baseAddress!
            _ = NV12ToI420(src, Int32(w), uv, Int32(w), d, Int32(w), d + w * h, Int32(w / 2), d + w * h * 5 / 4, Int32(w / 2), Int32(w), Int32(h))
        }
        #expect(try convert(nv12, from: layout, to: FrameVariant(format: .i420, width: w, height: h)) == i420)

        var bgra = [UInt8](repeating: 0, count: w * h * 4)
        bgra.withUnsafeMutableBufferPointer { dst in
            _ = NV12ToARGB(src, Int32(w), uv, Int32(w), dst.baseAddress, Int32(w * 4), Int32(w), Int32(h))
        }
        #expect(try convert(nv12, from: layout, to: FrameVariant(format: .bgra, width: w, height: h)) == bgra)
        // ARGB (CoreVideo's 32ARGB, V4L2 BA24) is BGRA's bytes the other way round, as libyuv's ARGBToBGRA makes them.
        var argb = [UInt8](repeating: 0, count: w * h * 4)
        _ = bgra.withUnsafeBufferPointer { s in
            argb.withUnsafeMutableBufferPointer { d in ARGBToBGRA(s.baseAddress, Int32(w * 4), d.baseAddress, Int32(w * 4), Int32(w), Int32(h)) }
        }
        #expect(argb[0..<4] == [bgra[3], bgra[2], bgra[1], bgra[0]], "A, R, G, B in memory")
        let converted = try convert(nv12, from: layout, to: FrameVariant(format: .argb, width: w, height: h))
        #expect(meanAbsoluteDifference(converted, argb) < 1.5, "through I420: equal within rounding")

        var yuyv = [UInt8](repeating: 0, count: w * h * 2)
        i420.withUnsafeBufferPointer { s in
            let p = s.baseAddress!
            yuyv.withUnsafeMutableBufferPointer { dst in
                _ = I420ToYUY2(p, Int32(w), p + w * h, Int32(w / 2), p + w * h * 5 / 4, Int32(w / 2), dst.baseAddress, Int32(w * 2), Int32(w), Int32(h))
            }
        }
        #expect(try convert(nv12, from: layout, to: FrameVariant(format: .yuyv, width: w, height: h)) == yuyv)
        #expect(try convert(nv12, from: layout, to: FrameVariant(unchanged: layout)) == nv12)
    }

    @Test func scaledOutputsMatchLibyuvsReferenceScaling() throws {
        let nv12 = try sourceFrame(.nv12, width: 1920, height: 1080, stamp: converterStamp)
        let layout = FrameLayout(format: .nv12, width: 1920, height: 1080)
        var reference = [UInt8](repeating: 0, count: 640 * 360 * 3 / 2)
        nv12.withUnsafeBufferPointer { s in
            reference.withUnsafeMutableBufferPointer { d in
                _ = NV12Scale(s.baseAddress, 1920, s.baseAddress! + 1920 * 1080, 1920, 1920, 1080,
                              d.baseAddress, 640, d.baseAddress! + 640 * 360, 640, 640, 360, kFilterBilinear)
            }
        }
        #expect(try convert(nv12, from: layout, to: FrameVariant(format: .nv12, width: 640, height: 360)) == reference)

        // A different path (through I420) to BGRA: equal within rounding.
        var referenceBGRA = [UInt8](repeating: 0, count: 640 * 360 * 4)
        reference.withUnsafeBufferPointer { s in
            referenceBGRA.withUnsafeMutableBufferPointer { d in
                _ = NV12ToARGB(s.baseAddress, 640, s.baseAddress! + 640 * 360, 640, d.baseAddress, 640 * 4, 640, 360)
            }
        }
        let bgra = try convert(nv12, from: layout, to: FrameVariant(format: .bgra, width: 640, height: 360))
        #expect(meanAbsoluteDifference(bgra, referenceBGRA) < 1.5)
    }

    /// Every luma pixel lands where the rotation (clockwise) then the mirror
    /// (left to right, in the output) put it — computed here pixel by pixel.
    @Test(arguments: Rotation.allCases, [false, true])
    func rotationAndMirroringMoveEveryPixelWhereExpected(rotation: Rotation, mirrored: Bool) throws {
        let (w, h) = (64, 48)
        var source = [UInt8](repeating: 0, count: w * h * 3 / 2)
        for index in 0..<w * h { source[index] = UInt8(truncatingIfNeeded: index &* 7 &+ index / w) }
        let (ow, oh) = rotation.swapsDimensions ? (h, w) : (w, h)
        let output = try convert(source, from: FrameLayout(format: .i420, width: w, height: h),
                                 to: FrameVariant(format: .i420, width: ow, height: oh, rotation: rotation, mirrored: mirrored))
        for v in 0..<oh {
            for u in 0..<ow {
                let unmirroredU = mirrored ? ow - 1 - u : u
                let (x, y): (Int, Int) = switch rotation {
                case .none: (unmirroredU, v)
                case .clockwise90: (v, h - 1 - unmirroredU)
                case .clockwise180: (w - 1 - unmirroredU, h - 1 - v)
                case .clockwise270: (w - 1 - v, unmirroredU)
                }
                #expect(output[v * ow + u] == source[y * w + x], "(\(u), \(v)) \(rotation) mirrored \(mirrored)")
                if output[v * ow + u] != source[y * w + x] { return }
            }
        }
    }

    @Test func rotatedFramesOfThePatternStillReadAfterTurningBack() throws {
        let layout = FrameLayout(format: .nv12, width: 640, height: 480)
        let frame = try sourceFrame(.nv12, width: 640, height: 480, stamp: converterStamp)
        let portrait = try convert(frame, from: layout, to: FrameVariant(format: .nv12, width: 480, height: 640, rotation: .clockwise90))
        let back = try convert(portrait, from: FrameLayout(format: .nv12, width: 480, height: 640),
                               to: FrameVariant(format: .nv12, width: 640, height: 480, rotation: .clockwise270))
        let result = back.withUnsafeBytes { FrameStampDecoder.decode(frame: $0, format: .nv12, width: 640, height: 480) }
        #expect(result.stamp == converterStamp)
    }

    @Test func mjpegPassesThroughByteForByte() throws {
        let jpeg = try sourceFrame(.mjpeg, width: 640, height: 480, stamp: converterStamp)
        let layout = FrameLayout(format: .mjpeg, width: 640, height: 480)
        #expect(try convert(jpeg, from: layout, to: FrameVariant(unchanged: layout)) == jpeg)
    }

    @Test func mjpegWith422ChromaIsDecodedLikeAWebcams() throws {
        let bgra = try sourceFrame(.bgra, width: 640, height: 480, stamp: converterStamp)
        let handle = try #require(tjInitCompress())
        defer { tjDestroy(handle) }
        var jpegPointer: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let status = bgra.withUnsafeBufferPointer {
            tjCompress2(handle, $0.baseAddress, 640, 640 * 4, 480, Int32(TJPF_BGRA.rawValue), &jpegPointer, &size,
                        Int32(TJSAMP_422.rawValue), 90, 0)
        }
        #expect(status == 0)
        let jpeg = Array(UnsafeBufferPointer(start: jpegPointer, count: Int(size)))
        tjFree(jpegPointer)
        let output = try convert(jpeg, from: FrameLayout(format: .mjpeg, width: 640, height: 480),
                                 to: FrameVariant(format: .nv12, width: 640, height: 480))
        let result = output.withUnsafeBytes { FrameStampDecoder.decode(frame: $0, format: .nv12, width: 640, height: 480) }
        #expect(result.stamp == converterStamp)
        // Chroma and all: close to the frame the JPEG was made from.
        let original = try sourceFrame(.nv12, width: 640, height: 480, stamp: converterStamp)
        let lumaCount = 640 * 480
        #expect(meanAbsoluteDifference(Array(output[..<lumaCount]), Array(original[..<lumaCount])) < 3)
        #expect(meanAbsoluteDifference(Array(output[lumaCount...]), Array(original[lumaCount...])) < 3)
    }

    /// '420f': the same frame as video-range NV12, every value stretched to
    /// 0–255 — whichever path made it (one libyuv call, or scaled and turned).
    @Test(arguments: [PixelFormat.yuyv, .nv12], [Rotation.none, .clockwise90])
    func fullRangeNV12IsVideoRangeStretched(source: PixelFormat, rotation: Rotation) throws {
        let (width, height) = (320, 240)
        let frame = try sourceFrame(source, width: width, height: height, stamp: FrameStamp(sequence: 5, timestampMicroseconds: 77))
        let layout = FrameLayout(format: source, width: width, height: height)
        let (w, h) = rotation.swapsDimensions ? (height, width) : (width, height)
        let video = try convert(frame, from: layout, to: FrameVariant(format: .nv12, width: w, height: h, rotation: rotation))
        let full = try convert(frame, from: layout, to: FrameVariant(format: .nv12, width: w, height: h, rotation: rotation,
                                                                     fullRange: true))
        let expected = video.enumerated().map { index, value in
            let v = Double(value)
            return UInt8(clamping: Int((index < w * h ? (v - 16) * 255 / 219 : 128 + (v - 128) * 255 / 224).rounded()))
        }
        #expect(full == expected)
        #expect(full.prefix(w * h).min() == 0 && full.prefix(w * h).max() == 255, "the pattern's black and white reach the ends")
        #expect(try !FrameConverter(source: FrameLayout(format: .nv12, width: w, height: h),
                                    target: FrameVariant(format: .nv12, width: w, height: h, fullRange: true)).passesThrough(),
                "the camera's own NV12 is video range: never passed through as full range")
    }

    @Test func impossibleVariantsAreRefusedUpFront() {
        let yuyv = FrameLayout(format: .yuyv, width: 640, height: 480)
        let mjpeg = FrameLayout(format: .mjpeg, width: 640, height: 480)
        #expect(throws: ConversionError.self) { try FrameConverter(source: yuyv, target: FrameVariant(format: .mjpeg, width: 640, height: 480)) }
        #expect(throws: ConversionError.self) { try FrameConverter(source: mjpeg, target: FrameVariant(format: .mjpeg, width: 320, height: 240)) }
        #expect(throws: ConversionError.self) { try FrameConverter(source: yuyv, target: FrameVariant(format: .nv12, width: 321, height: 240)) }
        #expect((try? FrameConverter(source: yuyv, target: FrameVariant(format: .bgra, width: 321, height: 241))) != nil, "BGRA takes any size")
        #expect(throws: ConversionError.self, "full range is NV12's alone ('420f')") {
            try FrameConverter(source: yuyv, target: FrameVariant(format: .i420, width: 640, height: 480, fullRange: true))
        }
    }

    /// A digital zoom of the plain pattern looks like the pattern drawn zoomed
    /// (TestPattern.zoom, what a virtual camera's zoom control does): two
    /// independent ways to magnify about the centre.
    @Test(arguments: [PixelFormat.nv12, .yuyv, .mjpeg])
    func aDigitalZoomMagnifiesTheMiddleOfTheFrame(source: PixelFormat) throws {
        let (width, height) = (640, 480)
        let stamp = FrameStamp(sequence: 0, timestampNanoseconds: 0)
        let frame = try sourceFrame(source, width: width, height: height, stamp: stamp)
        let converter = try FrameConverter(source: FrameLayout(format: source, width: width, height: height),
                                           target: FrameVariant(format: .nv12, width: width, height: height))
        var zoomed = [UInt8](repeating: 0, count: converter.targetLayout.capacity)
        _ = try frame.withUnsafeBytes { input in
            try zoomed.withUnsafeMutableBytes { try converter.convert(input, into: $0, zoom: 2) }
        }
        let pattern = TestPattern(width: width, height: height)
        pattern.zoom = 2
        var drawn = [UInt8](repeating: 0, count: pattern.frameSize(.nv12))
        drawn.withUnsafeMutableBytes { pattern.render(stamp, format: .nv12, into: $0) }
        // The bar rows between the bands, away from the zoomed-in bands' edges.
        let rows = (height * 2 / 5)..<(height * 3 / 5)
        let zoomedRows = Array(zoomed[rows.lowerBound * width..<rows.upperBound * width])
        let drawnRows = Array(drawn[rows.lowerBound * width..<rows.upperBound * width])
        #expect(meanAbsoluteDifference(zoomedRows, drawnRows) < 3, "\(source)")
        let plain = Array(try convert(frame, from: FrameLayout(format: source, width: width, height: height),
                                      to: FrameVariant(format: .nv12, width: width, height: height))[rows.lowerBound * width..<rows.upperBound * width])
        #expect(meanAbsoluteDifference(plain, drawnRows) > 10, "zoom 1 looks different from zoom 2")
    }
}
