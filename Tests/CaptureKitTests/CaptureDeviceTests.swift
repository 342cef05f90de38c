import CameraIPC
import CameraTestSupport
import CaptureKit
import Foundation
import Testing

/// CaptureKit keeps one connection per process, as AVFoundation does, so every
/// suite that talks to a daemon through it nests here and takes turns.
@Suite(.serialized) enum CaptureKitEndToEnd {}

extension CaptureKitEndToEnd {
@Suite struct DeviceTests {
    @Test func devicesListsTheVirtualCamerasLikeAPhonesCameras() async throws {
        try await withCaptureKitDaemon { _ in
            let devices = try await CaptureDevice.devices()
            #expect(devices.map(\.uniqueID) == ["virtual-0", "virtual-1"])
            #expect(devices.map(\.position) == [.front, .back])
            #expect(devices.allSatisfy { $0.deviceType == .builtInWideAngleCamera && $0.isConnected && $0.isVirtual })
            #expect(devices.allSatisfy { $0.hasMediaType(.video) && !$0.hasMediaType(.audio) })
            #expect(devices[0].localizedName == "Virtual Camera 0")
            #expect(devices[0].modelID == "camerad-virtual")
            #expect(devices[0].devicePath == nil)
        }
    }

    @Test func aDiscoverySessionFiltersByTypeMediaAndPosition() async throws {
        try await withCaptureKitDaemon { _ in
            let back = CaptureDevice.DiscoverySession(deviceTypes: [.builtInWideAngleCamera], mediaType: .video, position: .back)
            let backDevices = try await back.devices
            #expect(backDevices.map(\.uniqueID) == ["virtual-1"])
            let any = CaptureDevice.DiscoverySession(deviceTypes: [.builtInWideAngleCamera, .external], mediaType: nil, position: .unspecified)
            let anyDevices = try await any.devices
            #expect(anyDevices.count == 2)
            let external = CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified)
            let externalDevices = try await external.devices
            #expect(externalDevices.isEmpty)
            let audio = CaptureDevice.DiscoverySession(deviceTypes: [.builtInWideAngleCamera], mediaType: .audio, position: .unspecified)
            let audioDevices = try await audio.devices
            #expect(audioDevices.isEmpty)
        }
    }

    @Test func defaultDevicesAreFoundAsInAVFoundation() async throws {
        try await withCaptureKitDaemon { _ in
            let video = try await CaptureDevice.default(for: .video)
            #expect(video?.uniqueID == "virtual-1", "the back camera, as on an iPhone")
            let audio = try await CaptureDevice.default(for: .audio)
            #expect(audio == nil)
            let back = try await CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back)
            #expect(back?.uniqueID == "virtual-1")
            let front = try await CaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front)
            #expect(front?.uniqueID == "virtual-0")
            let external = try await CaptureDevice.default(.external, for: .video, position: .unspecified)
            #expect(external == nil)
            let byID = try await CaptureDevice(uniqueID: "virtual-1")
            #expect(byID?.position == .back)
            let missing = try await CaptureDevice(uniqueID: "virtual-7")
            #expect(missing == nil)
            // Without a back camera, the first there is.
            try await CaptureDaemon.removeVirtualCamera(uniqueID: "virtual-1")
            let onlyFront = try await CaptureDevice.default(for: .video)
            #expect(onlyFront?.uniqueID == "virtual-0")
        }
    }

    @Test func aDeviceCanBeNamedByUniqueIDIndexOrPath() async throws {
        try await withCaptureKitDaemon { _ in
            let byID = try await CaptureDevice.matching("virtual-1")
            #expect(byID.uniqueID == "virtual-1")
            let byIndex = try await CaptureDevice.matching("0")
            #expect(byIndex.uniqueID == "virtual-0")
            let error = await #expect(throws: CaptureError.self) { try await CaptureDevice.matching("/dev/video7") }
            #expect(error?.code == .deviceNotFound)
            #expect(error?.message.contains("camctl list") == true)
            await #expect(throws: CaptureError.self) { try await CaptureDevice.matching("5") }
        }
    }

    @Test func formatsAndTheActiveFormatReadLikeAVCaptureDeviceFormat() async throws {
        try await withCaptureKitDaemon { _ in
            let found = try await CaptureDevice.default(for: .video)
            let device = try #require(found)
            #expect(device.formats.count == 9)
            let active = device.activeFormat
            #expect(active.mediaSubType == kCVPixelFormatType_422YpCbCr8_yuvs && active.v4l2PixelFormat.description == "YUYV")
            #expect(active.dimensions == CMVideoDimensions(width: 640, height: 480))
            // One spelling, CoreVideo's, as the seeds read a format.
            #expect(CMFormatDescriptionGetMediaSubType(active.formatDescription) == kCVPixelFormatType_422YpCbCr8_yuvs)
            #expect(CMVideoFormatDescriptionGetDimensions(active.formatDescription) == active.dimensions)
            #expect(active.description.hasPrefix("'yuvs' 640x480"), "\(active)")
            #expect(device.activeVideoMinFrameDuration == CMTime(value: 1, timescale: 30))
            let fullHD = try #require(device.formats.first { $0.dimensions.height == 1080 && $0.mediaSubType == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange })
            #expect(fullHD.videoSupportedFrameRateRanges.first?.maxFrameRate == 30)
            #expect(fullHD.videoSupportedFrameRateRanges.first?.minFrameRate == 1)
            #expect(device.formats.filter(\.isCompressed).allSatisfy { $0.mediaSubType == kCMVideoCodecType_JPEG_OpenDML && $0.v4l2PixelFormat == FourCharCode("MJPG") })
        }
    }

    @Test func capabilityFlagsAnswerAsAVFoundationsDo() async throws {
        try await withCaptureKitDaemon { _ in
            let found = try await CaptureDevice.default(for: .video)
            let device = try #require(found)
            #expect(device.isFocusModeSupported(.continuousAutoFocus))
            #expect(device.isFocusModeSupported(.locked))
            #expect(device.isExposureModeSupported(.custom))
            #expect(!device.isExposureModeSupported(.autoExpose))
            #expect(device.isWhiteBalanceModeSupported(.continuousAutoWhiteBalance))
            #expect(device.hasTorch && device.isTorchModeSupported(.on) && !device.isTorchModeSupported(.auto))
            #expect(device.hasFlash)
            #expect(device.minAvailableVideoZoomFactor == 1 && device.maxAvailableVideoZoomFactor == 4)
            #expect(device.supportsSessionPreset(.hd1920x1080) && device.supportsSessionPreset(.vga640x480))
            #expect(!device.supportsSessionPreset(.hd4K3840x2160))
            #expect(device.control(named: "brightness")?.value == 128)
            #expect(device.controls.count >= 15)
        }
    }

    @Test func deviceEventsReportConnectionsAndDisconnections() async throws {
        try await withCaptureKitDaemon { _ in
            var events = try await CaptureDevice.events().makeAsyncIterator()
            let added = try await CaptureDaemon.addVirtualCamera(index: 5, localizedName: "Desk", position: .back)
            #expect(added.uniqueID == "virtual-5")
            let next = try await events.next()
            let connected = try #require(next)
            #expect(connected.kind == .connected)
            #expect(connected.device.localizedName == "Desk")
            #expect(connected.device.isConnected)

            try await CaptureDaemon.removeVirtualCamera(uniqueID: "virtual-5")
            let after = try await events.next()
            let disconnected = try #require(after)
            #expect(disconnected.kind == .disconnected)
            #expect(disconnected.device.uniqueID == "virtual-5")
            #expect(!added.isConnected, "the object the app holds learns it is gone")
        }
    }

    @Test func existingDevicesComeFirstWhenAskedFor() async throws {
        try await withCaptureKitDaemon { _ in
            var events = try await CaptureDevice.events(includeExisting: true).makeAsyncIterator()
            let first = try await events.next()
            #expect(first?.device.uniqueID == "virtual-0")
            let second = try await events.next()
            #expect(second?.device.uniqueID == "virtual-1")
            _ = try await CaptureDaemon.addVirtualCamera()
            let next = try await events.next()
            #expect(next?.kind == .connected && next?.device.uniqueID == "virtual-2")
        }
    }

    @Test func wasConnectedAndWasDisconnectedNotificationsArePosted() async throws {
        try await withCaptureKitDaemon { _ in
            let recorder = NotificationRecorder([.CaptureDeviceWasConnected, CaptureDevice.wasDisconnectedNotification])
            try await CaptureDevice.beginGeneratingDeviceNotifications()
            defer { CaptureDevice.endGeneratingDeviceNotifications() }
            _ = try await CaptureDaemon.addVirtualCamera(index: 3)
            try await CaptureDaemon.removeVirtualCamera(uniqueID: "virtual-3")
            #expect(await recorder.wait(for: 2))
            #expect(recorder.notifications.map(\.name) == [CaptureDevice.wasConnectedNotification, CaptureDevice.wasDisconnectedNotification])
            #expect(recorder.notifications.map(\.uniqueID) == ["virtual-3", "virtual-3"])
        }
    }

    @Test func refreshingAGoneDeviceSaysSoAndMarksItDisconnected() async throws {
        try await withCaptureKitDaemon { _ in
            let device = try await CaptureDaemon.addVirtualCamera(index: 4)
            try await CaptureDaemon.removeVirtualCamera(uniqueID: "virtual-4")
            let error = await #expect(throws: CaptureError.self) { try await device.refresh() }
            #expect(error?.code == .deviceNotFound)
            #expect(!device.isConnected)
        }
    }

    @Test func adminMistakesComeBackAsCaptureErrors() async throws {
        try await withCaptureKitDaemon { _ in
            let taken = await #expect(throws: CaptureError.self) { try await CaptureDaemon.addVirtualCamera(index: 0) }
            #expect(taken?.code == .alreadyExists)
            let range = await #expect(throws: CaptureError.self) { try await CaptureDaemon.addVirtualCamera(index: 70) }
            #expect(range?.code == .invalidArgument)
            let missing = await #expect(throws: CaptureError.self) { try await CaptureDaemon.removeVirtualCamera(uniqueID: "virtual-9") }
            #expect(missing?.code == .deviceNotFound)
        }
    }

    @Test func theDaemonDescribesItselfAndAnswersPings() async throws {
        try await withCaptureKitDaemon { daemon in
            let info = try await CaptureDaemon.info()
            #expect(info.version == "0.1.0")
            #expect(info.pid == daemon.pid)
            #expect(info.features.contains("device-events"))
            let times = try await CaptureDaemon.ping(count: 20, payloadSize: 1000)
            #expect(times.count == 20)
            #expect(times.allSatisfy { $0 > .zero })
        }
    }

    @Test func withNoDaemonCallsFailWithDaemonUnavailable() async throws {
        CaptureDaemon.socketPath = "/tmp/no-camerad-listens-here.sock"
        defer { CaptureDaemon.disconnect() }
        let error = await #expect(throws: CaptureError.self) { try await CaptureDevice.devices() }
        #expect(error?.code == .daemonUnavailable)
        #expect(error?.message.contains("/tmp/no-camerad-listens-here.sock") == true)
    }

    /// Issue 16's sixth point: a daemon restart is no stale state. Its devices
    /// come as disconnected when it goes (the objects the app holds say so) and
    /// as connected when it is back — in the events sequence, which lives on,
    /// and as notifications.
    @Test func aRestartedDaemonIsReachedAgainAndWatchersAreToldItWent() async throws {
        try await withTemporarySocketPath { path in
            var daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "1"])
            CaptureDaemon.socketPath = path
            defer { CaptureDaemon.disconnect() }
            let held = try #require(try await CaptureDevice.devices().first)
            var events = try await CaptureDevice.events().makeAsyncIterator()
            let recorder = NotificationRecorder([.CaptureDeviceWasConnected, CaptureDevice.wasDisconnectedNotification])
            try await CaptureDevice.beginGeneratingDeviceNotifications()
            defer { CaptureDevice.endGeneratingDeviceNotifications() }
            #expect(await daemon.stop() == 0)
            let gone = try await events.next()
            #expect(gone?.kind == .disconnected && gone?.device.uniqueID == "virtual-0")
            #expect(!held.isConnected, "the object the app holds learns it went with the daemon")

            daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "2"])
            let back = [try await events.next(), try await events.next()]
            #expect(back.map { $0?.kind } == [.connected, .connected])
            #expect(back.map { $0?.device.uniqueID } == ["virtual-0", "virtual-1"])
            #expect(held.isConnected)
            #expect(await recorder.wait(for: 3))
            #expect(recorder.notifications.map(\.name) == [CaptureDevice.wasDisconnectedNotification, CaptureDevice.wasConnectedNotification,
                                                           CaptureDevice.wasConnectedNotification])
            #expect(recorder.notifications.map(\.uniqueID) == ["virtual-0", "virtual-0", "virtual-1"])
            let devices = try await CaptureDevice.devices()
            #expect(devices.count == 2, "calls reach the new daemon")
            await daemon.stop()
        }
    }
}
}
