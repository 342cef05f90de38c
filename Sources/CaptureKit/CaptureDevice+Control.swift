import CameraProtocol

extension CaptureDevice {
    /// One camera control, as `v4l2-ctl --list-ctrls-menus` shows it. AVFoundation
    /// has no such thing; Linux users expect every control by name.
    public struct Control: Hashable, Sendable, Identifiable {
        public enum Kind: String, Sendable {
            case integer = "int"
            case boolean = "bool"
            case menu
            case button
            case integer64 = "int64"
            case bitmask
            case integerMenu = "intmenu"
            case unknown
        }

        public struct MenuItem: Hashable, Sendable {
            public let index: Int64
            /// The entry's name (menu controls).
            public let name: String
            /// The entry's value (integer-menu controls).
            public let value: Int64
        }

        /// The V4L2 control id (V4L2_CID_*).
        public let id: UInt32
        /// v4l2-ctl's name: "white_balance_automatic".
        public let name: String
        /// The driver's name: "White Balance, Automatic".
        public let displayName: String
        public let kind: Kind
        public let minimum: Int64
        public let maximum: Int64
        public let step: UInt64
        public let defaultValue: Int64
        public let value: Int64
        public let menuItems: [MenuItem]
        /// V4L2_CTRL_FLAG_* bits.
        public let flags: UInt32

        /// Set while another control makes this one meaningless (e.g. exposure
        /// time while auto exposure is on).
        public var isInactive: Bool { flags & 0x0010 != 0 }
        public var isReadOnly: Bool { flags & 0x0004 != 0 }
        public var isWriteOnly: Bool { flags & 0x0040 != 0 }
        public var isDisabled: Bool { flags & 0x0001 != 0 }

        /// The V4L2 control class: the id's upper bits (0x00980000 is "User Controls").
        public var controlClass: UInt32 { id & 0x0FFF_0000 }

        init(_ control: Camerad_V1_Control) {
            id = control.id
            name = control.name
            displayName = control.displayName
            kind = switch control.type {
            case .integer: .integer
            case .boolean: .boolean
            case .menu: .menu
            case .button: .button
            case .integer64: .integer64
            case .bitmask: .bitmask
            case .integerMenu: .integerMenu
            default: .unknown
            }
            minimum = control.minimum
            maximum = control.maximum
            step = control.step
            defaultValue = control.defaultValue
            value = control.value
            menuItems = control.menuItems.map { MenuItem(index: $0.index, name: $0.name, value: $0.value) }
            flags = control.flags
        }
    }
}
