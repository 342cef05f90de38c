import ArgumentParser
import CaptureKit

extension Camctl {
    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what camerad's fan-out engine does for a device: its streams and output variants.",
            discussion: """
                Each variant (pixel format, size, rotation, mirroring) is converted once per frame and shared by its \
                streams. The device's own format is not converted: its frames are shared in the device's buffers \
                ("shared"), and copied only when the device runs short of buffers or cannot share them ("copied", \
                zero in a steady state).
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @OptionGroup var target: DeviceSelection

        @Flag(help: "Print one JSON object.")
        var json = false

        func run() async throws {
            global.apply()
            let statistics = try await CaptureDaemon.statistics(for: try await target.camera(deviceOption))
            if json {
                Output.line(try JSON.encode(statistics))
                return
            }
            Output.line("\(statistics.uniqueID): \(statistics.isCapturing ? "capturing" : "idle"), "
                + "\(statistics.framesCaptured) frames captured, \(statistics.streams) stream(s)")
            for variant in statistics.variants {
                let turn = variant.rotationDegrees == 0 ? "" : " rotated \(variant.rotationDegrees)°"
                Output.line("\tpool \(variant.poolID): '\(variant.pixelFormat)' \(variant.width)x\(variant.height)\(turn)"
                    + "\(variant.isMirrored ? " mirrored" : ""): \(variant.streams) stream(s), \(variant.conversions) conversions, "
                    + "\(variant.framesShared) shared, \(variant.framesCopied) copied, \(variant.framesSkipped) skipped, "
                    + "\(variant.slotsInUse)/\(variant.slotCount) slots in use")
            }
        }
    }
}
