import CameraProtocol

/// One control's new value, checked against the control's type, range and flags.
struct ControlChange: Sendable {
    let control: CameraControl
    let value: Int64

    /// A request's values, each found (by id, else by name) among the device's
    /// controls and checked.
    ///
    /// - Throws: `INVALID_ARGUMENT` naming the control and what it allows.
    static func resolve(_ values: [ControlValue], among controls: [CameraControl], of uniqueID: String) throws -> [ControlChange] {
        guard !values.isEmpty else {
            throw CameraError(.invalidArgument, "no control values given; name at least one, e.g. brightness=128")
        }
        return try values.map { requested in
            let found = controls.first { control in
                switch requested.key {
                case .id(let id): control.id == id
                case .name(let name): control.name == name
                }
            }
            guard let control = found else {
                let name = switch requested.key {
                case .id(let id): "0x" + String(id.rawValue, radix: 16)
                case .name(let name): "'\(name.echoed)'"
                }
                throw CameraError(.invalidArgument,
                                  "\(uniqueID) has no control \(name); 'camctl info \(uniqueID)' lists its controls")
            }
            try check(requested.value, for: control)
            return ControlChange(control: control, value: requested.value)
        }
    }

    private static func check(_ value: Int64, for control: CameraControl) throws {
        if control.flags.contains(.readOnly) {
            throw CameraError(.invalidArgument, "\(control.name) is read-only")
        }
        switch control.kind {
        case .boolean:
            guard value == 0 || value == 1 else {
                throw CameraError(.invalidArgument, "\(control.name) is a boolean: 0 or 1, not \(value)")
            }
        case .menu, .integerMenu:
            guard control.menuItems.contains(where: { $0.index == value }) else {
                let entries = control.menuItems.map { item in
                    "\(item.index) (\(control.kind == .menu ? item.name : String(item.value)))"
                }
                throw CameraError(.invalidArgument,
                                  "\(control.name) must be one of \(entries.joined(separator: ", ")), not \(value)")
            }
        case .bitmask:
            guard value >= 0, value & ~control.maximum == 0 else {
                throw CameraError(.invalidArgument,
                                  "\(control.name) is a bitmask within 0x\(String(control.maximum, radix: 16)), not 0x\(String(value, radix: 16))")
            }
        case .button:
            break
        case .integer, .integer64:
            let step = Int64(clamping: max(1, control.step))
            guard (control.minimum...control.maximum).contains(value), (value - control.minimum) % step == 0 else {
                throw CameraError(.invalidArgument,
                                  "\(control.name) must be \(control.minimum) to \(control.maximum)"
                                      + (step > 1 ? " in steps of \(step)" : "") + ", not \(value)")
            }
        }
    }
}
