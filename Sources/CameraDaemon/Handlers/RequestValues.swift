import CameraProtocol
import SwiftProtobuf

/// One rule for the enums and fractions a request carries, wherever they come:
/// a value this camerad does not know, and a fraction that is no positive
/// number of seconds, are refused with INVALID_ARGUMENT saying what it takes —
/// never taken as a default. (An unset fraction is unset; 0 is an enum's own
/// "unspecified" where it has one.)
extension SwiftProtobuf.Enum where Self: CaseIterable {
    /// This value, when this camerad knows it.
    ///
    /// - Throws: `INVALID_ARGUMENT` naming the values it knows.
    func known(_ field: String) throws(CameraError) -> Self {
        guard Self.allCases.contains(self) else { throw Self.unknown(rawValue, field) }
        return self
    }

    /// The error for `raw`, a value of `field` this camerad does not know.
    static func unknown(_ raw: Int, _ field: String) -> CameraError {
        CameraError(.invalidArgument,
                    "\(field) \(raw) is unknown to this camerad; use \(acceptedValues(allCases.map { "\($0.rawValue) (\($0))" }))")
    }
}

/// The values an error names as accepted, as a sentence says them: "a, b or c".
func acceptedValues(_ names: [String]) -> String {
    names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
}

extension FrameDuration {
    /// A duration a request gives in `field`.
    ///
    /// - Throws: `INVALID_ARGUMENT` when the numerator or the denominator is 0.
    init(_ fraction: Camerad_V1_Fraction, field: String) throws(CameraError) {
        guard fraction.numerator > 0, fraction.denominator > 0 else {
            throw CameraError(.invalidArgument,
                              "\(field) \(fraction.numerator)/\(fraction.denominator) is not a duration; give a numerator and a denominator above 0 (1/30 s), or leave it unset")
        }
        self.init(numerator: fraction.numerator, denominator: fraction.denominator)
    }
}

extension Camerad_V1_DeviceFilter {
    /// Checks the filter's values (ListDevices).
    ///
    /// - Throws: `INVALID_ARGUMENT` for a device type, media type or position this camerad does not know.
    func validate() throws(CameraError) {
        for type in deviceTypes { _ = try type.known("device_types") }
        _ = try mediaType.known("media_type")
        _ = try position.known("position")
    }
}
