import CameraMedia
import CameraTestSupport
import CaptureKit
import Foundation
import Testing

/// The V4L2 backend against the kernel's vivid driver. Runs only inside the
/// VM that ``VividVMTests`` boots; `v4l2-ctl` is the independent reference.
///
/// The VM's CPU is emulated and stalls for hundreds of milliseconds: vivid
/// then skips frames and clients fall behind. So streams are held to the
/// accounting of every sequence number (delivered, or reported dropped with a
/// reason) and to the rate of the driver's own timestamps, never to the wall
/// clock or to zero drops; and waits are on conditions, with generous bounds.
@Suite(.serialized, .enabled(if: Vivid.isGuest, "runs inside scripts/vivid-vm, which VividVMTests boots"))
struct VividGuestTests {
    /// How many tests this suite has, for the host to check they all ran.
    static let testCount = 15

    @Test func theDaemonListsEachCaptureNodeWithItsCardName() async throws {
        let nodes = Vivid.captureNodes()
        #expect(nodes.count == 2, "vivid made \(nodes)")
        try await Vivid.withDaemon { daemon in
            let list = try await camctl(["list", "--json"], socket: daemon.socketPath)
            let devices = try #require(try Vivid.json(list) as? [[String: Any]], "\(list)")
            #expect(Set(devices.compactMap { $0["uniqueID"] as? String }) == Set(nodes.map(\.uniqueID)),
                    "only the capture nodes, and no virtual camera when real ones exist")
            for node in nodes {
                let reference = try await Vivid.v4l2ctl(["-d", node.path, "-D"])
                let card = try #require(reference.lines.first { $0.contains("Card type") }?
                    .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces))
                let info = try await camctl(["info", node.uniqueID, "--json"], socket: daemon.socketPath)
                let device = try #require(try Vivid.json(info) as? [String: Any], "\(info)")
                #expect(device["localizedName"] as? String == card)
                #expect(device["devicePath"] as? String == node.path)
                #expect(device["isConnected"] as? Bool == true)
            }
        }
    }

    @Test func formatsAgreeWithV4L2CtlListFormatsExt() async throws {
        try await Vivid.withDaemon { daemon in
            for node in Vivid.captureNodes() {
                let reference = try await Vivid.v4l2ctl(["-d", node.path, "--list-formats-ext"])
                let info = try await camctl(["info", node.uniqueID, "--json"], socket: daemon.socketPath)
                let ours = try Self.modes(fromCamctl: info)
                let theirs = Self.modes(fromV4L2Ctl: reference.standardOutput)
                #expect(theirs.count > 100, "vivid lists many formats: \(reference.standardOutput.prefix(500))")
                #expect(ours == theirs, "\(node): only in camctl: \(ours.subtracting(theirs).sorted().prefix(10)); only in v4l2-ctl: \(theirs.subtracting(ours).sorted().prefix(10))")
            }
        }
    }

    @Test(arguments: ["YUYV", "NV12"])
    func streamingAccountsForEveryFrameAtTheSetRate(fourcc: String) async throws {
        try await Vivid.withDaemon { daemon in
            for node in [Vivid.singlePlanar, Vivid.multiPlanar] {
                // camerad sets the node's mode itself, under the configuration lock.
                let set = try await camctl(["set", node.uniqueID, "--format", "\(fourcc):640x480", "--fps", "25"],
                                           socket: daemon.socketPath)
                #expect(set.lines == ["format: \(fourcc):640x480 at 25 fps"], "\(set.standardError)")
                let format = try await Vivid.v4l2ctl(["-d", node.path, "--get-fmt-video"])
                #expect(format.standardOutput.contains("'\(fourcc)'") && format.standardOutput.contains("640/480"),
                        "v4l2-ctl sees the mode camerad set: \(format.standardOutput)")
                let result = try await camctl(["stream", node.uniqueID, "--count", "100", "--json"],
                                              socket: daemon.socketPath, timeout: .seconds(120))
                let report = try StreamReport(result)
                print(Vivid.figures + "\(node) \(fourcc): \(report)")
                #expect(report.frames == 100 && report.accountsForEveryFrame, "\(node) \(fourcc): \(report)")
                #expect(abs(report.deviceFramesPerSecond - 25) <= 2.5,
                        "\(node) \(fourcc): the driver's timestamps say \(report.deviceFramesPerSecond) fps for an interval of 1/25 s")
                #expect(result.standardOutput.contains("640x480"), "\(result.standardOutput)")
            }
        }
    }

    /// vivid's default pattern: 75% colour bars, left to right.
    static let bars: [(r: Int, g: Int, b: Int)] = [
        (191, 191, 191), (191, 191, 0), (0, 191, 191), (0, 191, 0),
        (191, 0, 191), (191, 0, 0), (0, 0, 191), (0, 0, 0),
    ]

    @Test func bgraOutputOfTheColourBarsHasTheBarsColours() async throws {
        let node = Vivid.singlePlanar
        try Vivid.setMode(node, "YUYV")
        try await withTemporaryDirectory { folder in
            try await Vivid.withDaemon { daemon in
                // The middle of each eighth of the frame shows bar 0...7.
                try await Self.expectBars(Array(0..<8), node, daemon, folder)
                // vivid has no zoom control: camerad's crop magnifies the middle
                // half, where bars 2...5 are twice as wide.
                let zoom = try await camctl(["set", node.uniqueID, "--zoom", "2"], socket: daemon.socketPath)
                #expect(zoom.lines == ["zoom: 2"], "\(zoom.standardError)")
                try await Self.expectBars([2, 2, 3, 3, 4, 4, 5, 5], node, daemon, folder)
            }
        }
    }

    /// A snapshot of the colour bars decodes (turbojpeg) with the bars' colours;
    /// its EXIF names the driver; vivid has no flash, so one is refused.
    @Test func aSnapshotOfTheColourBarsHasTheBarsColours() async throws {
        let node = Vivid.singlePlanar
        try await withTemporaryDirectory { folder in
            try await Vivid.withDaemon { daemon in
                let file = folder + "/bars.jpg"
                let shot = try await camctl(["snapshot", node.uniqueID, file, "--size", "640x480", "--quality", "95"],
                                            socket: daemon.socketPath)
                #expect(shot.status == 0, "\(shot.standardError)")
                let jpeg = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
                let image = try JPEGDecoder().decodeBGRA(jpeg)
                #expect(image.width <= 640 && image.height <= 480 && image.width > 0, "\(image.width)x\(image.height)")
                for (eighth, bar) in Self.bars.enumerated() {
                    let x = (2 * eighth + 1) * image.width / 16
                    let offset = (image.height * 5 / 8 * image.width + x) * 4
                    let pixel = (r: Int(image.pixels[offset + 2]), g: Int(image.pixels[offset + 1]), b: Int(image.pixels[offset]))
                    #expect(abs(pixel.r - bar.r) <= 20 && abs(pixel.g - bar.g) <= 20 && abs(pixel.b - bar.b) <= 20,
                            "eighth \(eighth) is \(pixel), not \(bar)")
                }
                let exif = EXIF.values(in: jpeg)
                #expect(exif["Make"] == "vivid", "\(exif)")
                let flash = try await camctl(["snapshot", node.uniqueID, folder + "/flash.jpg", "--flash", "on"],
                                             socket: daemon.socketPath)
                #expect(flash.status == 1 && flash.standardError.contains("has no flash"), "\(flash.standardError)")
            }
        }
    }

    /// One BGRA frame: the middle of each eighth of it has the colour of `expected[eighth]`.
    static func expectBars(_ expected: [Int], _ node: Vivid.Node, _ daemon: DaemonProcess, _ folder: String) async throws {
        let file = folder + "/frame.bgra"
        try? FileManager.default.removeItem(atPath: file)
        let result = try await camctl(["stream", node.uniqueID, "--pixel-format", "bgra", "--count", "1",
                                       "--output", file], socket: daemon.socketPath)
        #expect(result.status == 0, "\(result.standardError)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        try #require(bytes.count == 640 * 480 * 4)
        for (eighth, index) in expected.enumerated() {
            let bar = bars[index]
            let x = (2 * eighth + 1) * 640 / 16
            let offset = (300 * 640 + x) * 4
            let pixel = (r: Int(bytes[offset + 2]), g: Int(bytes[offset + 1]), b: Int(bytes[offset]))
            #expect(abs(pixel.r - bar.r) <= 16 && abs(pixel.g - bar.g) <= 16 && abs(pixel.b - bar.b) <= 16,
                    "eighth \(eighth) is \(pixel), not bar \(index) \(bar)")
            #expect(bytes[offset + 3] == 255)
        }
    }

    @Test func controlsSetThroughCameradAreReadBackByV4L2Ctl() async throws {
        let node = Vivid.singlePlanar
        try await Vivid.withDaemon { daemon in
            let set = try await camctl(["set", node.uniqueID, "--control", "brightness=200", "--control", "horizontal_flip=1"],
                                       socket: daemon.socketPath)
            #expect(set.status == 0, "\(set.standardError)")
            let readBack = try await Vivid.v4l2ctl(["-d", node.path, "-C", "brightness,horizontal_flip"])
            #expect(readBack.lines.contains("brightness: 200"), "\(readBack.standardOutput)")
            #expect(readBack.lines.contains("horizontal_flip: 1"), "\(readBack.standardOutput)")

            let refused = try await camctl(["set", node.uniqueID, "--control", "brightness=300"], socket: daemon.socketPath)
            #expect(refused.status == 1)
            #expect(refused.standardError.contains("brightness must be 0 to 255"), "\(refused.standardError)")
            let unchanged = try await Vivid.v4l2ctl(["-d", node.path, "-C", "brightness"])
            #expect(unchanged.lines.contains("brightness: 200"), "a refused change changes nothing")

            // The same through CaptureKit, under its lock; another process is refused meanwhile.
            CaptureDaemon.socketPath = daemon.socketPath
            defer { CaptureDaemon.disconnect() }
            let device = try await CaptureDevice.matching(node.uniqueID)
            try await device.lockForConfiguration()
            try await device.setControls([("brightness", 64), ("vertical_flip", 1)])
            let locked = try await camctl(["set", node.uniqueID, "--control", "brightness=1"], socket: daemon.socketPath)
            #expect(locked.status == 1 && locked.standardError.contains("locked for configuration by pid \(getpid())"),
                    "\(locked.standardError)")
            await device.unlockForConfiguration()
            let both = try await Vivid.v4l2ctl(["-d", node.path, "-C", "brightness,vertical_flip"])
            #expect(both.lines.contains("brightness: 64") && both.lines.contains("vertical_flip: 1"), "\(both.standardOutput)")
            let get = try await camctl(["get", node.uniqueID, "vertical_flip"], socket: daemon.socketPath)
            #expect(get.lines == ["vertical_flip: 1"])

            let reset = try await camctl(["set", node.uniqueID, "--control", "brightness=128", "--control", "horizontal_flip=0",
                                          "--control", "vertical_flip=0"], socket: daemon.socketPath)
            #expect(reset.status == 0)
        }
    }

    @Test func aNodeStreamingInAnotherProcessIsReportedBusyNotCrashedOn() async throws {
        let node = Vivid.singlePlanar
        try Vivid.setMode(node, "YUYV")
        try await Vivid.withDaemon { daemon in
            let other = try RunningProcess("/usr/bin/v4l2-ctl", ["-d", node.path, "--stream-mmap", "--stream-count=100000"])
            // v4l2-ctl's progress output is buffered in a pipe: ask camerad until it sees the node taken.
            var device: [String: Any] = [:]
            _ = try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                device = try await Self.info(node, daemon)
                return device["unavailableReason"] != nil
            }
            let reason = device["unavailableReason"] as? String ?? ""
            #expect(reason.contains("in use by another program") && reason.contains("v4l2-ctl"), "reason: '\(reason)'")
            #expect(device["isConnected"] as? Bool == true)

            let refused = try await camctl(["stream", node.uniqueID, "--count", "5"], socket: daemon.socketPath)
            #expect(refused.status == 1)
            #expect(refused.standardError.contains("in use by another program"), "\(refused.standardError)")
            #expect(!daemon.hasExited)

            _ = await other.stop(signal: SIGKILL)
            #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                try await Self.info(node, daemon)["unavailableReason"] == nil
            }, "camerad sees the node free again")
            let streamed = try await camctl(["stream", node.uniqueID, "--count", "5"], socket: daemon.socketPath)
            #expect(streamed.status == 0, "once the other program is gone: \(streamed.standardError)")
        }
    }

    @Test func twoCamctlClientsStreamFromOneNodeAtOnce() async throws {
        let node = Vivid.singlePlanar
        try Vivid.setMode(node, "YUYV")
        try await Vivid.withDaemon { daemon in
            // They stream until stopped, so however slowly each starts, they overlap.
            let clients = try (0..<2).map { _ in
                try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", node.uniqueID, "--json"])
            }
            #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await StatsReport.of(node.uniqueID, daemon).streams == 2
            }, "both stream at once")
            let converted = try await StatsReport.of(node.uniqueID, daemon).variants.first?.framesMade ?? 0
            #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                try await StatsReport.of(node.uniqueID, daemon).variants.first?.framesMade ?? 0 >= converted + 50
            }, "50 frames more for both")
            for client in clients {
                let report = try StreamReport(await client.stop(signal: SIGINT, timeout: .seconds(60)))
                print(Vivid.figures + "one of two clients: \(report)")
                #expect(report.frames > 0 && report.accountsForEveryFrame, "\(node): \(report)")
            }
        }
    }

    /// Stops and starts with no pause between them, from one process: each
    /// start finds the node let go of by the stop before it (it once could
    /// find it still streaming, and say "in use by another program"). Then ten
    /// snapshots in a row, each starting and stopping the idle node.
    @Test func fiftyStopsAndStartsThenTenSnapshotsInARowFromOneProcess() async throws {
        let node = Vivid.singlePlanar
        try Vivid.setMode(node, "YUYV")
        try await Vivid.withDaemon { daemon in
            CaptureDaemon.socketPath = daemon.socketPath
            defer { CaptureDaemon.disconnect() }
            let device = try await CaptureDevice.matching(node.uniqueID)
            for round in 0..<50 {
                let session = CaptureSession()
                let output = CaptureVideoDataOutput()
                session.addInput(try CaptureDeviceInput(device: device))
                session.addOutput(output)
                let frames = FrameReader(output.sampleBuffers)
                do {
                    try await session.start()
                    _ = try await frames.nextFrame()
                } catch {
                    Issue.record("round \(round): \(error)")
                    throw error
                }
                await session.stopRunning()
            }
            let session = CaptureSession()
            let photos = CapturePhotoOutput()
            session.addInput(try CaptureDeviceInput(device: device))
            session.addOutput(photos)
            for shot in 0..<10 {
                let photo = try await photos.capturePhoto(with: PhotoSettings())
                #expect(photo.fileDataRepresentation()?.isEmpty == false, "snapshot \(shot)")
            }
            #expect(!daemon.logText.contains("in use by another program") && !daemon.logText.contains("EBUSY"),
                    "\(daemon.logText.suffix(2000))")
        }
    }

    /// vivid's `disconnect` button unregisters the node as an unplug would, and
    /// registers it again when its last user closes it.
    @Test func aDisconnectEndsSessionsAndTheReturningDeviceResumesThoseThatAsked() async throws {
        let node = Vivid.singlePlanar
        try Vivid.setMode(node, "YUYV")
        try await Vivid.withDaemon { daemon in
            CaptureDaemon.socketPath = daemon.socketPath
            defer { CaptureDaemon.disconnect() }
            let camctlStream = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "stream", node.uniqueID,
                                                                    "--duration", "120"])
            let device = try await CaptureDevice.matching(node.uniqueID)
            let session = CaptureSession()
            let output = CaptureVideoDataOutput()
            session.addInput(try CaptureDeviceInput(device: device))
            session.addOutput(output)
            session.automaticallyResumesAfterInterruption = true
            let events = EventLog(session)
            let frames = FrameReader(output.sampleBuffers)
            try await session.start()
            let before = try await frames.nextFrame()
            // camctl starts slowly under emulation: wait for both streams.
            #expect(try await waitUntil(timeout: .seconds(60)) { try await CaptureDaemon.statistics(for: device).streams == 2 },
                    "camctl and the session stream")

            let press = try await Vivid.v4l2ctl(["-d", node.path, "-c", "disconnect=1"])
            #expect(press.status == 0, "\(press.standardError)")
            #expect(await events.wait(for: ["interrupted videoDeviceNotAvailable", "error deviceDisconnected"], timeout: .seconds(60)),
                    "events: \(events.names)")
            // camctl may not have taken its first frame yet (it once waited forever then).
            let ended = await camctlStream.stop(signal: 0, timeout: .seconds(60))
            #expect(ended.status == 1 && ended.standardError.contains("disconnected"),
                    "camctl ended with \(ended.status): \(ended.standardError)")
            let list = try await camctl(["list", "--json"], socket: daemon.socketPath)
            #expect(list.status == 0 && list.standardOutput.contains(Vivid.multiPlanar.uniqueID), "the daemon serves on")

            // vivid registers the node again once its last user lets go: to camerad the
            // same uniqueID comes back, and the session that asked resumes.
            try #require(await events.wait(for: ["interruption ended"], timeout: .seconds(60)), "events: \(events.names)")
            let after = try await frames.nextFrame()
            #expect(after.presentationTimeStamp > before.presentationTimeStamp, "frames flow again")
            await session.stopRunning()
        }
    }

    /// A camera unplugged (vivid's disconnect button) under a recording ends it
    /// with deviceWasDisconnected, not successfully finished, and its file
    /// plays every frame camerad says it wrote.
    @Test func aRecordingOfACameraThatIsUnpluggedEndsWithAFileThatPlays() async throws {
        let node = Vivid.singlePlanar
        try Vivid.setMode(node, "YUYV")
        try await withTemporaryDirectory { folder in
            try await Vivid.withDaemon { daemon in
                let path = folder + "/unplugged.mp4"
                let recording = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "record", node.uniqueID, path,
                                                                     "--size", "320x240", "--fragment", "1", "--json"])
                // Under emulation the encoder starts slowly: wait for the first fragment.
                #expect(await recording.wait(timeout: .seconds(120)) { _ in
                    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int ?? 0) > 4096
                }, "the recording writes: \(recording.standardError)")
                let press = try await Vivid.v4l2ctl(["-d", node.path, "-c", "disconnect=1"])
                #expect(press.status == 0, "\(press.standardError)")
                let ended = await recording.stop(signal: 0, timeout: .seconds(120))
                #expect(ended.status == 1, "a recording the camera ended is a failure: \(ended.standardError)")
                struct Ended: Decodable {
                    let ending: String
                    let recordingSuccessfullyFinished: Bool
                    let frames: Int
                }
                let json = try JSONDecoder().decode(Ended.self, from: Data(ended.standardOutput.utf8))
                #expect(json.ending == "deviceWasDisconnected" && !json.recordingSuccessfullyFinished, "\(ended.standardOutput)")
                let stream = try await MovieProbe.videoStream(path)
                let frames = MovieProbe.frames(stream)
                #expect(frames > 0 && frames == json.frames, "\(frames) frames play of \(json.frames) written")
            }
        }
    }

    /// Unloading and loading the module unplugs and replugs both nodes for good;
    /// the daemon follows through each hotplug source that works without udevd.
    @Test(arguments: ["auto", "inotify"])
    func unplugAndReplugAreFollowed(hotplug: String) async throws {
        try await Vivid.withDaemon(arguments: ["--hotplug", hotplug]) { daemon in
            let uniqueIDs = Set(Vivid.captureNodes().map(\.uniqueID))
            #expect(try await Self.devices(daemon, become: uniqueIDs), "both served at start")
            let unload = try await runProcess("/bin/busybox", ["rmmod", "vivid"])
            #expect(unload.status == 0, "rmmod: \(unload.standardError)")
            #expect(try await Self.devices(daemon, become: []), "both nodes unplugged")
            let module = ProcessInfo.processInfo.environment["VIVID_VM_MODULE"] ?? ""
            let options = Vivid.moduleOptions.split(separator: " ").map(String.init)
            let load = try await runProcess("/bin/busybox", ["insmod", module] + options)
            #expect(load.status == 0, "insmod: \(load.standardError)")
            #expect(try await Self.devices(daemon, become: uniqueIDs), "both back, same uniqueIDs")
            #expect(!daemon.hasExited)
            // The VM has no udevd: auto takes the kernel's events through libudev.
            let expected = hotplug == "inotify" ? "following hotplug through inotify on /dev" : "following hotplug through kernel events"
            #expect(daemon.logText.contains(expected), "\(daemon.logText)")
        }
    }

    // MARK: - Helpers

    /// Waits up to a minute until the daemon lists exactly `uniqueIDs`.
    static func devices(_ daemon: DaemonProcess, become uniqueIDs: Set<String>) async throws -> Bool {
        try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
            let list = try await camctl(["list", "--json"], socket: daemon.socketPath)
            let devices = (try? Vivid.json(list)) as? [[String: Any]] ?? []
            return Set(devices.compactMap { $0["uniqueID"] as? String }) == uniqueIDs
        }
    }

    /// `camctl info --json` of a node.
    static func info(_ node: Vivid.Node, _ daemon: DaemonProcess) async throws -> [String: Any] {
        let info = try await camctl(["info", node.uniqueID, "--json"], socket: daemon.socketPath)
        return try #require(try Vivid.json(info) as? [String: Any], "\(info)")
    }


    /// Every "FOURCC WxH" and "FOURCC WxH interval" line of a format list, so
    /// two lists compare as sets.
    static func modes(fromV4L2Ctl text: String) -> Set<String> {
        var modes: Set<String> = []
        var fourcc = ""
        var size = ""
        for line in text.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("["), let open = line.firstIndex(of: "'") {
                let rest = line[line.index(after: open)...]
                fourcc = String(rest.prefix { $0 != "'" }).trimmingCharacters(in: .whitespaces)
            } else if line.hasPrefix("Size: Discrete ") {
                size = String(line.dropFirst("Size: Discrete ".count))
                modes.insert("\(fourcc) \(size)")
            } else if line.hasPrefix("Interval: Discrete "), let seconds = line.dropFirst("Interval: Discrete ".count).split(separator: "s").first {
                modes.insert("\(fourcc) \(size) \(seconds)")
            }
        }
        return modes
    }

    static func modes(fromCamctl result: ProcessResult) throws -> Set<String> {
        let device = try #require(try Vivid.json(result) as? [String: Any], "\(result)")
        let formats = try #require(device["formats"] as? [[String: Any]])
        var modes: Set<String> = []
        for format in formats {
            let fourcc = (format["pixelFormat"] as? String ?? "").trimmingCharacters(in: .whitespaces)
            let size = "\(format["width"] as? Int ?? 0)x\(format["height"] as? Int ?? 0)"
            modes.insert("\(fourcc) \(size)")
            for range in format["frameRateRanges"] as? [[String: Any]] ?? [] {
                let parts = (range["minFrameDuration"] as? String ?? "").split(separator: "/").compactMap { Double($0) }
                guard parts.count == 2, parts[1] > 0 else { continue }
                modes.insert("\(fourcc) \(size) \(String(format: "%.3f", parts[0] / parts[1]))")
            }
        }
        return modes
    }
}
