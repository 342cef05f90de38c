import ArgumentParser
import CaptureKit

extension Camctl {
    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what camerad's fan-out engine does for a device: its streams and output variants.",
            discussion: "Each variant (pixel format, size, rotation, mirroring) is converted once per frame and shared by its streams."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "A uniqueID, an index from 'camctl list', or a /dev/video path.")
        var device: String

        @Flag(help: "Print one JSON object.")
        var json = false

        func run() async throws {
            global.apply()
            let statistics = try await CaptureDaemon.statistics(for: try await CaptureDevice.matching(device))
            if json {
                Output.line(try JSON.encode(StatisticsJSON(statistics)))
                return
            }
            Output.line("\(statistics.uniqueID): \(statistics.isCapturing ? "capturing" : "idle"), "
                + "\(statistics.framesCaptured) frames captured, \(statistics.streams) stream(s)")
            for variant in statistics.variants {
                let turn = variant.rotationDegrees == 0 ? "" : " rotated \(variant.rotationDegrees)°"
                Output.line("\tpool \(variant.poolID): '\(variant.pixelFormat)' \(variant.width)x\(variant.height)\(turn)"
                    + "\(variant.isMirrored ? " mirrored" : ""): \(variant.streams) stream(s), \(variant.conversions) conversions, "
                    + "\(variant.slotsInUse)/\(variant.slotCount) slots in use")
            }
        }
    }
}

/// What `camctl stats --json` prints.
struct StatisticsJSON: Encodable {
    struct Variant: Encodable {
        let poolID: UInt64
        let pixelFormat: String
        let width: Int
        let height: Int
        let rotationDegrees: Int
        let isMirrored: Bool
        let streams: Int
        let slotCount: Int
        let slotsInUse: Int
        let conversions: UInt64
    }

    let uniqueID: String
    let isCapturing: Bool
    let framesCaptured: UInt64
    let streams: Int
    let variants: [Variant]

    init(_ statistics: CaptureDaemon.DeviceStatistics) {
        uniqueID = statistics.uniqueID
        isCapturing = statistics.isCapturing
        framesCaptured = statistics.framesCaptured
        streams = statistics.streams
        variants = statistics.variants.map {
            Variant(poolID: $0.poolID, pixelFormat: $0.pixelFormat.description, width: $0.width, height: $0.height,
                    rotationDegrees: $0.rotationDegrees, isMirrored: $0.isMirrored, streams: $0.streams,
                    slotCount: $0.slotCount, slotsInUse: $0.slotsInUse, conversions: $0.conversions)
        }
    }
}
