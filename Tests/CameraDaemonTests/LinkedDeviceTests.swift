@testable import CameraDaemon
import CameraMedia
import CameraTestSupport
import Foundation
import Logging
import Testing

/// A USB webcam's camera and microphone are linked (AVFoundation's
/// linkedDevices): both hang from one USB device in sysfs. No USB device can
/// be plugged in here, so sysfs is a tree made as the kernel lays it out —
/// class links to device folders, interfaces under their USB device — and the
/// registry is given microphones that say which USB device they are on.
@Suite struct LinkedDeviceTests {
    /// A webcam (046d:082d, serial ABCD1234) with two video nodes and a sound
    /// card, a vivid node and the loopback card, as sysfs shows them under `root`.
    static func makeSysfs(_ root: String, serial: String? = "ABCD1234") throws {
        let files = FileManager.default
        func folder(_ path: String) throws { try files.createDirectory(atPath: root + path, withIntermediateDirectories: true) }
        func write(_ path: String, _ value: String) throws { try (value + "\n").write(toFile: root + path, atomically: false, encoding: .utf8) }
        func link(_ path: String, to destination: String) throws { try files.createSymbolicLink(atPath: root + path, withDestinationPath: destination) }
        let webcam = "/devices/pci0000:00/0000:00:14.0/usb1/1-1"
        try folder(webcam)
        try write(webcam + "/idVendor", "046d")
        try write(webcam + "/idProduct", "082d")
        if let serial { try write(webcam + "/serial", serial) }
        try write(webcam + "/manufacturer", "Logitech")
        for (node, index) in [("video0", 0), ("video1", 1)] {
            try folder("\(webcam)/1-1:1.0/video4linux/\(node)")
            try write("\(webcam)/1-1:1.0/video4linux/\(node)/index", "\(index)")
            try link("\(webcam)/1-1:1.0/video4linux/\(node)/device", to: "../..")
        }
        try folder(webcam + "/1-1:1.2/sound/card1")
        try link(webcam + "/1-1:1.2/sound/card1/device", to: "../..")
        try folder("/devices/platform/vivid.0/video4linux/video2")
        try write("/devices/platform/vivid.0/video4linux/video2/index", "0")
        try link("/devices/platform/vivid.0/video4linux/video2/device", to: "../..")
        try folder("/bus/platform/drivers/vivid")
        try link("/devices/platform/vivid.0/driver", to: "../../../bus/platform/drivers/vivid")
        try folder("/devices/platform/snd_aloop.0/sound/card2")
        try link("/devices/platform/snd_aloop.0/sound/card2/device", to: "../..")
        try folder("/class/video4linux")
        try folder("/class/sound")
        try link("/class/video4linux/video0", to: "../../devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.0/video4linux/video0")
        try link("/class/video4linux/video1", to: "../../devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.0/video4linux/video1")
        try link("/class/video4linux/video2", to: "../../devices/platform/vivid.0/video4linux/video2")
        try link("/class/sound/card1", to: "../../devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.2/sound/card1")
        try link("/class/sound/card2", to: "../../devices/platform/snd_aloop.0/sound/card2")
    }

    @Test func aWebcamsVideoNodesAndSoundCardHangFromOneUSBDevice() async throws {
        try await withTemporaryDirectory { root in
            try Self.makeSysfs(root)
            let camera = V4L2Discovery.identity(of: "/dev/video0", busInfo: "usb-0000:00:14.0-1", sysfs: root)
            #expect(camera.uniqueID == "usb-046d:082d-ABCD1234" && camera.modelID == "046d:082d")
            #expect(camera.manufacturer == "Logitech" && camera.isExternal)
            let second = V4L2Discovery.identity(of: "/dev/video1", busInfo: "usb-0000:00:14.0-1", sysfs: root)
            #expect(second.uniqueID == "usb-046d:082d-ABCD1234-1")
            let card = try #require(USBParent.of(root + "/class/sound/card1"))
            #expect(camera.usbDevice == card.path && second.usbDevice == card.path, "\(String(describing: camera.usbDevice)) \(card.path)")
            #expect(card.path.hasSuffix("/usb1/1-1"))
            #expect(ALSADiscovery.uniqueID(usb: card, cardID: "C920", device: 0) == "usb-046d:082d-ABCD1234-audio-0")

            // Not on USB: the bus info and the driver; the card's id.
            let vivid = V4L2Discovery.identity(of: "/dev/video2", busInfo: "platform:vivid-002", sysfs: root)
            #expect(vivid.uniqueID == "platform-vivid-002" && vivid.modelID == "vivid" && !vivid.isExternal && vivid.usbDevice == nil)
            #expect(USBParent.of(root + "/class/sound/card2") == nil)
            #expect(ALSADiscovery.uniqueID(usb: nil, cardID: "Loopback", device: 1) == "alsa-Loopback-1")
            #expect(USBParent.of(root + "/class/sound/card9") == nil, "no such card")
        }
    }

    @Test func withoutASerialTheUSBPortNamesTheDevice() async throws {
        try await withTemporaryDirectory { root in
            try Self.makeSysfs(root, serial: nil)
            #expect(V4L2Discovery.identity(of: "/dev/video0", busInfo: "", sysfs: root).uniqueID == "usb-046d:082d@1-1")
            #expect(USBParent.of(root + "/class/sound/card1").map { ALSADiscovery.uniqueID(usb: $0, cardID: "C920", device: 0) }
                    == "usb-046d:082d@1-1-audio-0")
        }
    }

    /// A microphone on a USB device, for the registry (no sound card here).
    final class USBMicrophone: MicrophoneBackend {
        let uniqueID: String
        let usbDevice: String?
        let audio = AudioCapabilities(native: AudioLayout(sampleRate: 48_000, channels: 2, sampleFormat: .s16, framesPerPeriod: 480))

        init(_ uniqueID: String, on usbDevice: String?) {
            self.uniqueID = uniqueID
            self.usbDevice = usbDevice
        }

        func describe() -> DeviceDescription {
            .microphone(uniqueID: uniqueID, modelID: "test", localizedName: uniqueID, manufacturer: "", backend: .alsa, audio: audio)
        }

        func startCapture(budget: ClientBudget, logger: Logger,
                          onFailure: @escaping @Sendable (CameraError) -> Void) throws(CameraError) -> any AudioCapture {
            throw CameraError(.unsupported, "a test's microphone does not capture")
        }
    }

    @Test func devicesOnOneUSBDeviceNameEachOtherAndWatchersHearItChange() async throws {
        let registry = DeviceRegistry(timers: .testTimers)
        try registry.add(microphone: USBMicrophone("usb-1234:5678-X-audio-0", on: "/sys/devices/usb1/1-1"))
        try registry.add(microphone: USBMicrophone("alsa-Loopback-1", on: nil))
        var events = registry.subscribe(includeExisting: false).makeAsyncIterator()
        #expect(await events.next()?.kind == .subscribed)

        try registry.add(microphone: USBMicrophone("usb-1234:5678-X-audio-1", on: "/sys/devices/usb1/1-1"))
        let added = [await events.next(), await events.next()]
        #expect(added.map { $0?.kind } == [.connected, .changed])
        #expect(added.map { $0?.device?.uniqueID } == ["usb-1234:5678-X-audio-1", "usb-1234:5678-X-audio-0"])
        #expect(added.map { $0?.device?.linkedUniqueIDs } == [["usb-1234:5678-X-audio-0"], ["usb-1234:5678-X-audio-1"]])
        #expect(registry.description(of: "alsa-Loopback-1")?.linkedUniqueIDs == [], "not on USB: linked to nothing")

        registry.remove("usb-1234:5678-X-audio-1")
        let removed = [await events.next(), await events.next()]
        #expect(removed.map { $0?.kind } == [.disconnected, .changed])
        #expect(removed[1]?.device?.linkedUniqueIDs == [], "its partner went")
    }
}
