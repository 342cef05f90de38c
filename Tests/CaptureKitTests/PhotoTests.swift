import CameraMedia
import CameraTestSupport
import CaptureKit
import Foundation
import Testing

extension CaptureKitEndToEnd {
/// Still photos through CapturePhotoOutput and `camctl snapshot`, against virtual
/// cameras: decoded with turbojpeg's decompressor, EXIF read with libexif's parser.
@Suite struct PhotoTests {
    static func photoOutput(for device: CaptureDevice) throws -> (CaptureSession, CapturePhotoOutput) {
        let session = CaptureSession()
        let output = CapturePhotoOutput()
        session.addInput(try CaptureDeviceInput(device: device))
        session.addOutput(output)
        return (session, output)
    }

    @Test(arguments: ["YUYV", "NV12", "MJPG"])
    func aPhotoOfAnIdleDeviceDecodesAtTheAskedSizeWithTheStampAndEXIF(fourcc: String) async throws {
        try await withCaptureKitDaemon(virtualCameras: 0) { _ in
            let device = try await CaptureDaemon.addVirtualCamera(
                localizedName: "Photo Camera", options: .init(pixelFormat: FourCharCode(fourcc)))
            let (_, output) = try Self.photoOutput(for: device)
            let photo = try await output.capturePhoto(with: PhotoSettings(
                maxPhotoDimensions: CMVideoDimensions(width: 640, height: 640)))
            let jpeg = [UInt8](try #require(photo.fileDataRepresentation()))
            let decoded = try JPEGDecoder().decodeGray(jpeg)
            #expect(decoded.width == 640 && decoded.height == 360, "the .photo mode is 1920x1080, fitted into 640x640")
            #expect(photo.dimensions == CMVideoDimensions(width: 640, height: 360))
            let stamp = decoded.pixels.withUnsafeBytes {
                FrameStampDecoder.decode(luma: $0, width: decoded.width, height: decoded.height, bytesPerRow: decoded.width)
            }
            #expect(stamp.stamp?.sequence == UInt32(truncatingIfNeeded: photo.sequenceNumber), "\(fourcc): \(stamp)")
            let exif = EXIF.values(in: jpeg)
            #expect(exif["Make"] == "camerad" && exif["Model"] == "Photo Camera", "\(exif)")
            #expect(exif["PixelXDimension"] == "640" && exif["PixelYDimension"] == "360")
            #expect(exif["Software"]?.hasPrefix("camerad ") == true && exif["DateTimeOriginal"] != nil)
            #expect(!photo.isPassedThrough)
            let statistics = try await CaptureDaemon.statistics(for: device)
            #expect(statistics.streams == 0, "nothing streams")
        }
    }

    /// While a client streams the camera's MJPEG, a photo at the running size is
    /// that very frame: its bytes with the EXIF segment added, nothing re-encoded.
    @Test func anMJPEGPhotoAtTheRunningSizeIsTheCamerasOwnJPEG() async throws {
        try await withCaptureKitDaemon(virtualCameras: 0) { _ in
            let device = try await CaptureDaemon.addVirtualCamera(options: .init(pixelFormat: FourCharCode("MJPG")))
            try await withStreamingSession(device) { session, _, frames in
                let output = CapturePhotoOutput()
                session.addOutput(output)
                var streamed: [UInt64: [UInt8]] = [:]
                let photo = try await output.capturePhoto(with: PhotoSettings())
                #expect(photo.isPassedThrough && photo.dimensions == CMVideoDimensions(width: 640, height: 480))
                for _ in 0..<10 {
                    let sample = try await frames.nextFrame()
                    streamed[sample.sequenceNumber] = try bytes(of: sample)
                    if streamed[photo.sequenceNumber] != nil { break }
                }
                let jpeg = [UInt8](photo.data)
                let segment = 2 + (Int(jpeg[4]) << 8 | Int(jpeg[5]))
                let frame = try #require(streamed[photo.sequenceNumber], "the photo's frame \(photo.sequenceNumber) was streamed")
                #expect(Array(jpeg[0..<2]) + Array(jpeg[(2 + segment)...]) == frame)
            }
        }
    }

    /// As AVCapturePhotoOutput: a JPEG keeps the camera's pixels and EXIF says
    /// how the connection turns and mirrors them.
    @Test func aJPEGsEXIFOrientationFollowsTheConnection() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let (_, output) = try Self.photoOutput(for: device)
            let connection = try #require(output.connection(with: .video))
            let cases: [(CaptureConnection.VideoOrientation, Bool, String)] = [
                (.landscapeRight, false, "Top-left"), (.portrait, false, "Right-top"), (.landscapeLeft, false, "Bottom-right"),
                (.portraitUpsideDown, false, "Left-bottom"), (.landscapeRight, true, "Top-right"), (.portrait, true, "Left-top"),
            ]
            for (orientation, mirrored, expected) in cases {
                connection.videoOrientation = orientation
                connection.isVideoMirrored = mirrored
                let photo = try await output.capturePhoto(with: PhotoSettings(
                    maxPhotoDimensions: CMVideoDimensions(width: 320, height: 320)))
                let jpeg = [UInt8](try #require(photo.fileDataRepresentation()))
                #expect(EXIF.values(in: jpeg)["Orientation"] == expected, "\(orientation) mirrored \(mirrored)")
                #expect(try JPEGDecoder().dimensions(of: jpeg) == (320, 180), "the camera's pixel order")
                // AVCapturePhoto.metadata says the same, as a number (EXIF's 1 to 8, in libexif's names' order).
                let names = ["Top-left", "Top-right", "Bottom-right", "Bottom-left", "Left-top", "Right-top", "Right-bottom", "Left-bottom"]
                #expect(photo.metadata[kCGImagePropertyOrientation] as? Int == names.firstIndex(of: expected).map { $0 + 1 })
            }
        }
    }

    /// AVCapturePhoto.metadata is the file's EXIF: every value in it is what
    /// libexif reads in the JPEG.
    @Test func aPhotosMetadataIsWhatLibexifReadsInItsFile() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let (_, output) = try Self.photoOutput(for: device)
            let photo = try await output.capturePhoto(with: PhotoSettings(flashMode: .on))
            let exif = EXIF.values(in: [UInt8](try #require(photo.fileDataRepresentation())))
            let metadata = photo.metadata
            let tiff = try #require(metadata[kCGImagePropertyTIFFDictionary] as? [String: Any])
            let exifDictionary = try #require(metadata[kCGImagePropertyExifDictionary] as? [String: Any])
            for key in [kCGImagePropertyTIFFMake, kCGImagePropertyTIFFModel, kCGImagePropertyTIFFSoftware, kCGImagePropertyTIFFDateTime] {
                #expect(tiff[key] as? String == exif[key], "\(key)")
            }
            #expect(exifDictionary[kCGImagePropertyExifDateTimeOriginal] as? String == exif["DateTimeOriginal"])
            #expect(exifDictionary[kCGImagePropertyExifSubsecTimeOriginal] as? String == exif["SubSecTimeOriginal"])
            for key in [kCGImagePropertyExifPixelXDimension, kCGImagePropertyExifPixelYDimension] {
                #expect((exifDictionary[key] as? Int).map(String.init) == exif[key], "\(key)")
            }
            #expect(exifDictionary[kCGImagePropertyExifFlash] as? Int == 1 && exif["Flash"]?.hasPrefix("Flash fired") == true)
            #expect(metadata[kCGImagePropertyPixelWidth] as? Int == Int(photo.dimensions.width))
            // An uncompressed photo carries no EXIF, so no metadata.
            let raw = try await output.capturePhoto(with: PhotoSettings(codec: .bgra))
            #expect(raw.metadata.isEmpty)
        }
    }

    @Test func uncompressedPhotosAreTheFrameInTheAskedFormat() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let (_, output) = try Self.photoOutput(for: device)
            output.connection(with: .video)?.videoOrientation = .portrait
            let photo = try await output.capturePhoto(with: PhotoSettings(
                codec: .nv12, maxPhotoDimensions: CMVideoDimensions(width: 640, height: 360)))
            #expect(photo.pixelFormat == FourCharCode("NV12") && photo.dimensions == CMVideoDimensions(width: 360, height: 640),
                    "portrait turns it")
            #expect(photo.data.count == 360 * 640 * 3 / 2 && photo.fileDataRepresentation() == nil)
        }
    }

    /// The virtual camera's flash brightens the photo; `.auto` fires only when the
    /// picture is dark.
    @Test func theFlashFiresWhenAskedAndInAutoOnlyInTheDark() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            #expect(device.isFlashModeSupported(.on) && device.isFlashModeSupported(.auto))
            let (_, output) = try Self.photoOutput(for: device)
            func shot(_ flash: CaptureDevice.FlashMode) async throws -> (photo: CapturePhoto, luma: Double) {
                let photo = try await output.capturePhoto(with: PhotoSettings(
                    flashMode: flash, maxPhotoDimensions: CMVideoDimensions(width: 320, height: 320)))
                let gray = try JPEGDecoder().decodeGray([UInt8](photo.data))
                let rows = gray.pixels[(gray.width * gray.height * 2 / 5)..<(gray.width * gray.height * 3 / 5)]
                return (photo, Double(rows.reduce(0) { $0 + Int($1) }) / Double(rows.count))
            }
            let plain = try await shot(.off)
            let lit = try await shot(.on)
            #expect(!plain.photo.isFlashFired && lit.photo.isFlashFired)
            #expect(lit.luma > plain.luma * 1.3, "flashed \(lit.luma) vs \(plain.luma)")
            #expect(EXIF.values(in: [UInt8](lit.photo.data))["Flash"]?.hasPrefix("Flash fired") == true)
            #expect(EXIF.values(in: [UInt8](plain.photo.data))["Flash"]?.hasPrefix("Flash did not fire") == true)
            #expect(!(try await shot(.auto)).photo.isFlashFired, "bright enough")

            try await device.lockForConfiguration()
            try await device.setControls([("brightness", 0)])
            try await device.setExposureModeCustom(duration: CMTime(value: 1, timescale: 1000), iso: 100)
            await device.unlockForConfiguration()
            let dark = try await shot(.auto)
            #expect(dark.photo.isFlashFired, "dark: \(dark.luma)")
            try await device.refresh()
            #expect(device.control(named: "led_mode")?.value == 0, "the LED is back off")
        }
    }

    @Test func aPhotoWithoutADeviceOrOfAnUnknownDeviceIsAClearError() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            let output = CapturePhotoOutput()
            await #expect(throws: CaptureError.self) { _ = try await output.capturePhoto(with: PhotoSettings()) }
            let missing = try await camctl(["snapshot", "virtual-9", "\(temporaryFolder)/none.jpg"], socket: daemon.socketPath)
            #expect(missing.status == 1 && missing.standardError.contains("no device 'virtual-9'"))
        }
    }

    @Test func camctlSnapshotWritesWholeFilesAndKeepsExistingOnes() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            try await withTemporaryDirectory { folder in
                let file = folder + "/shot.jpg"
                let first = try await camctl(["snapshot", "virtual-0", file, "--size", "320x240"], socket: daemon.socketPath)
                #expect(first.status == 0, "\(first.standardError)")
                let jpeg = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
                // The .photo mode is 1920x1080, fitted into 320x240.
                #expect(first.lines == ["\(file): \(jpeg.count) bytes, MJPG 320x180"])
                #expect(try JPEGDecoder().dimensions(of: jpeg) == (320, 180))

                let again = try await camctl(["snapshot", "virtual-0", file], socket: daemon.socketPath)
                #expect(again.status == 1 && again.standardError.contains("exists; pass --force"))
                #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: file))) == jpeg, "kept")
                let forced = try await camctl(["snapshot", "virtual-0", file, "--force", "--format", "bgra"],
                                              socket: daemon.socketPath)
                #expect(forced.status == 0, "\(forced.standardError)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: file)).count == 1920 * 1080 * 4)

                let nowhere = try await camctl(["snapshot", "virtual-0", folder + "/missing/shot.jpg"], socket: daemon.socketPath)
                #expect(nowhere.status == 1 && nowhere.standardError.contains("cannot write in \(folder)/missing"))
                let full = try await camctl(["snapshot", "virtual-0", "/dev/full"], socket: daemon.socketPath)
                #expect(full.status == 1, "\(full.standardError)")
                let left = try FileManager.default.contentsOfDirectory(atPath: folder)
                #expect(left == ["shot.jpg"], "no temporary file is left: \(left)")
            }
        }
    }

    /// A device streaming a smaller mode: anyone gets the photo at that size, told
    /// so; the lock holder gets the photo mode, and the streams go on.
    @Test func onlyTheLockHolderSwitchesAStreamingDeviceToItsPhotoMode() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            let device = try await CaptureDevice.matching("virtual-0")
            try await withStreamingSession(device, preset: .vga640x480) { session, _, frames in
                _ = try await frames.nextFrame()
                let other = try await camctl(["snapshot", "virtual-0", "\(temporaryFolder)/camerad-photo-\(getpid()).jpg",
                                              "--force"], socket: daemon.socketPath)
                #expect(other.status == 0 && other.lines.first?.hasSuffix("MJPG 640x480") == true, "\(other)")
                #expect(other.standardError.contains("note: the device runs YUYV 640x480"), "\(other.standardError)")
                try? FileManager.default.removeItem(atPath: "\(temporaryFolder)/camerad-photo-\(getpid()).jpg")

                let output = CapturePhotoOutput()
                session.addOutput(output)
                try await device.lockForConfiguration()
                let photo = try await output.capturePhoto(with: PhotoSettings())
                await device.unlockForConfiguration()
                #expect(photo.dimensions == CMVideoDimensions(width: 1920, height: 1080) && photo.note == nil)
                for _ in 0..<5 {
                    let sample = try await frames.nextFrame()
                    #expect(sample.imageBuffer?.width == 640, "the stream keeps its size")
                }
                #expect(device.activeFormat.dimensions.width == 640, "and the device is back in its mode")
            }
        }
    }

    @Test func aDeviceThatGoesDuringTheShotEndsItWithDeviceDisconnected() async throws {
        try await withCaptureKitDaemon(virtualCameras: 0) { _ in
            // One frame a second, and the flash waits for the next one.
            let device = try await CaptureDaemon.addVirtualCamera(options: .init(frameDuration: CMTime(value: 1, timescale: 1)))
            let (_, output) = try Self.photoOutput(for: device)
            let shot = Task { try await output.capturePhoto(with: PhotoSettings(flashMode: .on)) }
            // The photo started the idle device and waits for its frame.
            #expect(try await waitUntil { try await CaptureDaemon.statistics(for: device).isCapturing })
            try await CaptureDaemon.removeVirtualCamera(uniqueID: device.uniqueID)
            do {
                _ = try await shot.value
                Issue.record("the photo of a removed device succeeded")
            } catch let error as CaptureError {
                #expect(error.code == .deviceDisconnected, "\(error)")
            }
        }
    }

    /// Photos taken while three other processes stream: the device keeps
    /// running in its mode for them (no restart: one unbroken run of sequence
    /// numbers at the camera's rate), and each of their frames is delivered or
    /// reported dropped.
    @Test func photosLeaveOtherStreamsTheirRun() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            let streams = try (0..<3).map { _ in
                try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", "virtual-0", "--count", "150",
                                                     "--pixel-format", "nv12", "--json"])
            }
            let device = try await CaptureDevice.matching("virtual-0")
            let (_, output) = try Self.photoOutput(for: device)
            #expect(try await waitUntil { try await CaptureDaemon.statistics(for: device).streams == 3 })
            var photos = 0
            while photos < 10 || streams.contains(where: \.process.isRunning) {
                _ = try await output.capturePhoto(with: PhotoSettings())
                photos += 1
                if photos >= 200 { break }
            }
            #expect(photos >= 10, "\(photos) photos")
            for stream in streams {
                let report = try StreamReport(await stream.stop(signal: 0, timeout: .seconds(60)))
                print("a stream beside \(photos) photos: \(report)")
                #expect(report.frames == 150 && report.accountsForEveryFrame, "\(report)")
                #expect(abs(report.deviceFramesPerSecond - 30) < 0.3, "the camera's rate, from its stamps: \(report)")
            }
        }
    }

    /// A real full disk: a 16 KiB tmpfs (mounting needs root; skipped otherwise).
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullDiskIsAClearErrorAndLeavesNoPartialFile() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            try await withTemporaryDirectory { folder in
                let small = folder + "/small"
                try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: false)
                let mount = try await runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=16k", "tmpfs", small])
                try #require(mount.status == 0, "mount: \(mount.standardError)")
                defer { _ = umount(small) }
                let full = try await camctl(["snapshot", "virtual-0", small + "/shot.jpg", "--quality", "100"],
                                            socket: daemon.socketPath)
                #expect(full.status == 1 && full.standardError.contains("No space left on device"), "\(full)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: small).isEmpty, "no partial file")
            }
        }
    }
}
}
