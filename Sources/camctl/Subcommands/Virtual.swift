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

        func validate() throws {
            if let index, !(0..<64).contains(index) {
                throw ValidationError("--index must be 0 to 63, not \(index)")
            }
        }

        func run() async throws {
            global.apply()
            let device = try await CaptureDaemon.addVirtualCamera(index: index, localizedName: name ?? "", position: position.position)
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
