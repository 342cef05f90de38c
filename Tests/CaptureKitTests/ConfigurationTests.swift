import CameraMedia
import CameraTestSupport
import CaptureKit
import Foundation
import Testing

/// Mean luma of the middle rows of an NV12 or BGRA-less frame: the bars, not the stamp bands.
func meanBarLuma(_ sample: SampleBuffer) throws -> Double {
    let pixels = try #require(sample.imageBuffer)
    let base = try #require(pixels.baseAddress(ofPlane: 0))
    let rows = (pixels.height * 2 / 5)..<(pixels.height * 3 / 5)
    var total = 0
    for row in rows {
        let line = base + row * pixels.bytesPerRow(ofPlane: 0)
        for x in 0..<pixels.width { total += Int(line.load(fromByteOffset: x, as: UInt8.self)) }
    }
    return Double(total) / Double(rows.count * pixels.width)
}

extension CaptureKitEndToEnd {
@Suite struct ConfigurationTests {
    static func expectNotLocked(_ name: String, _ call: () async throws -> Void) async {
        await expectError(.notLocked, containing: "needs its configuration lock", name, call)
    }

    static func expectError(
        _ code: CaptureError.Code, containing text: String, _ name: String = "", _ call: () async throws -> Void
    ) async {
        do {
            try await call()
            Issue.record("\(name) succeeded; expected \(code) saying '\(text)'")
        } catch let error as CaptureError {
            #expect(error.code == code && error.message.contains(text), "\(name): \(error)")
        } catch {
            Issue.record("\(name): \(error)")
        }
    }

    @Test func everySetterWithoutTheLockFailsWithNotLocked() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let format = device.formats[1]
            await Self.expectNotLocked("activeFormat") { try await device.setActiveFormat(format) }
            await Self.expectNotLocked("min frame duration") { try await device.setActiveVideoMinFrameDuration(CMTime(value: 1, timescale: 15)) }
            await Self.expectNotLocked("max frame duration") { try await device.setActiveVideoMaxFrameDuration(CMTime(value: 1, timescale: 15)) }
            await Self.expectNotLocked("focus mode") { try await device.setFocusMode(.locked) }
            await Self.expectNotLocked("lens position") { try await device.setFocusModeLocked(lensPosition: 0.5) }
            await Self.expectNotLocked("focus point") { try await device.setFocusPointOfInterest(CGPoint(x: 0.2, y: 0.2)) }
            await Self.expectNotLocked("exposure mode") { try await device.setExposureMode(.locked) }
            await Self.expectNotLocked("custom exposure") { try await device.setExposureModeCustom(duration: CMTime(value: 1, timescale: 100), iso: 400) }
            await Self.expectNotLocked("exposure point") { try await device.setExposurePointOfInterest(CGPoint(x: 0.2, y: 0.2)) }
            await Self.expectNotLocked("white balance") { try await device.setWhiteBalanceMode(.locked) }
            await Self.expectNotLocked("temperature") { try await device.setWhiteBalanceModeLocked(temperature: 5000) }
            await Self.expectNotLocked("torch") { try await device.setTorchMode(.off) }
            await Self.expectNotLocked("zoom") { try await device.setVideoZoomFactor(2) }
            await Self.expectNotLocked("controls") { try await device.setControls([("brightness", 10)]) }
            try await device.refresh()
            #expect(device.activeFormat == device.formats[0] && device.control(named: "brightness")?.value == 128,
                    "nothing changed")
        }
    }

    @Test func frameDurationsOutsideTheRangesFailNamingTheRanges() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            try await device.lockForConfiguration()
            await Self.expectError(.invalidArgument, containing: "1/90 s is outside what YUYV 640x480 allows: 1/60 to 1/1 s") {
                try await device.setActiveVideoMinFrameDuration(CMTime(value: 1, timescale: 90))
            }
            await Self.expectError(.invalidArgument, containing: "2/1 s is outside what YUYV 640x480 allows: 1/60 to 1/1 s") {
                try await device.setActiveVideoMaxFrameDuration(CMTime(value: 2, timescale: 1))
            }
            var both = CaptureDevice.Configuration()
            both.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 10)
            both.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: 20)
            await Self.expectError(.invalidArgument, containing: "longer than the maximum") { try await device.configure(both) }
            let fullHD = try #require(device.formats.first { $0.dimensions == CMVideoDimensions(width: 1920, height: 1080) })
            var fast = CaptureDevice.Configuration()
            fast.activeFormat = fullHD
            fast.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 60)
            await Self.expectError(.invalidArgument, containing: "1920x1080 allows: 1/30 to 1/1 s") { try await device.configure(fast) }

            try await device.setActiveVideoMinFrameDuration(CMTime(value: 1, timescale: 60))
            #expect(device.activeVideoMinFrameDuration == CMTime(value: 1, timescale: 60))
            await device.unlockForConfiguration()
        }
    }

    @Test func theLockIsCountedAndEndsWithTheLastUnlock() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            let device = try await CaptureDevice.matching("virtual-0")
            try await device.lockForConfiguration()
            try await device.lockForConfiguration()
            #expect(device.configurationLockHolder?.pid == getpid())
            for _ in 0..<2 {
                let other = try await camctl(["set", "virtual-0", "--control", "brightness=1"], socket: daemon.socketPath)
                #expect(other.status == 1 && other.standardError.contains("pid \(getpid())"), "\(other.standardError)")
                await device.unlockForConfiguration()
            }
            #expect(device.configurationLockHolder == nil)
            let free = try await camctl(["set", "virtual-0", "--control", "brightness=1"], socket: daemon.socketPath)
            #expect(free.status == 0, "\(free.standardError)")
        }
    }

    /// The lock holder (another process) changes the mode while two sessions
    /// stream: each is told and keeps its own pixel format and size, and every
    /// frame is whole.
    @Test func aModeChangeKeepsEachStreamsOutputAndTearsNoFrame() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            let device = try await CaptureDevice.matching("virtual-0")
            let changes = NotificationRecorder([CaptureInput.Port.formatDescriptionDidChangeNotification])
            try await withStreamingSession(device, configure: { output, _ in
                output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_32BGRA, width: 320, height: 240)
            }) { _, _, small in
                try await withStreamingSession(device, configure: { output, _ in
                    output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                                                 width: 640, height: 480)
                }) { _, _, large in
                    _ = try await small.nextFrame()
                    _ = try await large.nextFrame()
                    let set = try await camctl(["set", "virtual-0", "--format", "NV12:1280x720", "--fps", "30"],
                                               socket: daemon.socketPath)
                    #expect(set.status == 0, "\(set.standardError)")
                    #expect(await changes.wait(for: 2), "both streams were told: \(changes.notifications)")
                    #expect(device.activeFormat.dimensions == CMVideoDimensions(width: 1280, height: 720))
                    for (frames, type, width, height) in [(small, kCVPixelFormatType_32BGRA, 320, 240),
                                                          (large, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, 640, 480)] {
                        for _ in 0..<10 {
                            let sample = try await frames.nextFrame()
                            let pixels = try #require(sample.imageBuffer)
                            #expect(pixels.pixelFormatType == type && pixels.width == width && pixels.height == height)
                            let format: PixelFormat = type == kCVPixelFormatType_32BGRA ? .bgra : .nv12
                            let stamp = try pixels.withUnsafeBytes {
                                FrameStampDecoder.decode(frame: $0, format: format, width: width, height: height)
                            }
                            #expect(!stamp.isTorn && stamp.stamp?.sequence == UInt32(truncatingIfNeeded: sample.sequenceNumber),
                                    "frame \(sample.sequenceNumber) is whole: \(stamp)")
                        }
                    }
                }
            }
        }
    }

    @Test func eachAVFoundationSettingIsSetReadBackAndUnsupportedModesAreRejected() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            try await device.lockForConfiguration()

            try await device.setFocusMode(.locked)
            #expect(device.focusMode == .locked && device.control(named: "focus_automatic_continuous")?.value == 0)
            try await device.setFocusModeLocked(lensPosition: 0.25)
            #expect(abs((device.lensPosition ?? -1) - 0.25) < 0.01 && device.control(named: "focus_absolute")?.value == 256)
            try await device.setFocusPointOfInterest(CGPoint(x: 0.25, y: 0.75))
            #expect(device.focusPointOfInterest == CGPoint(x: 0.25, y: 0.75))
            try await device.setFocusMode(.continuousAutoFocus)
            #expect(device.focusMode == .continuousAutoFocus && device.isAdjustingFocus, "adjusting for a moment")
            #expect(device.control(named: "focus_absolute")?.isInactive == true, "manual focus is inactive under autofocus")
            #expect(try await waitUntil {
                try await device.refresh()
                return !device.isAdjustingFocus
            }, "settled")
            try await device.setFocusMode(.autoFocus)
            #expect(device.focusMode == .locked && device.isAdjustingFocus, "a one-shot focus ends locked")

            try await device.setExposureModeCustom(duration: CMTime(value: 1, timescale: 100), iso: 800)
            #expect(device.exposureMode == .custom)
            #expect(device.exposureDuration == CMTime(value: 1, timescale: 100))
            #expect(abs(device.iso - 800) < 10, "iso \(device.iso)")
            #expect(device.minISO == 100 && device.maxISO == 1600)
            try await device.setExposureMode(.locked)
            #expect(device.exposureMode == .locked)
            try await device.setExposurePointOfInterest(CGPoint(x: 0.5, y: 0.1))
            #expect(device.exposurePointOfInterest == CGPoint(x: 0.5, y: 0.1))
            try await device.setExposureMode(.continuousAutoExposure)
            #expect(device.exposureMode == .continuousAutoExposure && device.isAdjustingExposure)

            try await device.setWhiteBalanceModeLocked(temperature: 5000)
            #expect(device.whiteBalanceMode == .locked && device.whiteBalanceTemperature == 5000)
            try await device.setWhiteBalanceMode(.continuousAutoWhiteBalance)
            #expect(device.whiteBalanceMode == .continuousAutoWhiteBalance && device.isAdjustingWhiteBalance)

            try await device.setVideoZoomFactor(2.5)
            #expect(device.videoZoomFactor == 2.5 && device.control(named: "zoom_absolute")?.value == 250)
            await Self.expectError(.invalidArgument, containing: "zoom factor 5.0 is outside virtual-0's 1.0 to 4.0") {
                try await device.setVideoZoomFactor(5)
            }
            await Self.expectError(.unsupported, containing: "no exposure mode autoExpose") {
                try await device.setExposureMode(.autoExpose)
            }
            await Self.expectError(.unsupported, containing: "no white balance mode autoWhiteBalance") {
                try await device.setWhiteBalanceMode(.autoWhiteBalance)
            }
            await Self.expectError(.unsupported, containing: "no torch mode auto") { try await device.setTorchMode(.auto) }
            // With no session running, as iOS lights it (issue 33).
            try await device.setTorchMode(.on)
            #expect(device.torchMode == .on && device.isTorchActive)
            try await device.setTorchMode(.off)
            #expect(!device.isTorchActive)
            await device.unlockForConfiguration()
        }
    }

    /// Issue 16's fifth point: configuration as the seeds write it — properties
    /// set between lockForConfiguration() and unlockForConfiguration() read back
    /// at once and reach the daemon, as one change, at the unlock; what the
    /// daemon refuses is dropped and posted, and commitConfiguration() throws it.
    @Test func settingsSetAsPropertiesUnderTheLockReachTheDaemonAtUnlock() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            let device = try await CaptureDevice.matching("virtual-0")
            try await device.lockForConfiguration()
            device.focusMode = .locked
            device.exposureMode = .locked
            device.videoZoomFactor = 2
            device.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 15)
            #expect(device.focusMode == .locked && device.videoZoomFactor == 2, "read back at once")
            let another = try await CaptureDevice.matching("virtual-0")
            #expect(another.videoZoomFactor == 2, "every object of the device reads it")
            await device.unlockForConfiguration()

            let seenElsewhere = try await camctl(["get", "virtual-0", "videoZoomFactor"], socket: daemon.socketPath)
            #expect(seenElsewhere.lines == ["videoZoomFactor: 2.0"], "it reached the daemon")
            try await device.refresh()
            #expect(device.focusMode == .locked && device.exposureMode == .locked)
            #expect(device.activeVideoMinFrameDuration == CMTime(value: 1, timescale: 15))

            // A value out of range is refused at its setter (issue 33), said,
            // and takes nothing set with it down.
            let recorder = NotificationRecorder([CaptureDevice.configurationDidFailNotification])
            try await device.lockForConfiguration()
            device.videoZoomFactor = 9
            device.focusMode = .continuousAutoFocus
            #expect(device.videoZoomFactor == 2, "refused: the value before")
            await device.unlockForConfiguration()
            #expect(recorder.notifications.count == 1)
            let error = recorder.notifications.first?.error
            #expect(error?.message.contains("9.0") == true, "\(String(describing: error))")
            #expect(device.videoZoomFactor == 2 && device.focusMode == .continuousAutoFocus, "the other setting applied")

            // What only camerad can refuse (a frame rate the format set with it
            // lacks): commitConfiguration() throws it, all or none.
            let fullHD = try #require(device.formats.first { $0.dimensions == CMVideoDimensions(width: 1920, height: 1080) })
            try await device.lockForConfiguration()
            device.activeVideoMinFrameDuration = CMTime(value: 1, timescale: 60)
            device.activeFormat = fullHD
            let thrown = await #expect(throws: CaptureError.self) { try await device.commitConfiguration() }
            #expect(thrown?.code == .invalidArgument)
            await device.unlockForConfiguration()
            #expect(recorder.notifications.count == 1, "nothing left to send at the unlock")
        }
    }

    /// Exposure time and the torch show in the picture; the torch outlives the session.
    @Test func exposureAndTorchChangeThePicturesBrightness() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            try await device.lockForConfiguration()
            try await withStreamingSession(device, configure: { output, _ in
                output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            }) { _, _, frames in
                // A frame made after the change: skip those in flight.
                func settledLuma() async throws -> Double {
                    for _ in 0..<4 { _ = try await frames.nextFrame() }
                    return try meanBarLuma(try await frames.nextFrame())
                }
                let normal = try await settledLuma()
                try await device.setExposureModeCustom(duration: CMTime(value: 1, timescale: 100), iso: 100)
                let shorter = try await settledLuma()
                #expect(shorter < normal * 0.7, "1/100 s is darker than auto: \(shorter) vs \(normal)")
                try await device.setExposureMode(.continuousAutoExposure)
                try await device.setTorchModeOn(level: 1)
                #expect(device.torchMode == .on && device.torchLevel == 1)
                let lit = try await settledLuma()
                #expect(lit > normal * 1.2, "the torch brightens: \(lit) vs \(normal)")
            }
            // The session stopped; the torch is this process's and shines on,
            // as on iOS, until it is turned off (or the process exits).
            try await device.refresh()
            #expect(device.isTorchActive && device.torchMode == .on)
            try await device.setTorchMode(.off)
            #expect(!device.isTorchActive && device.torchMode == .off)
            await device.unlockForConfiguration()
        }
    }

    /// Setting activeFormat turns a session's preset into .inputPriority; a later
    /// session whose preset wants another mode streams from the running one,
    /// scaled, and is told so.
    @Test func presetsGiveWayToTheConfiguredModeAndASessionIsToldWhatItGets() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let session = CaptureSession()
            session.addInput(try CaptureDeviceInput(device: device))
            #expect(session.sessionPreset == .high)
            let hd = try #require(device.formats.first {
                $0.mediaSubType == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange && $0.dimensions == CMVideoDimensions(width: 1280, height: 720)
            })
            try await device.lockForConfiguration()
            try await device.setActiveFormat(hd)
            await device.unlockForConfiguration()
            #expect(session.sessionPreset == .inputPriority, "as in AVFoundation")

            try await withStreamingSession(device, preset: .vga640x480) { _, output, frames in
                let sample = try await frames.nextFrame()
                #expect(sample.imageBuffer?.width == 640 && sample.imageBuffer?.height == 480, "the preset's size, scaled")
                let note = output.connection(with: .video)?.modeNote ?? ""
                #expect(note.contains("the device runs NV12 1280x720") && note.contains("as configured"), "\(note)")
            }
        }
    }

    @Test func waitingForALockHeldElsewhereEndsWithDeviceLockedNamingTheHolder() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { daemon in
            let holder = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "lock", "virtual-0"])
            #expect(await holder.wait { $0.lines.contains("locked virtual-0") })
            let device = try await CaptureDevice.matching("virtual-0")
            let pid = holder.process.processIdentifier
            await Self.expectError(.deviceLocked, containing: "locked for configuration by pid \(pid) (camctl)") {
                try await device.lockForConfiguration(waitingUpTo: .milliseconds(300))
            }
            _ = await holder.stop()
            try await device.lockForConfiguration(waitingUpTo: .seconds(10))
            #expect(device.configurationLockHolder?.pid == getpid())
            await device.unlockForConfiguration()
        }
    }
}
}
