import ArgumentParser
import CaptureKit

extension Camctl {
    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a device's controls, like 'v4l2-ctl -c'.",
            discussion: "All values are applied as one change: if one is refused, none is set."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "A uniqueID, an index from 'camctl list', or a /dev/video path.")
        var device: String

        @Option(name: .customLong("control"), help: ArgumentHelp(
            "A control by its name in 'camctl info', and its value (menus: the entry's index).", valueName: "name=value"))
        var controls: [ControlAssignment] = []

        func validate() throws {
            guard !controls.isEmpty else { throw ValidationError("nothing to set: give at least one --control name=value") }
        }

        func run() async throws {
            global.apply()
            let camera = try await CaptureDevice.matching(device)
            try await camera.setControls(controls.map { ($0.name, $0.value) })
            for assignment in controls {
                let value = camera.control(named: assignment.name)?.value ?? assignment.value
                Output.line("\(assignment.name): \(value)")
            }
        }
    }
}

/// `name=value`, with an integer value.
struct ControlAssignment: ExpressibleByArgument {
    let name: String
    let value: Int64

    init?(argument: String) {
        let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, let value = Int64(parts[1]) ?? Int64(hex: parts[1]) else { return nil }
        name = parts[0]
        self.value = value
    }
}

extension Int64 {
    /// "0x80002000".
    fileprivate init?(hex text: String) {
        guard text.lowercased().hasPrefix("0x"), let value = Int64(text.dropFirst(2), radix: 16) else { return nil }
        self = value
    }
}
