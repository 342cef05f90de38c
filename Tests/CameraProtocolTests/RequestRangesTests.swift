import CameraProtocol
import Foundation
import Testing

/// The ranges of the numbers a request carries (`RequestRanges.swift`), as
/// `Protos/README.md` lists them, and the errors past them.
@Suite struct RequestRangesTests {
    /// Each range narrower than its field's type, and each real's, is a row of the README's table.
    @Test func protosREADMEListsEveryRange() throws {
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Protos/README.md"), encoding: .utf8)
        let whole: [ClosedRange<Int128>] = [Int128(Int32.min)...Int128(Int32.max), 0...Int128(UInt32.max),
                                             Int128(Int64.min)...Int128(Int64.max), 0...Int128(UInt64.max)]
        var missing: [String] = []
        for type in checkedMessageTypes {
            let message = type.protoMessageName.split(separator: ".").last!
            for (name, bounds, meaning) in type.fieldBounds {
                let range: String
                switch bounds {
                case .integer(let integers) where !whole.contains(integers): range = "\(integers.lowerBound) to \(integers.upperBound)"
                case .real(let reals): range = "\(reals.lowerBound) to \(reals.upperBound)"
                default: continue
                }
                let row = "| `\(message).\(name)` | \(range) | \(meaning) |"
                if !readme.contains(row) { missing.append(row) }
            }
        }
        #expect(missing.isEmpty, "rows missing from Protos/README.md:\n\(missing.joined(separator: "\n"))")
    }

    @Test func aNumberPastItsRangeIsRefusedNamingTheFieldAndTheRange() throws {
        var request = Camerad_V1_RecordRequest()
        request.start.video.maxKeyFrameInterval = 2_147_483_648
        #expect(throws: RPCError(.invalidArgument,
                                 "start.video.max_key_frame_interval 2147483648 is out of range; use 0 to 1000000 (frames; 0 for the encoder's choice)")) {
            try request.checkFields()
        }
        var configuration = Camerad_V1_ConfigureDeviceRequest()
        configuration.configuration.controls = [Camerad_V1_ControlValue(), Camerad_V1_ControlValue()]
        configuration.configuration.focusPointOfInterest.x = .nan
        #expect(throws: RPCError.self) { try configuration.checkFields() }
        configuration.configuration.focusPointOfInterest.x = 0.5
        try configuration.checkFields()
        var filter = Camerad_V1_ListDevicesRequest()
        filter.filter.deviceTypes = [.external, .UNRECOGNIZED(9)]
        #expect { try filter.checkFields() } throws: { ($0 as? RPCError)?.message.hasPrefix("filter.device_types 9 is unknown to this camerad; use 0 (unspecified), 1") == true }
    }
}
