/// One camera control, as `v4l2-ctl --list-ctrls-menus` shows it, in camerad's
/// namespace (``ControlID``). Backends list their controls as these; the
/// protocol's `Control` is made from them at the handler edge.
struct CameraControl: Equatable, Sendable {
    /// V4L2's control types camerad handles (the numbers are V4L2's).
    enum Kind: UInt32, Equatable, Sendable {
        case integer = 1
        case boolean = 2
        case menu = 3
        case button = 4
        case integer64 = 5
        case bitmask = 8
        case integerMenu = 9
    }

    /// One entry of a menu (its name) or integer menu (its value).
    struct MenuItem: Equatable, Sendable {
        let index: Int64
        let name: String
        let value: Int64
    }

    let id: ControlID
    /// v4l2-ctl's name: the display name lower-cased, non-alphanumerics as "_"
    /// ("white_balance_automatic").
    let name: String
    /// The driver's name ("White Balance, Automatic").
    let displayName: String
    let kind: Kind
    let minimum: Int64
    let maximum: Int64
    let step: UInt64
    let defaultValue: Int64
    /// The current value; buttons have none.
    var value: Int64
    let menuItems: [MenuItem]
    var flags: ControlFlags

    init(id: ControlID, displayName: String, kind: Kind, minimum: Int64, maximum: Int64, step: UInt64,
         defaultValue: Int64, value: Int64, menuItems: [MenuItem] = [], flags: ControlFlags = []) {
        self.id = id
        name = controlName(fromDisplayName: displayName)
        self.displayName = displayName
        self.kind = kind
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.value = value
        self.menuItems = menuItems
        self.flags = flags
    }
}

extension Array where Element == CameraControl {
    /// The first control with each id.
    var byID: [ControlID: CameraControl] {
        Dictionary(map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }
}
