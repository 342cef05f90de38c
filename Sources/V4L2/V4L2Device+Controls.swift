internal import CV4L2
import Glibc

extension V4L2Device {
    /// Every control camerad handles, in the driver's order: VIDIOC_QUERY_EXT_CTRL
    /// with V4L2_CTRL_FLAG_NEXT_CTRL, class headers, disabled controls and
    /// unhandled types (strings, arrays, compound) skipped; menus read with
    /// VIDIOC_QUERYMENU.
    public func controls() throws(V4L2Error) -> [V4L2Control] {
        var controls: [V4L2Control] = []
        var nextID = UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
        while true {
            var raw = v4l2_query_ext_ctrl()
            raw.id = nextID
            do throws(V4L2Error) {
                try ioctl(CV4L2_VIDIOC_QUERY_EXT_CTRL, "VIDIOC_QUERY_EXT_CTRL", &raw)
            } catch where error.code == EINVAL {
                break
            }
            nextID = raw.id | UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            guard V4L2Control.handledTypes.contains(raw.type), raw.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0,
                  raw.nr_of_dims == 0
            else { continue }
            var control = V4L2Control(
                id: raw.id, type: raw.type, name: string(fromCArray: raw.name), minimum: raw.minimum,
                maximum: raw.maximum, step: raw.step, defaultValue: raw.default_value, flags: raw.flags, menuItems: [])
            if raw.type == V4L2_CTRL_TYPE_MENU.rawValue || raw.type == V4L2_CTRL_TYPE_INTEGER_MENU.rawValue {
                control.menuItems = menuItems(of: control)
            }
            controls.append(control)
        }
        return controls
    }

    private func menuItems(of control: V4L2Control) -> [V4L2Control.MenuItem] {
        guard control.minimum >= 0, control.maximum >= control.minimum, control.maximum - control.minimum < 1024 else { return [] }
        let isIntegerMenu = control.type == V4L2_CTRL_TYPE_INTEGER_MENU.rawValue
        return (control.minimum...control.maximum).compactMap { index in
            var raw = v4l2_querymenu()
            raw.id = control.id
            raw.index = UInt32(index)
            // Drivers leave holes in menus: those indices fail with EINVAL.
            guard (try? ioctl(CV4L2_VIDIOC_QUERYMENU, "VIDIOC_QUERYMENU", &raw)) != nil else { return nil }
            return isIntegerMenu
                ? V4L2Control.MenuItem(index: index, name: "", value: raw.value)
                : V4L2Control.MenuItem(index: index, name: string(fromCArray: raw.name), value: 0)
        }
    }

    /// Current values (VIDIOC_G_EXT_CTRLS) of the readable controls among `controls`.
    /// A control that cannot be read now (the driver refuses it) is left out.
    public func values(of controls: [V4L2Control]) -> [UInt32: Int64] {
        let readable = controls.filter(\.isReadable)
        if let all = try? getValues(readable) { return all }
        var values: [UInt32: Int64] = [:]
        for control in readable {
            if let value = try? getValues([control]) { values.merge(value) { $1 } }
        }
        return values
    }

    private func getValues(_ controls: [V4L2Control]) throws(V4L2Error) -> [UInt32: Int64] {
        guard !controls.isEmpty else { return [:] }
        var items = controls.map { control in
            var item = v4l2_ext_control()
            item.id = control.id
            return item
        }
        try withExtControls(&items, CV4L2_VIDIOC_G_EXT_CTRLS, "VIDIOC_G_EXT_CTRLS")
        var values: [UInt32: Int64] = [:]
        for (control, item) in zip(controls, items) {
            values[control.id] = switch control.type {
            case V4L2_CTRL_TYPE_INTEGER64.rawValue: item.value64
            // A bitmask is a u32 in the same field.
            case V4L2_CTRL_TYPE_BITMASK.rawValue: Int64(UInt32(bitPattern: item.value))
            default: Int64(item.value)
            }
        }
        return values
    }

    /// Sets controls in one VIDIOC_S_EXT_CTRLS (the driver applies all or none).
    ///
    /// - Throws: ``V4L2Error`` naming the controls, with the driver's errno (ERANGE, EACCES...).
    public func setValues(_ values: [(control: V4L2Control, value: Int64)]) throws(V4L2Error) {
        guard !values.isEmpty else { return }
        var items = values.map { control, value in
            var item = v4l2_ext_control()
            item.id = control.id
            if control.type == V4L2_CTRL_TYPE_INTEGER64.rawValue {
                item.value64 = value
            } else {
                item.value = control.type == V4L2_CTRL_TYPE_BITMASK.rawValue
                    ? Int32(bitPattern: UInt32(truncatingIfNeeded: value)) : Int32(clamping: value)
            }
            return item
        }
        do throws(V4L2Error) {
            try withExtControls(&items, CV4L2_VIDIOC_S_EXT_CTRLS, "VIDIOC_S_EXT_CTRLS")
        } catch {
            let names = values.map(\.control.name).joined(separator: ", ")
            throw V4L2Error("VIDIOC_S_EXT_CTRLS (\(names))", path: path, code: error.code)
        }
    }

    private func withExtControls(_ items: inout [v4l2_ext_control], _ request: UInt, _ name: String) throws(V4L2Error) {
        let result = items.withUnsafeMutableBufferPointer { buffer in
            var controls = v4l2_ext_controls()
            controls.which = UInt32(V4L2_CTRL_WHICH_CUR_VAL)
            controls.count = UInt32(buffer.count)
            controls.controls = buffer.baseAddress
            return withUnsafeMutablePointer(to: &controls) { CV4L2_ioctl(descriptor, request, $0) }
        }
        guard result == 0 else { throw V4L2Error(name, path: path) }
    }

    /// Where the camera faces (V4L2_CID_CAMERA_ORIENTATION: 0 front, 1 back,
    /// 2 external); nil when the driver does not say.
    public func orientation(among controls: [V4L2Control]) -> Int64? {
        guard let control = controls.first(where: { $0.id == UInt32(V4L2_CID_CAMERA_ORIENTATION) }) else { return nil }
        return values(of: [control])[control.id]
    }
}
