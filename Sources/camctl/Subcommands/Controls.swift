import ArgumentParser
import CaptureKit

extension Camctl {
    struct Controls: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a device's controls with type, range, step, default, value, menu entries and flags, as 'v4l2-ctl -L'."
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @OptionGroup var target: DeviceSelection

        @Flag(help: "Print one JSON array.")
        var json = false

        func run() async throws {
            global.apply()
            let camera = try await target.camera(deviceOption)
            if json {
                Output.line(try JSON.encode(camera.controls.map(DeviceDetails.Control.init)))
            } else {
                Output.line(DeviceText.controls(camera.controls).trimmingCharacters(in: .newlines))
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one control's value, as 'v4l2-ctl -C NAME', or one AVFoundation-named setting.",
            discussion: """
                NAME is a control from 'camctl controls' (brightness), or one of: \
                \(Setting.allCases.map(\.rawValue).joined(separator: ", ")).
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        // Not DeviceSelection: an optional DEVICE before the NAME it needs would take
        // the NAME of `camctl get -d 0 brightness`.

        @Argument(help: ArgumentHelp(
            "[DEVICE] NAME: the device (default: -d's, else the first) and a control or setting name.", valueName: "device-and-name"))
        var words: [String] = []

        func validate() throws {
            guard (1...2).contains(words.count) else { throw ValidationError("give a NAME, after the DEVICE if you name one") }
            _ = try DeviceSelection.name(words.count == 2 ? words[0] : nil, deviceOption)
        }

        private var name: String { words[words.count - 1] }

        enum Setting: String, CaseIterable {
            case activeFormat, activeVideoMinFrameDuration, activeVideoMaxFrameDuration, focusMode, lensPosition
            case exposureMode, exposureDuration, iso, whiteBalanceMode, whiteBalanceTemperature, torchMode, torchLevel
            case videoZoomFactor, configurationLockHolder
        }

        func run() async throws {
            global.apply()
            let camera = try await CaptureDevice.matching(try DeviceSelection.name(words.count == 2 ? words[0] : nil, deviceOption))
            if let control = camera.control(named: name) {
                Output.line("\(control.name): \(control.value)")
                return
            }
            guard let setting = Setting(rawValue: name) else {
                throw CommandFailure("\(camera.uniqueID) has no control or setting '\(name)'; 'camctl controls \(camera.uniqueID)' lists its controls")
            }
            func time(_ time: CMTime) -> String { "\(time.value)/\(time.timescale)" }
            let value: String = switch setting {
            case .activeFormat: camera.formats.isEmpty ? "none" : "\(camera.activeFormat.v4l2PixelFormat):\(camera.activeFormat.dimensions)"
            case .activeVideoMinFrameDuration: time(camera.activeVideoMinFrameDuration)
            case .activeVideoMaxFrameDuration: time(camera.activeVideoMaxFrameDuration)
            case .focusMode: camera.reportedFocusMode.map { "\($0)" } ?? "none"
            case .lensPosition: camera.lensPosition.map { "\($0)" } ?? "none"
            case .exposureMode: camera.reportedExposureMode.map { "\($0)" } ?? "none"
            case .exposureDuration: time(camera.exposureDuration)
            case .iso: "\(camera.iso)"
            case .whiteBalanceMode: camera.reportedWhiteBalanceMode.map { "\($0)" } ?? "none"
            case .whiteBalanceTemperature: "\(camera.whiteBalanceTemperature)"
            case .torchMode: "\(camera.torchMode)"
            case .torchLevel: "\(camera.torchLevel)"
            case .videoZoomFactor: "\(camera.videoZoomFactor)"
            case .configurationLockHolder: camera.configurationLockHolder?.description ?? "none"
            }
            Output.line("\(setting.rawValue): \(value)")
        }
    }

    struct Lock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Hold a device's configuration lock, so that no other process changes it.",
            discussion: """
                Prints 'locked DEVICE' once it holds the lock, then holds it until --hold \
                seconds pass or camctl is interrupted (SIGINT, SIGTERM); the lock also ends if \
                camctl is killed. When another process holds the lock, fails naming it.
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @OptionGroup var target: DeviceSelection

        @Option(help: ArgumentHelp("Release the lock after this long (default: when interrupted).", valueName: "seconds"))
        var hold: Double?

        @Option(help: ArgumentHelp("Wait up to this long for another holder of the lock.", valueName: "seconds"))
        var wait: Double = 0

        func validate() throws {
            if let hold, hold < 0 { throw ValidationError("--hold must be 0 or more seconds, not \(hold)") }
            if wait < 0 || wait > 3600 { throw ValidationError("--wait must be 0 to 3600 seconds, not \(wait)") }
        }

        func run() async throws {
            global.apply()
            let camera = try await target.camera(deviceOption)
            try await camera.lockForConfiguration(waitingUpTo: .milliseconds(Int(wait * 1000)))
            // A signal before this kills camctl, which ends the lock with the connection.
            let interruption = Interruption()
            Output.line("locked \(camera.uniqueID)")
            if let hold {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { try? await Task.sleep(for: .milliseconds(Int(hold * 1000))) }
                    group.addTask { await interruption.wait() }
                    await group.next()
                    group.cancelAll()
                }
            } else {
                await interruption.wait()
            }
            await camera.unlockForConfiguration()
            Output.line("unlocked \(camera.uniqueID)")
        }
    }
}
