import ArgumentParser
import CaptureKit

extension Camctl {
    struct Virtual: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add and remove camerad's virtual cameras (for camerad's own user and root).",
            subcommands: [Add.self, Remove.self]
        )
    }
}

extension Camctl.Virtual {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a virtual camera and print its uniqueID."
        )

        @OptionGroup var global: GlobalOptions

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
        }

        private var parsedSize: (Int, Int)? {
            guard let size else { return nil }
            let parts = size.lowercased().split(separator: "x")
            guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]) else { return nil }
            return (width, height)
        }

        func run() async throws {
            global.apply()
            var options = CaptureDaemon.VirtualCameraOptions(unthrottled: unthrottled, staticPicture: staticPicture)
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
            abstract: "Remove a virtual camera, as if it were unplugged."
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
