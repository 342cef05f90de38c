import CameraTestSupport
import Foundation
import Testing

/// `camctl set --control`, on a virtual camera (the vivid VM tests do the same
/// against a real driver, read back with v4l2-ctl).
@Suite struct SetControlsTests {
    static func value(of name: String, on device: String, socket: String) async throws -> Int? {
        let info = try await camctl(["info", device, "--json"], socket: socket)
        let json = try JSONSerialization.jsonObject(with: Data(info.standardOutput.utf8)) as? [String: Any]
        let controls = json?["controls"] as? [[String: Any]] ?? []
        return controls.first { $0["name"] as? String == name }?["value"] as? Int
    }

    @Test func valuesAreSetAllOrNoneAndReadBack() async throws {
        try await withRunningDaemon { daemon in
            let set = try await camctl(["set", "virtual-0", "--control", "brightness=200", "--control", "horizontal_flip=1"],
                                       socket: daemon.socketPath)
            #expect(set.status == 0, "\(set.standardError)")
            #expect(set.lines == ["brightness: 200", "horizontal_flip: 1"])
            #expect(try await Self.value(of: "brightness", on: "virtual-0", socket: daemon.socketPath) == 200)
            #expect(try await Self.value(of: "horizontal_flip", on: "virtual-0", socket: daemon.socketPath) == 1)

            // One bad value: nothing changes.
            let refused = try await camctl(["set", "virtual-0", "--control", "contrast=10", "--control", "brightness=300"],
                                           socket: daemon.socketPath)
            #expect(refused.status == 1)
            #expect(refused.standardError == "camctl: brightness must be 0 to 255, not 300\n")
            #expect(try await Self.value(of: "contrast", on: "virtual-0", socket: daemon.socketPath) == 128)
        }
    }

    /// Issue 16's ninth point, in part: a v4l2-ctl user's habits — `-d DEVICE`,
    /// `-c a=1,b=2`, menu entries by name, fourccs in any case, and the first
    /// device when none is named.
    @Test func setTakesV4l2CtlHabits() async throws {
        try await withRunningDaemon(virtualCameras: 2) { daemon in
            let set = try await camctl(["set", "-d", "virtual-1", "-c", "brightness=90,power_line_frequency=60hz", "-c", "contrast=20"],
                                       socket: daemon.socketPath)
            #expect(set.status == 0, "\(set.standardError)")
            #expect(set.lines == ["brightness: 90", "power_line_frequency: 2 (60 Hz)", "contrast: 20"])
            #expect(try await Self.value(of: "power_line_frequency", on: "virtual-1", socket: daemon.socketPath) == 2)

            let first = try await camctl(["set", "-c", "brightness=10"], socket: daemon.socketPath)
            #expect(first.status == 0, "\(first.standardError)")
            #expect(try await Self.value(of: "brightness", on: "virtual-0", socket: daemon.socketPath) == 10, "no device named: the first")
            #expect(try await Self.value(of: "brightness", on: "virtual-1", socket: daemon.socketPath) == 90)

            let format = try await camctl(["set", "virtual-0", "--format", "nv12:1280x720"], socket: daemon.socketPath)
            #expect(format.status == 0, "\(format.standardError)")
            #expect(format.lines.first?.hasPrefix("format: NV12:1280x720") == true, "\(format.lines)")

            let badEntry = try await camctl(["set", "-c", "power_line_frequency=70hz"], socket: daemon.socketPath)
            #expect(badEntry.status == 1)
            #expect(badEntry.standardError.contains("0 Disabled, 1 50 Hz, 2 60 Hz, not 70hz"), "\(badEntry.standardError)")

            let twice = try await camctl(["set", "virtual-0", "-d", "virtual-1", "-c", "brightness=1"], socket: daemon.socketPath)
            #expect(twice.status == 2, "the device named twice, differently")
        }
    }

    @Test func unknownControlsMenusAndReadOnlyOnesAreRefusedWithWhatIsAllowed() async throws {
        try await withRunningDaemon { daemon in
            let unknown = try await camctl(["set", "virtual-0", "--control", "sharpness=3"], socket: daemon.socketPath)
            #expect(unknown.status == 1)
            #expect(unknown.standardError.contains("virtual-0 has no control 'sharpness'; 'camctl info virtual-0' lists its controls"))

            let menu = try await camctl(["set", "virtual-0", "--control", "power_line_frequency=7"], socket: daemon.socketPath)
            #expect(menu.status == 1)
            #expect(menu.standardError.contains("must be one of 0 (Disabled), 1 (50 Hz), 2 (60 Hz), not 7"))

            let stepped = try await camctl(["set", "virtual-0", "--control", "white_balance_temperature=4605"],
                                           socket: daemon.socketPath)
            #expect(stepped.standardError.contains("must be 2800 to 6500 in steps of 10, not 4605"))

            let usage = try await camctl(["set", "virtual-0", "--control", "brightness"], socket: daemon.socketPath)
            #expect(usage.status == 2, "name=value is required")
        }
    }
}
