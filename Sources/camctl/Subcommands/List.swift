import ArgumentParser
import CaptureKit

extension Camctl {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the devices.",
            discussion: "One line per device: index, uniqueID, name, position, type, and whether it is connected."
        )

        @OptionGroup var global: GlobalOptions

        @Flag(help: "Print a JSON array of objects with uniqueID, modelID, localizedName, position, deviceType and isConnected.")
        var json = false

        func run() async throws {
            global.apply()
            let devices = try await CaptureDevice.devices()
            if json {
                Output.line(try JSON.encode(devices.map(DeviceSummary.init)))
                return
            }
            guard !devices.isEmpty else {
                Output.line("no devices")
                return
            }
            for (index, device) in devices.enumerated() {
                Output.line(DeviceText.listLine(index: index, device: device))
            }
        }
    }
}
