import CameraMedia
import Foundation
import Testing

/// Photos from each source format: turbojpeg's decompressor reads them at the
/// asked size with the frame's stamp, and libexif's parser reads their EXIF.
@Suite struct PhotoEncoderTests {
    static let metadata = PhotoMetadata(
        make: "camerad", model: "Virtual Camera 0", software: "camerad 0.1.0",
        captured: Date(timeIntervalSince1970: 1_800_000_000.25), orientation: 6, pixelWidth: 320, pixelHeight: 240,
        exposureTime: (1, 100), iso: 400, flashFired: true)

    @Test(arguments: [PixelFormat.yuyv, .nv12, .mjpeg])
    func aPhotoDecodesAtTheAskedSizeWithTheFramesStampAndItsEXIF(source: PixelFormat) throws {
        let stamp = FrameStamp(sequence: 1234, timestampNanoseconds: 987_654_321)
        let frame = try sourceFrame(source, width: 640, height: 480, stamp: stamp)
        let photo = try frame.withUnsafeBytes { bytes in
            try PhotoEncoder().jpeg(bytes, source: FrameLayout(format: source, width: 640, height: 480),
                                    target: FrameVariant(format: .mjpeg, width: 320, height: 240), quality: 90,
                                    metadata: Self.metadata)
        }
        let decoded = try JPEGDecoder().decodeGray(photo)
        #expect(decoded.width == 320 && decoded.height == 240)
        let read = decoded.pixels.withUnsafeBytes {
            FrameStampDecoder.decode(luma: $0, width: 320, height: 240, bytesPerRow: 320)
        }
        #expect(read.stamp?.sequence == 1234, "\(source): \(read)")

        let exif = EXIF.values(in: photo)
        #expect(exif["Make"] == "camerad")
        #expect(exif["Model"] == "Virtual Camera 0")
        #expect(exif["Software"] == "camerad 0.1.0")
        #expect(exif["Orientation"] == "Right-top", "EXIF orientation 6: \(exif["Orientation"] ?? "none")")
        #expect(exif["PixelXDimension"] == "320" && exif["PixelYDimension"] == "240")
        #expect(exif["SubSecTimeOriginal"] == "250")
        #expect(exif["DateTimeOriginal"]?.count == 19, "\(exif["DateTimeOriginal"] ?? "none")")
        #expect(exif["ExposureTime"] == "1/100 sec.", "\(exif["ExposureTime"] ?? "none")")
        #expect(exif["ISOSpeedRatings"] == "400")
        #expect(exif["Flash"]?.hasPrefix("Flash fired") == true, "\(exif["Flash"] ?? "none")")
    }

    /// A camera's JPEG at the asked size and unturned passes through: the photo
    /// is the frame's bytes with only the EXIF segment added after SOI.
    @Test func anMJPEGFrameAtItsOwnSizePassesThroughUntouched() throws {
        let frame = try sourceFrame(.mjpeg, width: 640, height: 480, stamp: FrameStamp(sequence: 7, timestampNanoseconds: 0))
        var metadata = Self.metadata
        (metadata.pixelWidth, metadata.pixelHeight) = (640, 480)
        let photo = try frame.withUnsafeBytes { bytes in
            try PhotoEncoder().jpeg(bytes, source: FrameLayout(format: .mjpeg, width: 640, height: 480),
                                    target: FrameVariant(format: .mjpeg, width: 640, height: 480), quality: 90,
                                    metadata: metadata)
        }
        #expect(Array(photo[0..<4]) == [0xFF, 0xD8, 0xFF, 0xE1])
        let segment = 2 + (Int(photo[4]) << 8 | Int(photo[5]))
        #expect(Array(photo[0..<2]) + Array(photo[(2 + segment)...]) == frame, "the camera's bytes, untouched")
        #expect(EXIF.values(in: photo)["Model"] == "Virtual Camera 0")
    }
}
