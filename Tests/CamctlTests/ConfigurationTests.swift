import CameraTestSupport
import Foundation
import Glibc
import Testing

/// The configuration lock across processes, and `camctl set/get/controls/lock`
/// against a real camerad.
@Suite struct ConfigurationLockTests {
    @Test func aSecondProcessIsRefusedWithTheHoldersPidUntilTheHolderIsKilled() async throws {
        try await withRunningDaemon { daemon in
            let holder = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "lock", "virtual-0"])
            #expect(await holder.wait { $0.lines.contains("locked virtual-0") }, "\(holder.standardError)")
            let pid = holder.process.processIdentifier

            let refused = try await camctl(["set", "virtual-0", "--control", "brightness=10"], socket: daemon.socketPath)
            #expect(refused.status == 1)
            #expect(refused.standardError.contains("virtual-0 is locked for configuration by pid \(pid) (camctl)"),
                    "\(refused.standardError)")
            let shown = try await camctl(["get", "virtual-0", "configurationLockHolder"], socket: daemon.socketPath)
            #expect(shown.lines == ["configurationLockHolder: pid \(pid) (camctl)"])
            let secondLock = try await camctl(["lock", "virtual-0", "--hold", "0"], socket: daemon.socketPath)
            #expect(secondLock.status == 1 && secondLock.standardError.contains("pid \(pid)"), "\(secondLock.standardError)")

            // SIGKILL: no unlock is ever sent; the lock goes with the connection.
            kill(pid, SIGKILL)
            _ = await holder.wait { !$0.process.isRunning }
            let set = try await camctl(["set", "virtual-0", "--control", "brightness=10", "--wait", "10"],
                                       socket: daemon.socketPath)
            #expect(set.status == 0, "\(set.standardError)")
            #expect(set.lines == ["brightness: 10"])
            let after = try await camctl(["get", "virtual-0", "configurationLockHolder"], socket: daemon.socketPath)
            #expect(after.lines == ["configurationLockHolder: none"], "set released its lock")
        }
    }

    @Test func aWaitingSetGoesThroughWhenTheHolderLetsGo() async throws {
        try await withRunningDaemon { daemon in
            let holder = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "lock", "virtual-0",
                                                              "--hold", "1"])
            #expect(await holder.wait { $0.lines.contains("locked virtual-0") })
            let set = try await camctl(["set", "virtual-0", "--control", "contrast=20", "--wait", "20"], socket: daemon.socketPath)
            #expect(set.status == 0, "\(set.standardError)")
            let held = await holder.stop(signal: 0, timeout: .seconds(10))
            #expect(held.status == 0 && held.lines == ["locked virtual-0", "unlocked virtual-0"], "\(held)")
        }
    }

    @Test func theLockHolderGetsEventsToEveryWatcher() async throws {
        try await withRunningDaemon { daemon in
            let watch = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "watch", "--json"])
            #expect(await watch.wait { $0.standardError.contains("watching") })
            let lock = try await camctl(["lock", "virtual-0", "--hold", "0.2"], socket: daemon.socketPath)
            #expect(lock.status == 0)
            #expect(await watch.wait { $0.standardOutput.contains("\"unlocked\"") }, "\(watch.standardOutput)")
            let events = watch.lines.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["event"] as? String
            }
            #expect(events.filter { $0 == "locked" || $0 == "unlocked" } == ["locked", "unlocked"], "\(events)")
            _ = await watch.stop()
        }
    }
}

@Suite struct CamctlConfigurationTests {
    static func details(_ device: String, _ socket: String) async throws -> [String: Any] {
        let info = try await camctl(["info", device, "--json"], socket: socket)
        return try #require(try JSONSerialization.jsonObject(with: Data(info.standardOutput.utf8)) as? [String: Any])
    }

    @Test func setAppliesFormatFrameRateModesAndZoomAndGetReadsThemBack() async throws {
        try await withRunningDaemon { daemon in
            let set = try await camctl(["set", "virtual-0", "--format", "NV12:1280x720", "--fps", "15", "--focus", "locked",
                                        "--exposure", "locked", "--white-balance", "locked", "--zoom", "2"],
                                       socket: daemon.socketPath)
            #expect(set.status == 0, "\(set.standardError)")
            #expect(set.lines == ["format: NV12:1280x720 at 15 fps", "focus: locked", "exposure: locked",
                                  "white balance: locked", "zoom: 2"])
            // The controls stay; the mode was camctl's, gone with it (issue 33), unless stored.
            for (name, value) in [("activeFormat", "YUYV:640x480"), ("focusMode", "locked"), ("exposureMode", "locked"),
                                  ("whiteBalanceMode", "locked"), ("videoZoomFactor", "2.0"), ("zoom_absolute", "200"),
                                  ("focus_automatic_continuous", "0")] {
                let get = try await camctl(["get", "virtual-0", name], socket: daemon.socketPath)
                #expect(get.lines == ["\(name): \(value)"], "\(get.standardError)")
            }
        }
    }

    /// Issue 33's points 1 and 5: the torch lights on an idle device, and it
    /// and a mode set without --persist are the setting process's — a torch
    /// goes off and the device chooses by preset again once it exits, as an
    /// iOS app's torch and format do; a stored mode stays.
    @Test func aTorchAndAModeAreTheSettingProcesssUntilItExits() async throws {
        try await withTemporaryDirectory { state in
            try await withRunningDaemon(arguments: ["--state-dir", state]) { daemon in
                let lit = try await camctl(["set", "virtual-0", "--torch", "on", "--format", "NV12:1280x720", "--fps", "15"],
                                           socket: daemon.socketPath)
                #expect(lit.status == 0, "\(lit.standardError)")
                #expect(lit.lines == ["format: NV12:1280x720 at 15 fps", "torch: on"], "lit with no session running")
                #expect(try await waitUntil {
                    let torch = try await camctl(["get", "virtual-0", "torchMode"], socket: daemon.socketPath)
                    return torch.lines == ["torchMode: off"]
                }, "the torch went off with camctl")
                let mode = try await camctl(["get", "virtual-0", "activeFormat"], socket: daemon.socketPath)
                #expect(mode.lines == ["activeFormat: YUYV:640x480"], "the device chooses by preset again")

                let stored = try await camctl(["set", "virtual-0", "--format", "NV12:1280x720", "--persist"], socket: daemon.socketPath)
                #expect(stored.status == 0, "\(stored.standardError)")
                let passing = try await camctl(["set", "virtual-0", "--format", "YUYV:1920x1080"], socket: daemon.socketPath)
                #expect(passing.status == 0, "\(passing.standardError)")
                #expect(try await waitUntil {
                    let format = try await camctl(["get", "virtual-0", "activeFormat"], socket: daemon.socketPath)
                    return format.lines == ["activeFormat: NV12:1280x720"]
                }, "a passing mode gives way to the stored one")
            }
        }
    }

    /// Issue 16's ninth point: what `get` reads, `set` writes — lens position,
    /// custom exposure (duration and ISO), white balance temperature; `get` takes
    /// -d and the first device too.
    @Test func setWritesLensPositionExposureAndWhiteBalanceTemperature() async throws {
        try await withRunningDaemon { daemon in
            let set = try await camctl(["set", "virtual-0", "--lens-position", "0.5", "--exposure-duration", "1/100", "--iso", "200",
                                        "--white-balance-temperature", "4000"], socket: daemon.socketPath)
            #expect(set.status == 0, "\(set.standardError)")
            #expect(set.lines.count == 3 && set.lines[1] == "exposure: 0.01 s at ISO 200" && set.lines[2] == "white balance temperature: 4000 K",
                    "\(set.lines)")
            for (arguments, value) in [(["-d", "virtual-0", "exposureMode"], "custom"), (["iso"], "200.0"),
                                       (["virtual-0", "exposureDuration"], "100/10000"), (["whiteBalanceTemperature"], "4000.0"),
                                       (["focusMode"], "locked")] {
                let get = try await camctl(["get"] + arguments, socket: daemon.socketPath)
                #expect(get.lines == ["\(arguments.last!): \(value)"], "\(arguments): \(get.lines) \(get.standardError)")
            }
            let lens = try await camctl(["get", "lensPosition"], socket: daemon.socketPath)
            let position = try #require(Float(lens.lines.first?.split(separator: " ").last ?? ""))
            #expect(abs(position - 0.5) < 0.01, "\(lens.lines)")
            let bad = try await camctl(["set", "--exposure-duration", "-1"], socket: daemon.socketPath)
            #expect(bad.status == 2)
        }
    }

    @Test func aFailureNamesTheControlOrModeAndWhatIsAllowed() async throws {
        try await withRunningDaemon { daemon in
            let rate = try await camctl(["set", "virtual-0", "--format", "YUYV:1920x1080", "--fps", "60"], socket: daemon.socketPath)
            #expect(rate.status == 1)
            #expect(rate.standardError.contains("frame duration 1/60 s is outside what YUYV 1920x1080 allows: 1/30 to 1/1 s"),
                    "\(rate.standardError)")
            let mode = try await camctl(["set", "virtual-0", "--exposure", "auto"], socket: daemon.socketPath)
            #expect(mode.status == 1)
            #expect(mode.standardError.contains("virtual-0 has no exposure mode autoExpose; it supports locked, continuousAutoExposure, custom"),
                    "\(mode.standardError)")
            let zoom = try await camctl(["set", "virtual-0", "--zoom", "9"], socket: daemon.socketPath)
            #expect(zoom.standardError.contains("zoom factor 9.0 is outside virtual-0's 1.0 to 4.0"), "\(zoom.standardError)")
            let format = try await camctl(["set", "virtual-0", "--format", "YUYV:800x600"], socket: daemon.socketPath)
            #expect(format.standardError.contains("virtual-0 has no format YUYV:800x600; 'camctl info virtual-0' lists its formats"), "\(format.standardError)")
            let unknown = try await camctl(["get", "virtual-0", "sharpness"], socket: daemon.socketPath)
            #expect(unknown.status == 1 && unknown.standardError.contains("no control or setting 'sharpness'"))
            // Nothing of the refused changes stuck.
            let details = try await Self.details("virtual-0", daemon.socketPath)
            #expect(details["activeFormatIndex"] as? Int == 0)
        }
    }

    @Test func controlsListsEveryControlLikeV4L2CtlAndAsJSON() async throws {
        try await withRunningDaemon { daemon in
            let text = try await camctl(["controls", "virtual-0"], socket: daemon.socketPath)
            #expect(text.status == 0)
            #expect(text.standardOutput.contains("brightness 0x00980900 (int)    : min=0 max=255 step=1 default=128 value=128"))
            #expect(text.standardOutput.contains("power_line_frequency 0x00980918 (menu)   : min=0 max=2 default=1 value=1 (50 Hz)"))
            let json = try await camctl(["controls", "virtual-0", "--json"], socket: daemon.socketPath)
            let controls = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]])
            let menu = try #require(controls.first { $0["name"] as? String == "power_line_frequency" })
            #expect((menu["menuItems"] as? [[String: Any]])?.count == 3)
            #expect(controls.count == (try await Self.details("virtual-0", daemon.socketPath)["controls"] as? [Any])?.count)
        }
    }
}

/// `camctl set --persist`: stored by uniqueID in the daemon's state file and
/// applied whenever the device connects.
@Suite struct StoredDefaultsTests {
    static let persisted = [("activeFormat", "NV12:1280x720"), ("activeVideoMinFrameDuration", "1/15"),
                            ("brightness", "200"), ("focusMode", "locked"), ("zoom_absolute", "150")]

    static func expectPersisted(_ socket: String, _ when: String) async throws {
        for (name, value) in persisted {
            let get = try await camctl(["get", "virtual-0", name], socket: socket)
            #expect(get.lines == ["\(name): \(value)"], "\(when): \(get.standardOutput)\(get.standardError)")
        }
    }

    @Test func settingsSurviveADaemonRestartAndAVirtualCamerasRemovalAndReturn() async throws {
        try await withTemporaryDirectory { state in
            try await withRunningDaemon(arguments: ["--state-dir", state]) { daemon in
                let set = try await camctl(["set", "virtual-0", "--format", "NV12:1280x720", "--fps", "15", "--focus", "locked",
                                            "--zoom", "1.5", "--control", "brightness=200", "--persist"],
                                           socket: daemon.socketPath)
                #expect(set.status == 0, "\(set.standardError)")
                #expect(set.lines.last == "stored as virtual-0's defaults")
                // A later --persist adds to what is stored.
                let more = try await camctl(["set", "virtual-0", "--control", "contrast=20", "--persist"], socket: daemon.socketPath)
                #expect(more.status == 0, "\(more.standardError)")
            }
            let file = try String(contentsOfFile: "\(state)/defaults.json", encoding: .utf8)
            #expect(file.contains("\"virtual-0\"") && file.contains("\"brightness\""), "\(file)")

            try await withRunningDaemon(arguments: ["--state-dir", state]) { daemon in
                try await Self.expectPersisted(daemon.socketPath, "after a restart")
                let contrast = try await camctl(["get", "virtual-0", "contrast"], socket: daemon.socketPath)
                #expect(contrast.lines == ["contrast: 20"])

                let removed = try await camctl(["virtual", "remove", "virtual-0"], socket: daemon.socketPath)
                #expect(removed.status == 0, "\(removed.standardError)")
                let added = try await camctl(["virtual", "add", "--index", "0"], socket: daemon.socketPath)
                #expect(added.status == 0, "\(added.standardError)")
                try await Self.expectPersisted(daemon.socketPath, "after remove and add")
                let other = try await camctl(["virtual", "add", "--index", "1"], socket: daemon.socketPath)
                #expect(other.status == 0)
                let untouched = try await camctl(["get", "virtual-1", "brightness"], socket: daemon.socketPath)
                #expect(untouched.lines == ["brightness: 128"], "defaults belong to one uniqueID")
            }
        }
    }

    @Test func aCorruptStateFileIsReportedKeptAsideAndSurvived() async throws {
        try await withTemporaryDirectory { state in
            let garbage = "{\"devices\": {\"virtual-0\": not json"
            try garbage.write(toFile: "\(state)/defaults.json", atomically: true, encoding: .utf8)
            try await withRunningDaemon(arguments: ["--state-dir", state]) { daemon in
                #expect(daemon.logText.contains("defaults.json is unreadable"), "\(daemon.logText)")
                let list = try await camctl(["list"], socket: daemon.socketPath)
                #expect(list.status == 0 && list.standardOutput.contains("virtual-0"))
                let set = try await camctl(["set", "virtual-0", "--control", "brightness=99", "--persist"], socket: daemon.socketPath)
                #expect(set.status == 0, "\(set.standardError)")
            }
            #expect(try String(contentsOfFile: "\(state)/defaults.json.corrupt", encoding: .utf8) == garbage, "kept, not lost")
            try await withRunningDaemon(arguments: ["--state-dir", state]) { daemon in
                let get = try await camctl(["get", "virtual-0", "brightness"], socket: daemon.socketPath)
                #expect(get.lines == ["brightness: 99"])
            }
        }
    }

    @Test func anUnwritableStateDirectoryIsAClearErrorAfterApplying() async throws {
        try await withTemporaryDirectory { folder in
            // A file where the state directory should be.
            try "".write(toFile: "\(folder)/state", atomically: true, encoding: .utf8)
            try await withRunningDaemon(arguments: ["--state-dir", "\(folder)/state"]) { daemon in
                let set = try await camctl(["set", "virtual-0", "--control", "brightness=42", "--persist"], socket: daemon.socketPath)
                #expect(set.status == 1)
                #expect(set.standardError.contains("applied, but not stored: cannot write \(folder)/state/defaults.json"),
                        "\(set.standardError)")
                let get = try await camctl(["get", "virtual-0", "brightness"], socket: daemon.socketPath)
                #expect(get.lines == ["brightness: 42"])
            }
        }
    }
}
