import ArgumentParser
import CaptureKit

extension Camctl {
    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one device: identity, formats (as v4l2-ctl --list-formats-ext), controls (as v4l2-ctl -L) and capabilities."
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @OptionGroup var target: DeviceSelection

        @Flag(help: "Print one JSON object.")
        var json = false

        func run() async throws {
            global.apply()
            let device = try await target.camera(deviceOption)
            if json {
                Output.line(try JSON.encode(DeviceDetails(device)))
            } else {
                Output.line(DeviceText.details(device))
            }
        }
    }
}
