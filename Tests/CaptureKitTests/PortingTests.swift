import CameraTestSupport
import CaptureKit
import Foundation
import Testing

// Issue 16's and 33's porting test: eight programs written as the seed articles write
// them (../shared/seeds: 003's Swift, 000–002's Objective-C read as Swift),
// compiled against CaptureKit and run against a real camerad. Every line that
// had to change says so with `// Linux:` and why; everything else is the
// seeds' own code with the `AV` prefix dropped. docs/ARCHITECTURE.md lists the
// differences.

extension CaptureKitEndToEnd {
@Suite struct PortingTests {
    /// Two virtual cameras as a phone's: the first in front, the second at the back.
    func withPhoneCameras<T>(_ body: (DaemonProcess) async throws -> T) async throws -> T {
        try await withCaptureKitDaemon(virtualCameras: 2) { daemon in try await body(daemon) }
    }

    // MARK: 1. Discover and configure a camera (seeds 000 and 001)

    @Test func discoverAndConfigureACamera() async throws {
        try await withPhoneCameras { daemon in
            // The seed's selectFrontCaptureDevice, word for word but for the await.
            let deviceTypes: [CaptureDevice.DeviceType] = [
                .builtInWideAngleCamera,
                .builtInTrueDepthCamera,
                .builtInTelephotoCamera,
                .builtInUltraWideCamera,
                .builtInDualCamera,
                .builtInDualWideCamera,
                .builtInTripleCamera,
            ]
            let discoverySession = CaptureDevice.DiscoverySession(deviceTypes: deviceTypes, mediaType: .video, position: .front)
            let front = try await discoverySession.devices.first  // Linux: `await` — the cameras live in camerad
            #expect(front?.position == .front)

            // selectBackCaptureDevice.
            let back = try await CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back)  // Linux: `try await`
            let device = try #require(back)

            // The seeds' configuration: lock, set, unlock.
            try await device.lockForConfiguration()  // Linux: `await` (Apple's is `try` alone)
            if device.isFocusModeSupported(.locked) {
                device.focusMode = .locked
            }
            if device.isExposureModeSupported(.continuousAutoExposure) {
                device.exposureMode = .continuousAutoExposure
            }
            if device.isWhiteBalanceModeSupported(.continuousAutoWhiteBalance) {
                device.whiteBalanceMode = .continuousAutoWhiteBalance
            }
            device.videoZoomFactor = min(2, device.activeFormat.videoMaxZoomFactor)
            let format = try #require(device.formats.first { $0.dimensions.width == 1280 && $0.dimensions.height == 720 })
            device.activeFormat = format
            device.activeVideoMinFrameDuration = CMTimeMake(value: 1, timescale: 15)
            await device.unlockForConfiguration()  // Linux: `await` — the change goes to camerad here

            // What camerad now runs, as another process sees it.
            let other = try await camctl(["get", device.uniqueID, "videoZoomFactor"], socket: daemon.socketPath)
            #expect(other.lines == ["videoZoomFactor: 2.0"], "\(other.standardError)")
            try await device.refresh()  // Linux: properties are what CaptureKit last heard
            #expect(device.focusMode == .locked && device.videoZoomFactor == 2)
            #expect(device.activeFormat.dimensions == format.dimensions)
            #expect(device.activeVideoMinFrameDuration == CMTimeMake(value: 1, timescale: 15))
        }
    }

    // MARK: 2. A video data output computing luma, portrait and mirrored (seed 003)

    final class LumaViewController: NSObject, CaptureVideoDataOutputSampleBufferDelegate {
        let captureSession = CaptureSession()
        private let frames = AsyncStream<(width: Int, height: Int, luma: Double, ok: Bool)>.makeStream()
        var measured: AsyncStream<(width: Int, height: Int, luma: Double, ok: Bool)> { frames.stream }

        func configureSession() async throws {
            // 选择视频质量
            captureSession.sessionPreset = .medium
            // 选择前置摄像头
            guard let captureDevice = try await selectFrontCaptureDevice() else { return }  // Linux: `try await`
            guard let captureDeviceInput = try? CaptureDeviceInput(device: captureDevice) else { return }
            guard captureSession.canAddInput(captureDeviceInput) else { return }
            captureSession.addInput(captureDeviceInput)

            // 视频帧输出
            let videoOutput = CaptureVideoDataOutput()
            videoOutput.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange]
            videoOutput.setSampleBufferDelegate(self, queue: DispatchQueue(label: "sample buffer"))
            guard captureSession.canAddOutput(videoOutput) else { return }
            captureSession.addOutput(videoOutput)

            guard let connection = videoOutput.connection(with: MediaType.video) else { return }
            if connection.isVideoOrientationSupported {
                connection.videoOrientation = .portrait
            }
            if connection.isVideoMirroringSupported {
                // 设置像照镜子一样
                connection.isVideoMirrored = true
            }
        }

        private func selectFrontCaptureDevice() async throws -> CaptureDevice? {  // Linux: `async throws`
            let discoverySession = CaptureDevice.DiscoverySession(deviceTypes: [.builtInWideAngleCamera], mediaType: .video, position: .front)
            return try await discoverySession.devices.first
        }

        // 处理每一帧的数据
        func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: CaptureConnection) {
            guard let imageBuffer = CMSampleBufferGetImageBuffer(sampleBuffer) else { return }
            CVPixelBufferLockBaseAddress(imageBuffer, .readOnly)
            defer { CVPixelBufferUnlockBaseAddress(imageBuffer, .readOnly) }
            let width = CVPixelBufferGetWidth(imageBuffer)
            let height = CVPixelBufferGetHeight(imageBuffer)
            let bytesPerRow = CVPixelBufferGetBytesPerRowOfPlane(imageBuffer, 0)
            guard let base = CVPixelBufferGetBaseAddressOfPlane(imageBuffer, 0) else { return }
            let luma = base.assumingMemoryBound(to: UInt8.self)
            var sum = 0
            for y in 0..<height {
                for x in 0..<width { sum += Int(luma[y * bytesPerRow + x]) }
            }
            // The camera's frame, scaled to .medium's 480x360, turned and mirrored.
            let ok = Self.isTurnedAndMirrored(luma, bytesPerRow, width, height, sampleBuffer)
            frames.continuation.yield((width, height, Double(sum) / Double(width * height), ok))
        }

        /// Portrait then mirrored: output (u, v) shows (x, y) = (v, u) of the
        /// landscape frame — checked against the camera's frame (640x480, redrawn
        /// from the sample's stamp) scaled by libyuv to 480x360, within rounding.
        static func isTurnedAndMirrored(
            _ luma: UnsafePointer<UInt8>, _ bytesPerRow: Int, _ width: Int, _ height: Int, _ sample: SampleBuffer
        ) -> Bool {
            let scaled = Reference.scaled(sourceFrame(of: sample), 640, 480, to: height, width)
            var difference = 0, count = 0
            for v in stride(from: 0, to: height, by: 3) {
                for u in stride(from: 0, to: width, by: 3) {
                    difference += abs(Int(luma[v * bytesPerRow + u]) - Int(scaled[u * height + v]))
                    count += 1
                }
            }
            return Double(difference) / Double(count) < 1.5
        }
    }

    @Test func aVideoDataOutputComputingLumaPortraitAndMirrored() async throws {
        try await withPhoneCameras { _ in
            let controller = LumaViewController()
            try await controller.configureSession()
            await controller.captureSession.startRunning()  // Linux: `await`
            var frames = controller.measured.makeAsyncIterator()
            for _ in 0..<5 {
                let frame = try #require(await frames.next())
                // .medium is 480x360 landscape; portrait turns it.
                #expect((frame.width, frame.height) == (360, 480))
                #expect(frame.luma > 16 && frame.luma < 235, "the bars' luma, not garbage")
                #expect(frame.ok, "turned and mirrored as the connection says")
            }
            await controller.captureSession.stopRunning()  // Linux: `await`
        }
    }

    // MARK: 3. A photo with flash (seed 000's still image output, as AVCapturePhotoOutput)

    final class PhotoDelegate: NSObject, CapturePhotoCaptureDelegate {
        let done = AsyncStream<(CapturePhoto, (any Error)?)>.makeStream()
        let calls = AsyncStream<String>.makeStream()

        func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings) {
            calls.continuation.yield("willBeginCapture \(resolvedSettings.uniqueID)")
        }

        func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: Error?) {
            calls.continuation.yield("didFinishProcessingPhoto")
            done.continuation.yield((photo, error))
        }

        func photoOutput(_ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings, error: Error?) {
            calls.continuation.yield("didFinishCapture \(resolvedSettings.uniqueID) \(resolvedSettings.photoDimensions.width)")
        }
    }

    @Test func aPhotoWithFlash() async throws {
        try await withPhoneCameras { _ in
            let session = CaptureSession()
            let device = try #require(try await CaptureDevice.default(for: .video))  // Linux: `try await`
            session.addInput(try CaptureDeviceInput(device: device))
            let photoOutput = CapturePhotoOutput()
            guard session.canAddOutput(photoOutput) else { Issue.record("cannot add the photo output"); return }
            session.addOutput(photoOutput)

            var settings = PhotoSettings()  // Linux: PhotoSettings, not AVCapturePhotoSettings
            settings.flashMode = photoOutput.supportedFlashModes.contains(.on) ? .on : .off
            let delegate = PhotoDelegate()
            photoOutput.capturePhoto(with: settings, delegate: delegate)
            var results = delegate.done.stream.makeAsyncIterator()
            let (photo, error) = try #require(await results.next())
            #expect(error == nil)
            let data = try #require(photo.fileDataRepresentation())
            #expect(data.starts(with: [0xFF, 0xD8]), "a JPEG")
            #expect(photo.isFlashFired == photoOutput.supportedFlashModes.contains(.on))
            var calls = delegate.calls.stream.makeAsyncIterator()
            let begin = try #require(await calls.next())
            #expect(begin.hasPrefix("willBeginCapture "))
            #expect(await calls.next() == "didFinishProcessingPhoto")
            #expect(await calls.next() == "didFinishCapture \(begin.dropFirst(17)) \(photo.dimensions.width)", "in Apple's order")
        }
    }

    // MARK: 4. Device and session notifications while cameras come and go

    @Test func deviceAndSessionNotificationsWhileCamerasComeAndGo() async throws {
        try await withPhoneCameras { _ in
            let recorder = NotificationRecorder([
                .CaptureDeviceWasConnected, .CaptureDeviceWasDisconnected,
                .CaptureSessionDidStartRunning, .CaptureSessionRuntimeError, .CaptureSessionDidStopRunning,
            ])
            try await CaptureDevice.beginGeneratingDeviceNotifications()  // Linux: asked for, as UIDevice's orientation is
            defer { CaptureDevice.endGeneratingDeviceNotifications() }

            let added = try await CaptureDaemon.addVirtualCamera(index: 5)  // Linux: plugging a camera in
            let session = CaptureSession()
            session.addInput(try CaptureDeviceInput(device: added))
            session.addOutput(CaptureVideoDataOutput())
            await session.startRunning()
            try await CaptureDaemon.removeVirtualCamera(uniqueID: added.uniqueID)  // and pulling it out

            #expect(await recorder.wait(for: 5), "\(recorder.notifications.map(\.name.rawValue))")
            let names = recorder.notifications.map(\.name)
            #expect(names.first == .CaptureDeviceWasConnected)
            #expect(names.contains(.CaptureSessionDidStartRunning))
            #expect(names.contains(.CaptureDeviceWasDisconnected))
            #expect(names.contains(.CaptureSessionRuntimeError), "the session says why it stopped")
            #expect(names.contains(.CaptureSessionDidStopRunning))
            #expect(!added.isConnected && !session.isRunning && !session.isInterrupted)
        }
    }

    // MARK: 5. A flashlight: the torch with no session running (seed 001's configuration)

    @Test func aFlashlight() async throws {
        try await withPhoneCameras { daemon in
            let device = try #require(try await CaptureDevice.default(for: .video))  // Linux: `try await`
            #expect(device.hasTorch, "the phone's back camera has one")
            try await device.lockForConfiguration()  // Linux: `await`
            if device.isTorchModeSupported(.on) {
                device.torchMode = .on
            }
            device.videoZoomFactor = 10  // beyond the camera's: refused here, as Apple's raises, and said
            await device.unlockForConfiguration()  // Linux: `await`
            #expect(device.isTorchActive && device.videoZoomFactor == 1)

            // Lit with no session running, as another process sees it.
            let torch = try await camctl(["get", device.uniqueID, "torchMode"], socket: daemon.socketPath)
            #expect(torch.lines == ["torchMode: on"], "\(torch.standardError)")
        }
    }

    // MARK: 6. Luma of BGRA frames, the settings an NSNumber (seeds 000 and 002's video data output)

    final class BGRALumaDelegate: NSObject, CaptureVideoDataOutputSampleBufferDelegate {
        let lumas = AsyncStream<(luma: Double, width: Int, height: Int)>.makeStream()

        func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: CaptureConnection) {
            guard let imageBuffer = CMSampleBufferGetImageBuffer(sampleBuffer) else { return }
            CVPixelBufferLockBaseAddress(imageBuffer, .readOnly)
            defer { CVPixelBufferUnlockBaseAddress(imageBuffer, .readOnly) }
            let width = CVPixelBufferGetWidth(imageBuffer)
            let height = CVPixelBufferGetHeight(imageBuffer)
            let bytesPerRow = CVPixelBufferGetBytesPerRow(imageBuffer)
            guard let base = CVPixelBufferGetBaseAddress(imageBuffer) else { return }
            let pixels = base.assumingMemoryBound(to: UInt8.self)
            var sum = 0.0
            for y in 0..<height {
                for x in 0..<width {
                    let pixel = pixels + y * bytesPerRow + x * 4  // B, G, R, A
                    sum += 0.114 * Double(pixel[0]) + 0.587 * Double(pixel[1]) + 0.299 * Double(pixel[2])
                }
            }
            lumas.continuation.yield((sum / Double(width * height), width, height))
        }
    }

    @Test func lumaOfBGRAFramesWithTheSettingsAnNSNumber() async throws {
        try await withPhoneCameras { _ in
            let captureSession = CaptureSession()
            captureSession.sessionPreset = .vga640x480
            let device = try #require(try await CaptureDevice.default(for: .video))  // Linux: `try await`
            captureSession.addInput(try CaptureDeviceInput(device: device))

            let videoDataOutput = CaptureVideoDataOutput()
            videoDataOutput.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: NSNumber(value: kCVPixelFormatType_32BGRA)]
            // discard if the data output queue is blocked (as we process the still image)
            videoDataOutput.alwaysDiscardsLateVideoFrames = true
            let videoDataOutputQueue = DispatchQueue(label: "VideoDataOutputQueue")
            let delegate = BGRALumaDelegate()
            videoDataOutput.setSampleBufferDelegate(delegate, queue: videoDataOutputQueue)
            if captureSession.canAddOutput(videoDataOutput) {
                captureSession.addOutput(videoDataOutput)
            }
            #expect(videoDataOutput.availableVideoPixelFormatTypes.contains(kCVPixelFormatType_32BGRA))

            await captureSession.startRunning()  // Linux: `await`
            #expect(captureSession.isRunning, "an NSNumber is the usual spelling, taken as the integer")
            var lumas = delegate.lumas.stream.makeAsyncIterator()
            for _ in 0..<3 {
                let frame = try #require(await lumas.next())
                #expect((frame.width, frame.height) == (640, 480))
                #expect(frame.luma > 16 && frame.luma < 235, "the bars' luma, not garbage: \(frame.luma)")
            }
            await captureSession.stopRunning()  // Linux: `await`
        }
    }

    // MARK: 7. A photo with the flash modes the output supports, and its metadata

    final class MetadataPhotoDelegate: NSObject, CapturePhotoCaptureDelegate {
        let photos = AsyncStream<(CapturePhoto, (any Error)?)>.makeStream()
        let calls = AsyncStream<String>.makeStream()

        func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {
            calls.continuation.yield("willCapturePhoto")
        }

        func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {
            calls.continuation.yield("didCapturePhoto")
        }

        func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: Error?) {
            calls.continuation.yield("didFinishProcessingPhoto")
            photos.continuation.yield((photo, error))
        }
    }

    @Test func aPhotoWithTheSupportedFlashModesAndItsMetadata() async throws {
        try await withPhoneCameras { _ in
            let session = CaptureSession()
            session.sessionPreset = .photo
            let device = try #require(try await CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back))  // Linux: `try await`
            session.addInput(try CaptureDeviceInput(device: device))
            let photoOutput = CapturePhotoOutput()
            session.addOutput(photoOutput)
            photoOutput.isHighResolutionCaptureEnabled = true

            var settings = PhotoSettings()  // Linux: PhotoSettings, not AVCapturePhotoSettings
            if photoOutput.supportedFlashModes.contains(.auto) {
                settings.flashMode = .auto
            }
            settings.isHighResolutionPhotoEnabled = true
            let delegate = MetadataPhotoDelegate()
            photoOutput.capturePhoto(with: settings, delegate: delegate)

            var photos = delegate.photos.stream.makeAsyncIterator()
            let (photo, error) = try #require(await photos.next())
            #expect(error == nil)
            let metadata = photo.metadata
            let exif = try #require(metadata[kCGImagePropertyExifDictionary as String] as? [String: Any])
            let tiff = try #require(metadata[kCGImagePropertyTIFFDictionary as String] as? [String: Any])
            let orientation = metadata[kCGImagePropertyOrientation as String] as? Int
            #expect(orientation == 1, "a landscape photo, stored as it is")
            #expect(tiff[kCGImagePropertyTIFFMake as String] as? String == "camerad")
            #expect(tiff[kCGImagePropertyTIFFModel as String] as? String == device.localizedName)
            #expect(exif[kCGImagePropertyExifPixelXDimension as String] as? Int == Int(photo.dimensions.width))
            #expect(exif[kCGImagePropertyExifPixelYDimension as String] as? Int == Int(photo.dimensions.height))
            #expect((exif[kCGImagePropertyExifDateTimeOriginal as String] as? String)?.count == 19, "yyyy:MM:dd HH:mm:ss")
            let flash = exif[kCGImagePropertyExifFlash as String] as? Int
            #expect(flash.map { $0 & 1 == 1 } == photo.isFlashFired, "the EXIF's flash bit is the photo's")

            var calls = delegate.calls.stream.makeAsyncIterator()
            #expect(await calls.next() == "willCapturePhoto")
            #expect(await calls.next() == "didCapturePhoto")
            #expect(await calls.next() == "didFinishProcessingPhoto")
        }
    }

    // MARK: 8. A capture class observing its session (seeds 001 and 002's KFVideoCapture)

    final class VideoCapture {
        let captureSession = CaptureSession()
        let heard = AsyncStream<String>.makeStream()
        private var observers: [NSObjectProtocol] = []

        init() {
            let center = NotificationCenter.default
            let heard = heard.continuation
            observers.append(center.addObserver(forName: .CaptureSessionRuntimeError, object: nil, queue: nil) { notification in  // Linux: a block, no selectors
                let error = notification.userInfo?[CaptureSessionErrorKey] as? CaptureError  // Linux: CaptureError, Apple's AVError
                heard.yield("runtimeError \(error?.code.rawValue ?? "none")")
            })
            observers.append(center.addObserver(forName: .CaptureSessionWasInterrupted, object: nil, queue: nil) { notification in  // Linux: a block, no selectors
                let reason = (notification.userInfo?[CaptureSessionInterruptionReasonKey] as? Int).flatMap(CaptureSession.InterruptionReason.init(rawValue:))
                heard.yield("wasInterrupted \(reason.map { "\($0)" } ?? "none")")
            })
            observers.append(center.addObserver(forName: .CaptureSessionInterruptionEnded, object: nil, queue: nil) { _ in  // Linux: a block, no selectors
                heard.yield("interruptionEnded")
            })
        }

        deinit {
            for observer in observers { NotificationCenter.default.removeObserver(observer) }
        }

        func startRunning(with device: CaptureDevice) async throws {
            let input = try CaptureDeviceInput(device: device)
            if captureSession.canAddInput(input) {
                captureSession.addInput(input)
            }
            let output = CaptureVideoDataOutput()
            if captureSession.canAddOutput(output) {
                captureSession.addOutput(output)
            }
            captureSession.automaticallyResumesAfterInterruption = true  // Linux: asked for; an iPhone's cameras do not go away
            if !captureSession.isRunning {
                await captureSession.startRunning()  // Linux: `await`
            }
        }
    }

    @Test func aCaptureClassObservingItsSession() async throws {
        try await withPhoneCameras { _ in
            let capture = VideoCapture()
            let device = try #require(try await CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back))  // Linux: `try await`
            try await capture.startRunning(with: device)
            #expect(capture.captureSession.isRunning)

            // The camera pulled out and plugged back in.
            try await CaptureDaemon.removeVirtualCamera(uniqueID: device.uniqueID)
            var heard = capture.heard.stream.makeAsyncIterator()
            #expect(await heard.next() == "wasInterrupted videoDeviceNotAvailable")
            #expect(await heard.next() == "runtimeError deviceDisconnected")
            _ = try await CaptureDaemon.addVirtualCamera(index: 1)
            #expect(await heard.next() == "interruptionEnded")
            #expect(capture.captureSession.isRunning && !capture.captureSession.isInterrupted)
            await capture.captureSession.stopRunning()
        }
    }

    // MARK: 9. A movie with sound and limits, checked as the seeds check it (seeds 000 and 002's movie file output)

    final class MovieRecorderViewController: NSObject, CaptureFileOutputRecordingDelegate {  // Linux: `NSObject` is Foundation's; no Sendable asked
        let captureSession = CaptureSession()
        let movieFileOutput = CaptureMovieFileOutput()
        var recordedSuccessfully: Bool?
        var finishedFile: URL?
        private var finished: CheckedContinuation<Void, Never>?

        func configure(camera: CaptureDevice, microphone: CaptureDevice) throws {
            captureSession.beginConfiguration()
            captureSession.sessionPreset = .hd1280x720
            let videoInput = try CaptureDeviceInput(device: camera)
            if captureSession.canAddInput(videoInput) { captureSession.addInput(videoInput) }
            let audioInput = try CaptureDeviceInput(device: microphone)
            if captureSession.canAddInput(audioInput) { captureSession.addInput(audioInput) }
            if captureSession.canAddOutput(movieFileOutput) { captureSession.addOutput(movieFileOutput) }
            captureSession.commitConfiguration()
            movieFileOutput.maxRecordedDuration = CMTimeMake(value: 2, timescale: 1)
            movieFileOutput.maxRecordedFileSize = 50 * 1024 * 1024
            movieFileOutput.minFreeDiskSpaceLimit = 1024 * 1024
        }

        func record(to fileURL: URL) async {
            await withCheckedContinuation { continuation in
                finished = continuation
                movieFileOutput.startRecording(to: fileURL, recordingDelegate: self)
            }
        }

        func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
                        error: Error?) {
            // The seeds' check, word for word.
            var recordedSuccessfully = true
            if let error = error as NSError?, error.code != noErr {
                // A problem occurred: Find out if the recording was successful.
                if let value = error.userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool {
                    recordedSuccessfully = value
                }
            }
            self.recordedSuccessfully = recordedSuccessfully
            finishedFile = outputFileURL
            if (error as? AVError)?.code == .maximumDurationReached, output == movieFileOutput {
                finished?.resume()
                finished = nil
            }
        }
    }

    @Test func aMovieWithSoundAndLimitsCheckedAsTheSeedsCheckIt() async throws {
        try await withTemporaryDirectory { folder in
            try await withCaptureKitDaemon(virtualCameras: 1, arguments: ["--virtual-microphones", "1"]) { _ in
                let controller = MovieRecorderViewController()
                let camera = try #require(try await CaptureDevice.default(for: .video))  // Linux: `try await`
                let microphone = try #require(try await CaptureDevice.default(for: .audio))  // Linux: `try await`
                try controller.configure(camera: camera, microphone: microphone)
                await controller.captureSession.startRunning()  // Linux: `await`
                let url = URL(fileURLWithPath: folder + "/movie.mov")
                await controller.record(to: url)
                #expect(controller.recordedSuccessfully == true && controller.finishedFile == url)
                // Both connections, as AVFoundation's movie output has them.
                #expect(controller.movieFileOutput.connection(with: .audio)?.audioChannels.count == 2)
                await controller.captureSession.stopRunning()  // Linux: `await`
                let streams = try await MovieProbe.streams(url.path)
                #expect(streams.compactMap { $0["codec_name"] as? String } == ["h264", "aac"])
                #expect(streams.first?["width"] as? Int == 1280, "the preset's size: \(streams)")
            }
        }
    }

    // MARK: 10. Video and audio data outputs beside a movie, one delegate for both (seed 001's KFVideoCapture with sound)

    final class CaptureController: NSObject, CaptureVideoDataOutputSampleBufferDelegate, CaptureAudioDataOutputSampleBufferDelegate {
        let session = CaptureSession()
        let videoOutput = CaptureVideoDataOutput()
        let audioOutput = CaptureAudioDataOutput()
        let movieOutput = CaptureMovieFileOutput()
        private let lock = NSLock()
        private var frames = 0
        private var periods = 0
        private var lastTime = CMTime.zero

        var counts: (frames: Int, periods: Int, lastTime: CMTime) { lock.withLock { (frames, periods, lastTime) } }

        func setUp(camera: CaptureDevice, microphone: CaptureDevice) throws {
            session.beginConfiguration()
            session.addInput(try CaptureDeviceInput(device: camera))
            session.addInput(try CaptureDeviceInput(device: microphone))
            let queue = DispatchQueue(label: "capture")
            videoOutput.setSampleBufferDelegate(self, queue: queue)
            audioOutput.setSampleBufferDelegate(self, queue: queue)
            for output in [videoOutput, audioOutput, movieOutput] as [CaptureOutput] where session.canAddOutput(output) {
                session.addOutput(output)
            }
            session.commitConfiguration()
        }

        func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: CaptureConnection) {
            let time = CMSampleBufferGetPresentationTimeStamp(sampleBuffer)
            lock.withLock {
                if output == videoOutput {
                    frames += 1
                } else if output == audioOutput {
                    periods += 1
                }
                lastTime = max(lastTime, time)
            }
        }
    }

    @Test func videoAndAudioDataOutputsBesideAMovieWithOneDelegate() async throws {
        try await withTemporaryDirectory { folder in
            try await withCaptureKitDaemon(virtualCameras: 1, arguments: ["--virtual-microphones", "1"]) { _ in
                let controller = CaptureController()
                let camera = try #require(try await CaptureDevice.default(for: .video))  // Linux: `try await`
                let microphone = try #require(try await CaptureDevice.default(for: .audio))  // Linux: `try await`
                try controller.setUp(camera: camera, microphone: microphone)
                await controller.session.startRunning()  // Linux: `await`
                #expect(await waitUntil(timeout: .seconds(60)) { controller.counts.frames >= 10 && controller.counts.periods >= 50 })
                // Media is on the session's clock: the host's.
                let now = CMClockGetTime(controller.session.synchronizationClock)
                #expect(controller.counts.lastTime <= now && CMClockGetTime(CMClockGetHostTimeClock()) >= now)
                #expect(now.seconds - controller.counts.lastTime.seconds < 60)
                let codecs: [AVVideoCodecType] = controller.movieOutput.availableVideoCodecTypes
                #expect(codecs.contains(.h264))
                await controller.session.stopRunning()  // Linux: `await`
            }
        }
    }

    // MARK: The count of changed lines

    /// Each program's lines changed from AVFoundation (`// Linux:`), counted
    /// here and listed in the DocC article Differences from AVFoundation:
    /// the counts may only go down, and the article says what they are.
    @Test func eachProgramsChangedLinesAreCountedAndOnlyGoDown() throws {
        let tests = URL(filePath: #filePath)
        let source = try String(contentsOf: tests, encoding: .utf8)
        var counts: [(program: String, changed: Int)] = []
        var counting = false  // in a numbered program's section, not in this test's
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("// MARK: ") {
                counting = text.dropFirst(9).first?.isNumber == true
                if counting { counts.append((String(text.dropFirst(9).prefix { $0 != " " }.dropLast()), 0)) }
            } else if counting, line.contains("// Linux:"), !text.hasPrefix("//") {
                counts[counts.count - 1].changed += 1
            }
        }
        let ceilings = ["1": 5, "2": 4, "3": 2, "4": 2, "5": 3, "6": 3, "7": 2, "8": 7, "9": 5, "10": 4]
        #expect(counts.map(\.program) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"], "\(counts)")
        for (program, changed) in counts {
            #expect(changed <= ceilings[program] ?? 0, "program \(program) changes \(changed) lines, more than its \(ceilings[program] ?? 0)")
        }
        let article = try String(contentsOf: tests.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "Sources/CaptureKit/CaptureKit.docc/DifferencesFromAVFoundation.md"), encoding: .utf8)
        for (program, changed) in counts {
            let row = article.split(separator: "\n").first { $0.hasPrefix("| \(program). ") }
            #expect(row?.hasSuffix("| \(changed) |") == true,
                    "the article's row for program \(program) says \(changed) changed lines: \(row ?? "none")")
        }
    }
}
}
