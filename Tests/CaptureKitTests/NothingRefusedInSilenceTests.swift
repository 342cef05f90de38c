import CameraProtocol
import CameraTestSupport
@testable import CaptureKit
import Foundation
import Testing

extension CaptureKitEndToEnd {
/// Issue 33's six silent cases, as seed code written for AVFoundation meets
/// them: each now does what AVFoundation does, or says why not.
@Suite struct NothingRefusedInSilenceTests {
    static func reported(containing text: String) -> Bool {
        CaptureDiagnostics.recent.withLock { $0.contains { $0.contains(text) } }
    }

    /// Point 1 (and 6): a torch set with no session running lights, and takes
    /// nothing set with it down; `isTorchActive` says what shines, not what was asked.
    @Test func theTorchLightsWithNoSessionAndKeepsWhatWasSetWithIt() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            let device = try await CaptureDevice.matching("virtual-0")
            let hd = try #require(device.formats.first { $0.dimensions == CMVideoDimensions(width: 1280, height: 720) })
            try await device.lockForConfiguration()
            device.torchMode = .on
            device.videoZoomFactor = 2
            device.activeFormat = hd
            device.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 15)
            #expect(device.torchMode == .on, "read back at once")
            #expect(!device.isTorchActive, "not lit until the configuration is sent")
            await device.unlockForConfiguration()
            #expect(device.torchMode == .on && device.isTorchActive)
            #expect(device.videoZoomFactor == 2 && device.activeFormat == hd)
            #expect(device.activeVideoMinFrameDuration == CMTime(value: 1, timescale: 15))
            let seen = try await camctl(["get", "virtual-0", "torchMode"], socket: daemon.socketPath)
            #expect(seen.lines == ["torchMode: on"], "another process sees it lit")
        }
    }

    /// Point 2: a value out of range is refused at its setter — said on stderr
    /// and as configurationDidFailNotification — and the rest still applies.
    @Test func anOutOfRangeValueIsRefusedAtItsSetterAlone() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let failures = NotificationRecorder([CaptureDevice.configurationDidFailNotification])
            let hd = try #require(device.formats.first { $0.dimensions == CMVideoDimensions(width: 1280, height: 720) })
            try await device.lockForConfiguration()
            device.activeFormat = hd
            device.videoZoomFactor = 10
            #expect(device.videoZoomFactor == 1, "refused: not kept")
            #expect(failures.notifications.first?.error?.message.contains("10.0 is outside the device's zoom 1.0...4.0") == true,
                    "\(failures.notifications)")
            #expect(Self.reported(containing: "videoZoomFactor of virtual-0 not set"))
            device.exposureMode = .autoExpose
            #expect(failures.notifications.count == 2, "a mode the device lacks too")
            #expect(device.exposureMode != .autoExpose)
            await device.unlockForConfiguration()
            #expect(device.activeFormat == hd, "what was set with it applies")
            #expect(failures.notifications.count == 2, "and nothing else failed")
        }
    }

    /// Point 2, when camerad refuses what CaptureKit could not check: the
    /// settings are tried one by one, so one refused takes no other down.
    @Test func aSettingTheDaemonRefusesTakesNoOtherDown() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let failures = NotificationRecorder([CaptureDevice.configurationDidFailNotification])
            let fullHD = try #require(device.formats.first { $0.dimensions == CMVideoDimensions(width: 1920, height: 1080) })
            try await device.lockForConfiguration()
            // Each fine when set (640x480 runs at 60 fps), together not: 1920x1080 runs at 30 at most.
            device.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 60)
            device.activeFormat = fullHD
            device.videoZoomFactor = 3
            await device.unlockForConfiguration()
            #expect(device.activeFormat == fullHD && device.videoZoomFactor == 3, "the others applied")
            #expect(failures.notifications.count == 1, "\(failures.notifications)")
            #expect(failures.notifications.first?.error?.message.contains("1/60") == true, "\(failures.notifications)")
            #expect(Self.reported(containing: "activeVideoMinFrameDuration of virtual-0 was not applied"))
        }
    }

    /// Point 3: AVFoundation's NSNumber spelling of videoSettings.
    @Test func videoSettingsTakeNSNumbers() {
        let settings = CaptureVideoDataOutput.VideoSettings([
            kCVPixelBufferPixelFormatTypeKey as String: NSNumber(value: kCVPixelFormatType_32BGRA),
            kCVPixelBufferWidthKey as String: NSNumber(value: 320),
        ])
        #expect(settings.pixelFormatType == kCVPixelFormatType_32BGRA && settings.width == 320)
        #expect(settings.unsupportedKeys.isEmpty)
        let fraction = CaptureVideoDataOutput.VideoSettings([kCVPixelBufferWidthKey as String: NSNumber(value: 320.5)])
        #expect(fraction.width == nil && fraction.unsupportedKeys.count == 1, "not an integer: refused, and said")
    }

    /// Point 3's silence: a session that does not start says so on stderr
    /// even when nobody observes runtimeErrorNotification.
    @Test func aRefusedStartIsSaidOnStandardError() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let (session, output) = try sessionWithVideoOutput(device)
            output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: "BGRA"]
            await session.startRunning()
            #expect(!session.isRunning)
            #expect(Self.reported(containing: "the session did not start"), "\(CaptureDiagnostics.recent.withLock { $0 })")
        }
    }

    /// Point 4: the session's own buffers follow a new activeFormat, as the
    /// preset gives way to `.inputPriority`.
    @Test func theSessionsBuffersFollowANewActiveFormat() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            try await withStreamingSession(device, preset: .hd1920x1080) { session, _, frames in
                #expect(try await frames.nextFrame().imageBuffer?.width == 1920)
                let hd = try #require(device.formats.first { $0.dimensions == CMVideoDimensions(width: 1280, height: 720) })
                try await device.lockForConfiguration()
                device.activeFormat = hd
                await device.unlockForConfiguration()
                #expect(session.sessionPreset == .inputPriority)
                var width: Int?
                for _ in 0..<60 {
                    width = try await frames.nextFrame().imageBuffer?.width
                    if width == 1280 { break }
                }
                #expect(width == 1280, "the buffers are the new format's, not 1920 wide scaled up")
            }
        }
    }

    /// The spellings seed code uses: the session notifications' short names
    /// and keys, Apple's interruption reason numbers, iOS 17's rotation angle,
    /// automatic mirroring, the photo output's flash modes.
    @Test func theSpellingsSeedCodeUses() async throws {
        #expect(Notification.Name.CaptureSessionRuntimeError == CaptureSession.runtimeErrorNotification)
        #expect(Notification.Name.CaptureSessionWasInterrupted == CaptureSession.wasInterruptedNotification)
        #expect(Notification.Name.CaptureSessionInterruptionEnded == CaptureSession.interruptionEndedNotification)
        #expect(Notification.Name.CaptureSessionDidStartRunning == CaptureSession.didStartRunningNotification)
        #expect(Notification.Name.CaptureSessionDidStopRunning == CaptureSession.didStopRunningNotification)
        #expect(CaptureSessionErrorKey == CaptureSession.errorKey)
        #expect(CaptureSessionInterruptionReasonKey == CaptureSession.interruptionReasonKey)
        #expect(CaptureSession.InterruptionReason.videoDeviceInUseByAnotherClient.rawValue == 3, "Apple's number")
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let session = CaptureSession()
            let output = CaptureVideoDataOutput()
            let photos = CapturePhotoOutput()
            #expect(photos.supportedFlashModes.isEmpty, "no device yet")
            session.addInput(try CaptureDeviceInput(device: device))
            session.addOutput(output)
            session.addOutput(photos)
            #expect(photos.supportedFlashModes == CaptureDevice.FlashMode.allCases.filter { device.isFlashModeSupported($0) })
            #expect(!photos.supportedFlashModes.isEmpty)
            let connection = try #require(output.connection(with: .video))
            #expect(connection.videoRotationAngle == 0 && connection.videoOrientation == .landscapeRight)
            connection.videoRotationAngle = 90
            #expect(connection.videoOrientation == .portrait)
            #expect(!connection.isVideoRotationAngleSupported(45))
            connection.automaticallyAdjustsVideoMirroring = true
            #expect(connection.isVideoMirrored == (device.position == .front))
        }
    }

    /// The settings Apple has as non-optional are non-optional here: a device
    /// with no control for one reads what the camera does by itself, one with
    /// no format camerad can stream an empty format, an unknown kind `.external`.
    @Test func settingsADeviceHasNoControlForReadAsTheCameraDoesByItself() {
        var bare = Camerad_V1_Device()
        bare.uniqueID = "unit-test-no-controls"
        bare.deviceType = .UNRECOGNIZED(99)
        let device = CaptureDevice(bare)
        #expect(device.focusMode == .locked && !CaptureDevice.FocusMode.allCases.contains(where: device.isFocusModeSupported))
        #expect(device.exposureMode == .continuousAutoExposure && device.whiteBalanceMode == .continuousAutoWhiteBalance)
        #expect(device.reportedFocusMode == nil && device.reportedExposureMode == nil && device.reportedWhiteBalanceMode == nil)
        #expect(device.activeFormat.dimensions == CMVideoDimensions(width: 0, height: 0) && device.formats.isEmpty)
        #expect(device.deviceType == .external)

        var described = bare
        described.uniqueID = "unit-test-two-formats"
        described.deviceType = .builtInWideAngleCamera
        for (width, height) in [(640, 480), (1280, 720)] {
            var format = Camerad_V1_Format()
            format.fourcc = FourCharCode("NV12")!.rawValue
            format.width = UInt32(width)
            format.height = UInt32(height)
            described.formats.append(format)
        }
        described.activeFormatIndex = 1
        described.settings.focusMode = .continuousAutoFocus
        let camera = CaptureDevice(described)
        #expect(camera.activeFormat.dimensions == CMVideoDimensions(width: 1280, height: 720))
        #expect(camera.focusMode == .continuousAutoFocus && camera.deviceType == .builtInWideAngleCamera)
    }
}
}
