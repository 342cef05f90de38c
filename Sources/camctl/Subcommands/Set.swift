import ArgumentParser
import CaptureKit
import Foundation

extension Camctl {
    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Configure a device: format, frame rate, focus, exposure, white balance, torch, zoom, controls; a microphone's input gain.",
            discussion: """
                Takes the device's configuration lock, applies everything as one change (if one \
                value is refused, none is set), and releases the lock. Fails at once when another \
                process holds the lock, naming it, unless --wait is given. Streams running on the \
                device keep their own output and are told of a new format.
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @OptionGroup var target: DeviceSelection

        @Option(help: ArgumentHelp("The active format, as in 'camctl info': YUYV:640x480.", valueName: "fourcc:WxH"))
        var format: FormatArgument?

        @Option(help: ArgumentHelp("Frames per second (of the active or the new format).", valueName: "n"))
        var fps: Double?

        @Option(help: ArgumentHelp("Focus mode: locked, autoFocus, continuousAutoFocus (or auto, continuous).", valueName: "mode"))
        var focus: ModeArgument<CaptureDevice.FocusMode>?

        @Option(help: ArgumentHelp(
            "Exposure mode: locked, continuousAutoExposure (or continuous), custom.", valueName: "mode"))
        var exposure: ModeArgument<CaptureDevice.ExposureMode>?

        @Option(name: .customLong("white-balance"), help: ArgumentHelp(
            "White balance mode: locked, autoWhiteBalance, continuousAutoWhiteBalance (or auto, continuous).",
            valueName: "mode"))
        var whiteBalance: ModeArgument<CaptureDevice.WhiteBalanceMode>?

        @Option(help: ArgumentHelp(
            "Torch: off, on, auto. A torch is the process's that lit it, as an app's on iOS: it goes off as camctl exits.",
            valueName: "mode"))
        var torch: ModeArgument<CaptureDevice.TorchMode>?

        @Option(help: ArgumentHelp("videoZoomFactor, from 1 to the device's maximum.", valueName: "x"))
        var zoom: Double?

        @Option(help: ArgumentHelp("Lock focus at this lens position, 0 (near) to 1 (far).", valueName: "0-1"))
        var lensPosition: Float?

        @Option(help: ArgumentHelp(
            "Custom exposure: this long, in seconds (0.01) or as a fraction (1/100); with --iso, or the ISO in force.",
            valueName: "seconds"))
        var exposureDuration: DurationArgument?

        @Option(help: ArgumentHelp("Custom exposure: this ISO; with --exposure-duration, or the duration in force.", valueName: "n"))
        var iso: Float?

        @Option(help: ArgumentHelp("Lock white balance at this temperature, in kelvin.", valueName: "K"))
        var whiteBalanceTemperature: Float?

        @Option(help: ArgumentHelp("Turn the torch on at this level, above 0 to 1 (it goes off as camctl exits).", valueName: "0-1"))
        var torchLevel: Float?

        @Option(name: [.customShort("c"), .customLong("control")], help: ArgumentHelp(
            "Controls by their names in 'camctl controls' and values (a menu's entry by its index or name), "
                + "as v4l2-ctl -c takes them: name=value[,name=value...]; repeatable.",
            valueName: "name=value,..."))
        var controlLists: [ControlAssignments] = []

        private var controls: [ControlAssignment] { controlLists.flatMap(\.assignments) }

        @Option(help: ArgumentHelp("A microphone's input gain, 0 to 1 over its capture volume (AVAudioSession.inputGain).", valueName: "0-1"))
        var inputGain: Float?

        @Flag(help: "Also store these settings as the device's defaults, applied whenever it connects.")
        var persist = false

        @Option(help: ArgumentHelp("Wait up to this long for another holder of the lock.", valueName: "seconds"))
        var wait: Double = 0

        func validate() throws {
            guard format != nil || fps != nil || focus != nil || exposure != nil || whiteBalance != nil || torch != nil
                || zoom != nil || !controls.isEmpty || lensPosition != nil || exposureDuration != nil || iso != nil
                || whiteBalanceTemperature != nil || torchLevel != nil || inputGain != nil
            else {
                throw ValidationError("nothing to set: give --format, --fps, --focus, --lens-position, --exposure, --exposure-duration, "
                                      + "--iso, --white-balance, --white-balance-temperature, --torch, --torch-level, --zoom, --control "
                                      + "or --input-gain")
            }
            if let inputGain, !(0...1).contains(inputGain) { throw ValidationError("--input-gain must be 0 to 1, not \(inputGain)") }
            if let fps, !(fps > 0 && fps <= 10_000) { throw ValidationError("--fps must be above 0, not \(fps)") }
            if wait < 0 || wait > 3600 { throw ValidationError("--wait must be 0 to 3600 seconds, not \(wait)") }
        }

        func run() async throws {
            global.apply()
            let camera = try await target.camera(deviceOption)
            var change = CaptureDevice.Configuration()
            if let format {
                // Fourccs in any case, as v4l2-ctl takes them (yuyv is YUYV).
                guard let found = camera.formats.first(where: {
                    $0.v4l2PixelFormat.description.lowercased() == format.fourcc.description.lowercased() && $0.dimensions == format.dimensions
                }) else {
                    throw CommandFailure("\(camera.uniqueID) has no format \(format); 'camctl info \(camera.uniqueID)' lists its formats")
                }
                change.activeFormat = found
            }
            if let fps {
                let ranges = (change.activeFormat ?? camera.activeFormat).videoSupportedFrameRateRanges
                change.activeVideoMinFrameDuration = Self.frameDuration(fps: fps, among: ranges)
            }
            change.focusMode = focus?.mode
            change.exposureMode = exposure?.mode
            change.whiteBalanceMode = whiteBalance?.mode
            change.torchMode = torch?.mode
            change.videoZoomFactor = zoom
            change.lensPosition = lensPosition
            if exposureDuration != nil || iso != nil {
                // Custom exposure takes both: what is not given stays as it is.
                change.exposureDuration = exposureDuration?.time ?? camera.exposureDuration
                change.iso = iso ?? camera.iso
            }
            change.whiteBalanceTemperature = whiteBalanceTemperature
            change.torchLevel = torchLevel
            change.controls = try controls.map { ($0.name, try $0.value(on: camera)) }
            change.inputGain = inputGain

            try await camera.lockForConfiguration(waitingUpTo: .milliseconds(Int(wait * 1000)))
            do {
                try await camera.configure(change, persist: persist)
            } catch {
                await camera.unlockForConfiguration()
                throw error
            }
            await camera.unlockForConfiguration()
            report(camera)
        }

        /// Prints what is in force now, for each thing asked.
        private func report(_ camera: CaptureDevice) {
            if format != nil || fps != nil {
                let active = camera.activeFormat
                let rate = 1 / camera.activeVideoMinFrameDuration.seconds
                Output.line("format: \(active.v4l2PixelFormat):\(active.dimensions) at \(String(format: "%g", rate)) fps")
            }
            if focus != nil { Output.line("focus: \(camera.reportedFocusMode.map { "\($0)" } ?? "none")") }
            if exposure != nil { Output.line("exposure: \(camera.reportedExposureMode.map { "\($0)" } ?? "none")") }
            if whiteBalance != nil { Output.line("white balance: \(camera.reportedWhiteBalanceMode.map { "\($0)" } ?? "none")") }
            if torch != nil { Output.line("torch: \(camera.torchMode)") }
            if zoom != nil { Output.line("zoom: \(String(format: "%g", camera.videoZoomFactor))") }
            if lensPosition != nil { Output.line("lens position: \(camera.lensPosition.map { "\($0)" } ?? "none")") }
            if exposureDuration != nil || iso != nil {
                Output.line("exposure: \(String(format: "%g", camera.exposureDuration.seconds)) s at ISO \(String(format: "%g", camera.iso))")
            }
            if whiteBalanceTemperature != nil { Output.line("white balance temperature: \(String(format: "%g", camera.whiteBalanceTemperature)) K") }
            if torchLevel != nil { Output.line("torch: \(camera.torchMode) at \(String(format: "%g", camera.torchLevel))") }
            for assignment in controls {
                guard let control = camera.control(named: assignment.name) else { continue }
                let entry = control.menuItems.first { $0.index == control.value }.map { " (\($0.name))" } ?? ""
                Output.line("\(assignment.name): \(control.value)\(entry)")
            }
            if inputGain != nil { Output.line("input gain: \(String(format: "%g", camera.inputGain))") }
            if persist { Output.line("stored as \(camera.uniqueID)'s defaults") }
        }

        /// The duration of `fps`: a listed discrete rate within 0.5% of it
        /// (29.97 finds 1001/30000), else 1/fps.
        static func frameDuration(fps: Double, among ranges: [FrameRateRange]) -> CMTime {
            if let listed = ranges.filter(\.isDiscrete).map(\.minFrameDuration)
                .first(where: { abs(1 / $0.seconds - fps) <= fps * 0.005 }) {
                return listed
            }
            if fps == fps.rounded() { return CMTime(value: 1, timescale: Int32(fps)) }
            return CMTime(value: 1000, timescale: Int32((fps * 1000).rounded()))
        }
    }
}

/// `YUYV:640x480`.
struct FormatArgument: ExpressibleByArgument, CustomStringConvertible {
    let fourcc: FourCharCode
    let dimensions: CMVideoDimensions

    init?(argument: String) {
        let parts = argument.split(separator: ":").map(String.init)
        let size = parts.count == 2 ? parts[1].lowercased().split(separator: "x").compactMap { Int32($0) } : []
        guard parts.count == 2, let fourcc = FourCharCode(parts[0].padding(toLength: 4, withPad: " ", startingAt: 0)),
              size.count == 2
        else { return nil }
        self.fourcc = fourcc
        dimensions = CMVideoDimensions(width: size[0], height: size[1])
    }

    var description: String { "\(fourcc):\(dimensions)" }
}

/// A duration in seconds, `0.01` or `1/100`.
struct DurationArgument: ExpressibleByArgument {
    let time: CMTime

    init?(argument: String) {
        let parts = argument.split(separator: "/").map(String.init)
        if parts.count == 2, let numerator = Int64(parts[0]), let denominator = Int32(parts[1]), numerator > 0, denominator > 0 {
            time = CMTime(value: numerator, timescale: denominator)
        } else if parts.count == 1, let seconds = Double(argument), seconds > 0, seconds < 3600 {
            time = CMTime(value: Int64((seconds * 1_000_000).rounded()), timescale: 1_000_000)
        } else {
            return nil
        }
    }
}

/// An AVFoundation mode by its case name, or a short alias.
struct ModeArgument<Mode: CaseIterable & Sendable>: ExpressibleByArgument, CustomStringConvertible {
    let mode: Mode

    var description: String { String(describing: mode) }

    init?(argument: String) {
        let aliases = ["auto": ["autoFocus", "autoExpose", "autoWhiteBalance", "auto"],
                       "continuous": ["continuousAutoFocus", "continuousAutoExposure", "continuousAutoWhiteBalance"]]
        let names = [argument] + (aliases[argument] ?? [])
        guard let mode = Mode.allCases.first(where: { names.contains(String(describing: $0)) }) else { return nil }
        self.mode = mode
    }

    static var allValueStrings: [String] { Mode.allCases.map { String(describing: $0) } }
}

/// `name=value`: an integer (decimal or 0x hex), or a menu entry's name.
struct ControlAssignment {
    let name: String
    let text: String

    init?(_ argument: Substring) {
        let parts = argument.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        (name, text) = (parts[0], parts[1])
    }

    /// The value to set: the number given, or the index of the menu entry named
    /// (case and spaces aside, as 'camctl controls' prints them).
    func value(on camera: CaptureDevice) throws -> Int64 {
        if let number = Int64(text) ?? Int64(hex: text) { return number }
        guard let control = camera.control(named: name) else {
            throw CommandFailure("\(camera.uniqueID) has no control \(name); 'camctl controls \(camera.uniqueID)' lists them")
        }
        func key(_ name: String) -> String { name.lowercased().filter { !$0.isWhitespace && $0 != "_" && $0 != "-" } }
        guard let entry = control.menuItems.first(where: { key($0.name) == key(text) }) else {
            let names = control.menuItems.map { "\($0.index) \($0.name)" }.joined(separator: ", ")
            throw CommandFailure("\(name) takes a number" + (names.isEmpty ? "" : " or one of its menu entries: \(names)") + ", not \(text)")
        }
        return entry.index
    }
}

/// v4l2-ctl's `-c name=value,name=value`.
struct ControlAssignments: ExpressibleByArgument {
    let assignments: [ControlAssignment]

    init?(argument: String) {
        let assignments = argument.split(separator: ",").map(ControlAssignment.init)
        guard !assignments.isEmpty, !assignments.contains(where: { $0 == nil }) else { return nil }
        self.assignments = assignments.compactMap { $0 }
    }
}

extension Int64 {
    /// "0x80002000".
    fileprivate init?(hex text: String) {
        guard text.lowercased().hasPrefix("0x"), let value = Int64(text.dropFirst(2), radix: 16) else { return nil }
        self = value
    }
}
