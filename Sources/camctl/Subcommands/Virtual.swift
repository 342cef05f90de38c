import ArgumentParser
import CaptureKit

extension Camctl {
    struct Virtual: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add and remove camerad's virtual cameras and microphones (for camerad's own user and root).",
            subcommands: [Add.self, Remove.self]
        )
    }
}

extension Camctl.Virtual {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a virtual camera (or with --audio a microphone) and print its uniqueID."
        )

        @OptionGroup var global: GlobalOptions

        @Flag(help: "Add a virtual microphone, virtual-microphone-<index>: 48 kHz stereo, a tone marked with each sample's position.")
        var audio = false

        @Option(help: ArgumentHelp("With --audio: hear a plain 1 kHz tone of this peak (0 to 1) instead, a known level.", valueName: "amplitude"))
        var tone: Float?

        @Flag(help: ArgumentHelp("A/V sync marks: flash (a camera) or click (with --audio) at every whole second of the monotonic clock.",
                                 discussion: "A camera and a microphone both added with it mark the same instants: a recording of the two shows its sync."))
        var syncMarks = false

        @Option(help: ArgumentHelp("With --audio: its clock runs this many parts per million fast (below 0: slow) of the monotonic clock, as a sound card's does (-10000 to 10000; default 0).",
                                   valueName: "ppm"))
        var driftPpm: Int?

        @Option(help: "Make it virtual-<index> (0-63); default: the lowest free index.")
        var index: Int?

        @Option(help: "Its localizedName.")
        var name: String?

        @Option(help: "Which way it faces.")
        var position: PositionArgument = .unspecified

        @Option(help: ArgumentHelp("The mode it starts in: YUYV, NV12 or MJPG, at --size (default YUYV).", valueName: "fourcc"))
        var format: String?

        @Option(help: ArgumentHelp("640x480, 1280x720, 1920x1080, or a size of its own up to 4096x2160 (default 640x480).", valueName: "WxH"))
        var size: String?

        @Option(help: "Frames per second (default 30; 60 at most, 30 from 1080 lines up).")
        var fps: Double?

        @Flag(help: "Make frames as fast as possible, ignoring --fps (for benchmarks).")
        var unthrottled = false

        @Flag(help: "Draw the picture once and only the frame stamps after (for benchmarks).")
        var staticPicture = false

        func validate() throws {
            if let index, !(0..<64).contains(index) {
                throw ValidationError("--index must be 0 to 63, not \(index)")
            }
            if let format, FourCharCode(format.uppercased()) == nil {
                throw ValidationError("--format must be a four-character code such as NV12")
            }
            if size != nil && parsedSize == nil { throw ValidationError("--size must be WxH, such as 1280x720") }
            if let fps, !(fps > 0 && fps <= 1000) { throw ValidationError("--fps must be between 0 and 1000") }
            if let tone, !(tone > 0 && tone <= 1) { throw ValidationError("--tone must be above 0 and at most 1, not \(tone)") }
            if tone != nil && !audio { throw ValidationError("--tone is a microphone's: add --audio") }
            if tone != nil && syncMarks { throw ValidationError("--tone and --sync-marks are two signals: ask for one") }
            if let driftPpm, !(-10_000...10_000).contains(driftPpm) {
                throw ValidationError("--drift-ppm must be -10000 to 10000, not \(driftPpm)")
            }
            if driftPpm != nil && !audio { throw ValidationError("--drift-ppm is a microphone's: add --audio") }
            if audio && (format != nil || size != nil || fps != nil || unthrottled || staticPicture || position != .unspecified) {
                throw ValidationError("--audio takes --index, --name, --tone, --sync-marks and --drift-ppm; --format, --size, --fps, --position and the benchmark flags are a camera's")
            }
        }

        private var parsedSize: (Int, Int)? {
            guard let size else { return nil }
            let parts = size.lowercased().split(separator: "x")
            guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]) else { return nil }
            return (width, height)
        }

        func run() async throws {
            global.apply()
            if audio {
                let device = try await CaptureDaemon.addVirtualMicrophone(index: index, localizedName: name ?? "", toneAmplitude: tone,
                                                                          syncMarks: syncMarks, driftPPM: driftPpm ?? 0)
                Output.line(device.uniqueID)
                return
            }
            var options = CaptureDaemon.VirtualCameraOptions(unthrottled: unthrottled, staticPicture: staticPicture, syncMarks: syncMarks)
            options.pixelFormat = format.flatMap { FourCharCode($0.uppercased()) }
            options.width = parsedSize?.0
            options.height = parsedSize?.1
            options.frameDuration = fps.map { CMTime(value: 1000, timescale: Int32(($0 * 1000).rounded())) }
            let device = try await CaptureDaemon.addVirtualCamera(
                index: index, localizedName: name ?? "", position: position.position, options: options)
            Output.line(device.uniqueID)
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a virtual camera or microphone, as if it were unplugged."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The virtual camera's uniqueID (virtual-1).")
        var device: String

        func run() async throws {
            global.apply()
            try await CaptureDaemon.removeVirtualCamera(uniqueID: device)
        }
    }
}

/// A device position as camctl spells it.
enum PositionArgument: String, CaseIterable, ExpressibleByArgument {
    case front
    case back
    case unspecified

    var position: CaptureDevice.Position {
        switch self {
        case .front: .front
        case .back: .back
        case .unspecified: .unspecified
        }
    }
}
