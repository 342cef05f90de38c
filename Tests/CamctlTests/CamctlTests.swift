import CameraTestSupport
import Foundation
import Testing

@Suite struct CamctlListAndInfoTests {
    @Test func listPrintsOneLinePerDevice() async throws {
        try await withRunningDaemon(virtualCameras: 2) { daemon in
            let result = try await camctl(["list"], socket: daemon.socketPath)
            #expect(result.status == 0)
            #expect(result.lines == [
                #"0  virtual-0  "Virtual Camera 0"  front  builtInWideAngleCamera  connected"#,
                #"1  virtual-1  "Virtual Camera 1"  back  builtInWideAngleCamera  connected"#,
            ])
        }
    }

    @Test func listJSONIsAnArrayWithAVFoundationsKeys() async throws {
        try await withRunningDaemon(virtualCameras: 2) { daemon in
            let result = try await camctl(["list", "--json"], socket: daemon.socketPath)
            #expect(result.status == 0)
            let array = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]])
            #expect(array.count == 2)
            #expect(Set(array[0].keys) == ["uniqueID", "modelID", "localizedName", "position", "deviceType", "mediaType", "isConnected"])
            #expect(array[0]["mediaType"] as? String == "video")
            #expect(array[1]["uniqueID"] as? String == "virtual-1")
            #expect(array[1]["position"] as? String == "back")
            #expect(array[1]["isConnected"] as? Bool == true)
        }
    }

    @Test func theSocketCanBeGivenBeforeOrAfterTheSubcommandOrByEnvironment() async throws {
        try await withRunningDaemon { daemon in
            let before = try await runProcess(Binaries.camctl, ["--socket", daemon.socketPath, "list"])
            let after = try await runProcess(Binaries.camctl, ["list", "--socket", daemon.socketPath])
            let environment = try await runProcess(Binaries.camctl, ["list"], environment: ["CAMERAD_SOCKET": daemon.socketPath])
            for result in [before, after, environment] {
                #expect(result.status == 0)
                #expect(result.lines.count == 1)
            }
        }
    }

    @Test(arguments: ["0", "virtual-0"])
    func infoListsFormatsLikeV4L2CtlAndControlsLikeV4L2CtlL(device: String) async throws {
        try await withRunningDaemon { daemon in
            let result = try await camctl(["info", device], socket: daemon.socketPath)
            #expect(result.status == 0)
            let text = result.standardOutput
            #expect(text.contains("\tUnique ID      : virtual-0"))
            #expect(text.contains("\t[0]: 'YUYV' (YUYV 4:2:2)\n\t\tSize: Discrete 640x480\n\t\t\tInterval: Continuous 0.017s - 1.000s (1.000-60.000 fps)"))
            #expect(text.contains("\t[2]: 'MJPG' (Motion-JPEG, compressed)"))
            #expect(text.contains("\t\tSize: Discrete 1920x1080\n\t\t\tInterval: Continuous 0.033s - 1.000s (1.000-30.000 fps)"))
            #expect(text.contains("                     brightness 0x00980900 (int)    : min=0 max=255 step=1 default=128 value=128"))
            #expect(text.contains("                  auto_exposure 0x009a0901 (menu)   : min=0 max=3 default=3 value=3 (Aperture Priority Mode)\n\t\t\t\t1: Manual Mode\n\t\t\t\t3: Aperture Priority Mode"))
            #expect(text.contains("\tFocus modes    : locked, autoFocus, continuousAutoFocus"))
            #expect(text.contains("\tZoom           : 1.0x - 4.0x"))
        }
    }

    @Test func infoJSONCarriesFormatsControlsAndCapabilities() async throws {
        try await withRunningDaemon { daemon in
            let result = try await camctl(["info", "virtual-0", "--json"], socket: daemon.socketPath)
            #expect(result.status == 0)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
            let formats = try #require(object["formats"] as? [[String: Any]])
            #expect(formats.count == 9)
            #expect(formats[0]["pixelFormat"] as? String == "YUYV")
            let ranges = try #require(formats[0]["frameRateRanges"] as? [[String: Any]])
            #expect(ranges.first?["maxFrameRate"] as? Double == 60)
            #expect(ranges.first?["minFrameDuration"] as? String == "1/60")
            let controls = try #require(object["controls"] as? [[String: Any]])
            #expect(controls.contains { $0["name"] as? String == "zoom_absolute" && $0["maximum"] as? Int == 400 })
            let capabilities = try #require(object["capabilities"] as? [String: Any])
            #expect(capabilities["hasTorch"] as? Bool == true)
            #expect(capabilities["exposureModes"] as? [String] == ["locked", "continuousAutoExposure", "custom"])
            #expect(object["activeFormatIndex"] as? Int == 0)
        }
    }
}

/// v4l2-ctl's listing flags at the top level, each the same text as camctl's own command.
@Suite struct CamctlV4l2CtlSpellingTests {
    @Test func listCtrlsListFormatsExtAndListDevicesPrintWhatTheirCommandsDo() async throws {
        try await withRunningDaemon(virtualCameras: 2) { daemon in
            let socket = daemon.socketPath
            let controls = try await camctl(["controls", "virtual-1"], socket: socket)
            #expect(try await camctl(["-d", "virtual-1", "--list-ctrls"], socket: socket).standardOutput == controls.standardOutput)
            #expect(try await camctl(["-d", "virtual-1", "-l"], socket: socket).standardOutput == controls.standardOutput)
            #expect(controls.lines.count > 10)

            let info = try await camctl(["info", "virtual-0"], socket: socket).standardOutput
            let formats = try await camctl(["--list-formats-ext"], socket: socket)
            #expect(formats.status == 0 && formats.lines.first == "Formats:", "\(formats.standardError)")
            #expect(info.contains(formats.standardOutput), "the first device's formats, as 'info' prints them")

            #expect(try await camctl(["--list-devices"], socket: socket).standardOutput
                    == (try await camctl(["list"], socket: socket)).standardOutput)
        }
    }
}

@Suite struct CamctlWatchAndVirtualTests {
    @Test func watchPrintsALinePerEventUntilInterrupted() async throws {
        try await withRunningDaemon { daemon in
            let watch = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "watch"])
            #expect(await watch.wait { $0.standardError.contains("watching device events") })
            let added = try await camctl(["virtual", "add", "--name", "Desk", "--position", "back"], socket: daemon.socketPath)
            #expect(added.status == 0)
            #expect(added.lines == ["virtual-1"])
            #expect(try await camctl(["virtual", "remove", "virtual-1"], socket: daemon.socketPath).status == 0)
            #expect(await watch.wait { $0.lines.count == 2 })
            let result = await watch.stop(signal: SIGINT)
            #expect(result.lines == [#"connected virtual-1 "Desk" back"#, #"disconnected virtual-1 "Desk" back"#])
        }
    }

    @Test func watchJSONPrintsOneObjectPerLineAndCanStartWithTheExistingDevices() async throws {
        try await withRunningDaemon(virtualCameras: 2) { daemon in
            let watch = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "watch", "--existing", "--json"])
            #expect(await watch.wait { $0.lines.count == 2 })
            let lines = watch.lines
            let objects = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            #expect(objects.map { $0["event"] as? String } == ["connected", "connected"])
            #expect(objects.map { ($0["device"] as? [String: Any])?["uniqueID"] as? String } == ["virtual-0", "virtual-1"])
            _ = await watch.stop()
        }
    }

    /// Like `udevadm monitor`, watch lives through a daemon restart: the devices
    /// that went with it are printed as disconnected, those of the new one as connected.
    @Test func watchLivesThroughADaemonRestart() async throws {
        try await withTemporarySocketPath { path in
            var daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "1"])
            let watch = try RunningProcess(Binaries.camctl, ["--socket", path, "watch"])
            #expect(await watch.wait { $0.standardError.contains("watching") })
            await daemon.stop()
            #expect(await watch.wait { $0.lines.contains { $0.hasPrefix("disconnected virtual-0 ") } }, "\(watch.lines)")
            #expect(watch.process.isRunning)
            daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "1"])
            #expect(await watch.wait { $0.lines.contains { $0.hasPrefix("connected virtual-0 ") } }, "\(watch.lines)")
            let result = await watch.stop()
            #expect(result.lines.count == 2, "\(result.lines)")
            await daemon.stop()
        }
    }

    @Test func virtualAddTakesAnIndexAndRefusesATakenOne() async throws {
        try await withRunningDaemon { daemon in
            let added = try await camctl(["virtual", "add", "--index", "7"], socket: daemon.socketPath)
            #expect(added.lines == ["virtual-7"])
            let again = try await camctl(["virtual", "add", "--index", "7"], socket: daemon.socketPath)
            #expect(again.status == 1)
            #expect(again.standardError == "camctl: a device 'virtual-7' already exists; pick another index\n")
            let list = try await camctl(["list"], socket: daemon.socketPath)
            #expect(list.lines.count == 2)
        }
    }

    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                   "needs root and setpriv(1) to run camctl as another user"))
    func adminCallsAreRefusedToOtherUsersWhoCanStillList() async throws {
        try await withTemporaryDirectory { directory in
            chmod(directory, 0o755)
            let daemon = try await DaemonProcess(socketPath: directory + "/camerad.sock", arguments: ["--socket-mode", "0666"])
            let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.camctl, "--socket", daemon.socketPath]
            let list = try await runProcess("/usr/bin/setpriv", asNobody + ["list"])
            #expect(list.status == 0, "\(list.standardError)")
            #expect(list.lines.count == 1)
            let add = try await runProcess("/usr/bin/setpriv", asNobody + ["virtual", "add"])
            #expect(add.status == 1)
            #expect(add.standardError.contains("allowed to camerad's own user (uid 0) and root, not uid 65534"))
            await daemon.stop()
        }
    }
}

@Suite struct CamctlExitStatusTests {
    @Test func anUnknownDeviceIsStatusOneWithOneLine() async throws {
        try await withRunningDaemon { daemon in
            let result = try await camctl(["info", "virtual-9"], socket: daemon.socketPath)
            #expect(result.status == 1)
            #expect(result.standardError.split(separator: "\n").count == 1)
            #expect(result.standardError.contains("no device 'virtual-9'"))
            #expect(result.standardOutput.isEmpty)
        }
    }

    @Test func noDaemonIsStatusOneSayingWhatToDo() async throws {
        let result = try await camctl(["list"], socket: "/tmp/nothing-listens-here.sock")
        #expect(result.status == 1)
        #expect(result.standardError.split(separator: "\n").count == 1)
        #expect(result.standardError.contains("cannot reach camerad at /tmp/nothing-listens-here.sock"))
        #expect(result.standardError.contains("start camerad"))
    }

    @Test(arguments: [["list", "--bogus"], ["info", "0", "-d", "1"], ["virtual", "add", "--index", "99"], ["virtual", "add", "--position", "sideways"], ["frobnicate"]])
    func usageErrorsAreStatusTwo(arguments: [String]) async throws {
        let result = try await camctl(arguments, socket: nil)
        #expect(result.status == 2, "\(arguments): \(result.standardError)")
        #expect(result.standardError.contains("Usage:") || result.standardError.contains("Error:"))
    }

    @Test func helpIsStatusZero() async throws {
        for arguments in [["--help"], ["list", "--help"], ["help", "info"]] {
            let result = try await camctl(arguments, socket: nil)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.standardOutput.contains("USAGE:"))
        }
    }
}

/// `--help` is part of the interface: a change to it shows in review.
/// Run with UPDATE_SNAPSHOTS=1 to accept a change.
@Suite struct HelpSnapshotTests {
    static let snapshots = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "Snapshots")

    @Test(arguments: [
        ("camctl", ["--help"]), ("camctl", ["list", "--help"]), ("camctl", ["info", "--help"]),
        ("camctl", ["watch", "--help"]), ("camctl", ["stream", "--help"]), ("camctl", ["virtual", "add", "--help"]),
        ("camctl", ["record", "--help"]),
        ("camerad", ["--help"]),
    ])
    func helpMatchesItsSnapshot(tool: String, arguments: [String]) async throws {
        let executable = tool == "camctl" ? Binaries.camctl : Binaries.camerad
        let result = try await runProcess(executable, arguments, environment: ["COLUMNS": "100"])
        #expect(result.status == 0)
        let name = ([tool] + arguments.filter { $0 != "--help" }).joined(separator: "-") + ".txt"
        let file = Self.snapshots.appending(path: name)
        if ProcessInfo.processInfo.environment["UPDATE_SNAPSHOTS"] == "1" {
            try result.standardOutput.write(to: file, atomically: true, encoding: .utf8)
        }
        let snapshot = try String(contentsOf: file, encoding: .utf8)
        #expect(result.standardOutput == snapshot, "\(name) changed; rerun with UPDATE_SNAPSHOTS=1 if intended")
    }
}
