import CameraMedia
import Testing

@Suite struct PixelFormatTests {
    @Test func fourccsAreV4L2s() {
        #expect(PixelFormat.yuyv.fourcc == 0x5659_5559)
        #expect(PixelFormat.nv12.code == "NV12")
        #expect(PixelFormat.mjpeg.code == "MJPG")
        #expect(PixelFormat(code: "YUYV") == .yuyv)
        #expect(PixelFormat(code: "TOOLONG") == nil)
    }

    @Test func planesAreTightlyPacked() {
        #expect(PixelFormat.yuyv.planes(width: 640, height: 480) == [PlaneLayout(offset: 0, bytesPerRow: 1280, height: 480)])
        #expect(PixelFormat.nv12.planes(width: 640, height: 480) == [
            PlaneLayout(offset: 0, bytesPerRow: 640, height: 480),
            PlaneLayout(offset: 640 * 480, bytesPerRow: 640, height: 240),
        ])
        #expect(PixelFormat.i420.frameSize(width: 640, height: 480) == 640 * 480 * 3 / 2)
        #expect(PixelFormat.bgra.frameSize(width: 4, height: 2) == 32)
        #expect(PixelFormat.mjpeg.planes(width: 640, height: 480) == nil)
    }
}

@Suite struct FrameStampTests {
    @Test(arguments: [(0, 0), (1, 1_000), (UInt32.max, UInt64(1) << 47), (123_456, 987_654_321)] as [(UInt32, UInt64)])
    func bitsRoundTrip(sequence: UInt32, micros: UInt64) {
        let stamp = FrameStamp(sequence: sequence, timestampMicroseconds: micros)
        #expect(stamp.bits.count == FrameStamp.Layout.bitCount)
        #expect(FrameStamp(bits: stamp.bits) == stamp)
    }

    @Test func anyFlippedBitIsCaught() {
        let bits = FrameStamp(sequence: 77, timestampMicroseconds: 5_000_000).bits
        for index in bits.indices {
            var damaged = bits
            damaged[index].toggle()
            #expect(FrameStamp(bits: damaged) == nil, "bit \(index)")
        }
    }

    @Test func timestampsAreMicrosecondsModulo2To48() {
        let stamp = FrameStamp(sequence: 1, timestampNanoseconds: 5_000_123_456)
        #expect(stamp.timestampMicroseconds == 5_000_123)
        #expect(FrameStamp(sequence: 1, timestampMicroseconds: (1 << 48) + 5).timestampMicroseconds == 5)
    }

    @Test func blocksTileEachBandWithoutOverlap() {
        var covered = Set<[Int]>()
        for index in 0..<FrameStamp.Layout.bitCount {
            let block = FrameStamp.Layout.block(index, top: true, width: 640, height: 480)
            #expect(block.x.count >= 29 && block.y.count == 20)
            for x in block.x { for y in block.y { #expect(covered.insert([x, y]).inserted) } }
        }
        let bottom = FrameStamp.Layout.block(0, top: false, width: 640, height: 480)
        #expect(bottom.y.lowerBound == 400)
    }
}
