import CaptureKit
import Foundation

/// camctl's text output. Formats follow `v4l2-ctl --list-formats-ext`, controls
/// `v4l2-ctl --list-ctrls-menus`, so Linux users read them at a glance.
enum DeviceText {
    /// `0  virtual-0  "Virtual Camera 0"  front  builtInWideAngleCamera  connected`
    static func listLine(index: Int, device: CaptureDevice) -> String {
        let type = device.deviceType.description
        let state = device.isConnected ? (device.unavailableReason.map { "busy: \($0)" } ?? "connected") : "disconnected"
        let path = device.devicePath.map { "  \($0)" } ?? ""
        return "\(index)  \(device.uniqueID)  \"\(device.localizedName)\"  \(device.position)  \(type)  \(state)\(path)"
    }

    /// `connected virtual-2 "Virtual Camera 2" unspecified`
    static func eventLine(_ event: CaptureDevice.Event) -> String {
        "\(event.kind.rawValue) \(event.device.uniqueID) \"\(event.device.localizedName)\" \(event.device.position)"
    }

    static func details(_ device: CaptureDevice) -> String {
        var lines: [String] = []
        lines.append("Device: \(device.localizedName)")
        lines.append("\tUnique ID      : \(device.uniqueID)")
        lines.append("\tModel ID       : \(device.modelID)")
        lines.append("\tManufacturer   : \(device.manufacturer)")
        lines.append("\tPosition       : \(device.position)")
        lines.append("\tDevice type    : \(device.deviceType)")
        lines.append("\tConnected      : \(device.isConnected ? "yes" : "no")")
        if let reason = device.unavailableReason { lines.append("\tUnavailable    : \(reason)") }
        lines.append("\tPath           : \(device.devicePath ?? "(virtual)")")
        let linked = device.linkedDeviceUniqueIDs
        if !linked.isEmpty { lines.append("\tLinked to      : \(linked.joined(separator: ", "))") }
        if case let active = device.activeFormat, device.formats.contains(active) {
            let duration = device.activeVideoMinFrameDuration
            let rate = duration.isValid ? " at \(fixed(1 / duration.seconds)) fps" : ""
            lines.append("\tActive format  : '\(active.v4l2PixelFormat)' \(active.dimensions)\(rate)")
        }
        lines.append("")
        if let audio = device.audioCapabilities {
            lines.append(hardwareParameters(audio))
            lines.append("Input gain: " + (device.isInputGainSettable ? fixed(Double(device.inputGain), 2) + " (0 to 1; camctl set --input-gain)"
                                                                     : "none to set (no capture volume)"))
            return lines.joined(separator: "\n")
        }
        lines.append(formats(device.formats))
        lines.append(controls(device.controls))
        lines.append(capabilities(device))
        return lines.joined(separator: "\n")
    }

    /// A microphone's own format as `arecord --dump-hw-params` shows the mode
    /// it is opened in, then what listeners may ask of camerad.
    static func hardwareParameters(_ audio: AudioCapabilities) -> String {
        let native = audio.native
        let periodTime = native.sampleRate > 0 ? native.framesPerPeriod * 1_000_000 / native.sampleRate : 0
        return [
            "HW Params:",
            "\tACCESS:      RW_INTERLEAVED",
            "\tFORMAT:      \(native.sampleFormat.alsaName)",
            "\tSAMPLE_BITS: \(native.sampleFormat.bytes * 8)",
            "\tFRAME_BITS:  \(native.bytesPerFrame * 8)",
            "\tCHANNELS:    \(native.channels)",
            "\tRATE:        \(native.sampleRate)",
            "\tPERIOD_TIME: \(periodTime)",
            "\tPERIOD_SIZE: \(native.framesPerPeriod)",
            "",
            "Listeners may ask for (camerad converts):",
            "\tRATE:        \(audio.sampleRates.map(String.init).joined(separator: " "))",
            "\tCHANNELS:    [1 \(audio.maxChannels)]",
            "\tFORMAT:      \(audio.sampleFormats.map(\.alsaName).joined(separator: " "))",
            "\tPERIOD_TIME: [\(audio.periodDurations.lowerBound.microseconds) \(audio.periodDurations.upperBound.microseconds)]",
            "",
        ].joined(separator: "\n")
    }

    /// Grouped by pixel format, in order of first appearance, like v4l2-ctl.
    static func formats(_ formats: [CaptureDevice.Format]) -> String {
        var lines = ["Formats:", "\tType: Video Capture", ""]
        var order: [FourCharCode] = []
        var sizes: [FourCharCode: [CaptureDevice.Format]] = [:]
        for format in formats {
            if sizes[format.v4l2PixelFormat] == nil { order.append(format.v4l2PixelFormat) }
            sizes[format.v4l2PixelFormat, default: []].append(format)
        }
        for (index, code) in order.enumerated() {
            let entries = sizes[code]!
            let compressed = entries[0].isCompressed ? ", compressed" : ""
            lines.append("\t[\(index)]: '\(code)' (\(entries[0].pixelFormatDescription)\(compressed))")
            for format in entries {
                lines.append("\t\tSize: Discrete \(format.dimensions)")
                for range in format.videoSupportedFrameRateRanges {
                    lines.append("\t\t\t" + interval(range))
                }
            }
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    /// `Interval: Discrete 0.033s (30.000 fps)` or
    /// `Interval: Continuous 0.017s - 1.000s (1.000-60.000 fps)`.
    static func interval(_ range: FrameRateRange) -> String {
        if range.isDiscrete {
            return "Interval: Discrete \(fixed(range.minFrameDuration.seconds, 3))s (\(fixed(range.maxFrameRate, 3)) fps)"
        }
        return "Interval: Continuous \(fixed(range.minFrameDuration.seconds, 3))s - \(fixed(range.maxFrameDuration.seconds, 3))s"
            + " (\(fixed(range.minFrameRate, 3))-\(fixed(range.maxFrameRate, 3)) fps)"
    }

    static func controls(_ controls: [CaptureDevice.Control]) -> String {
        var lines: [String] = []
        var currentClass: UInt32?
        for control in controls {
            if control.controlClass != currentClass {
                currentClass = control.controlClass
                lines.append("")
                lines.append(className(control.controlClass))
                lines.append("")
            }
            lines.append(controlLine(control))
            if control.kind == .menu || control.kind == .integerMenu {
                for item in control.menuItems {
                    let text = control.kind == .menu ? item.name : "\(item.value) (0x\(hex(UInt64(bitPattern: item.value))))"
                    lines.append("\t\t\t\t\(item.index): \(text)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// One control as v4l2-ctl prints it:
    /// `                     brightness 0x00980900 (int)    : min=0 max=255 step=1 default=128 value=128`
    static func controlLine(_ control: CaptureDevice.Control) -> String {
        let name = String(repeating: " ", count: max(0, 31 - control.name.count)) + control.name
        let id = "0x" + hex(UInt64(control.id), width: 8)
        let head = "\(name) \(id)"
        var line: String
        switch control.kind {
        case .integer:
            line = "\(head) (int)    : min=\(control.minimum) max=\(control.maximum) step=\(control.step) default=\(control.defaultValue) value=\(control.value)"
        case .boolean:
            line = "\(head) (bool)   : default=\(control.defaultValue) value=\(control.value)"
        case .menu:
            line = "\(head) (menu)   : min=\(control.minimum) max=\(control.maximum) default=\(control.defaultValue) value=\(control.value)"
            if let item = control.menuItems.first(where: { $0.index == control.value }) { line += " (\(item.name))" }
        case .integerMenu:
            line = "\(head) (intmenu): min=\(control.minimum) max=\(control.maximum) default=\(control.defaultValue) value=\(control.value)"
        case .button:
            line = "\(head) (button) :"
        case .integer64:
            line = "\(head) (int64)  : min=\(control.minimum) max=\(control.maximum) step=\(control.step) default=\(control.defaultValue) value=\(control.value)"
        case .bitmask:
            line = "\(head) (bitmask): max=0x\(hex(UInt64(truncatingIfNeeded: control.maximum), width: 8)) default=0x\(hex(UInt64(truncatingIfNeeded: control.defaultValue), width: 8)) value=0x\(hex(UInt64(truncatingIfNeeded: control.value), width: 8))"
        case .unknown:
            line = "\(head) (unknown): value=\(control.value)"
        }
        let flags = flagNames(control.flags)
        if !flags.isEmpty { line += " flags=" + flags.joined(separator: ", ") }
        return line
    }

    static func capabilities(_ device: CaptureDevice) -> String {
        func list<T>(_ all: [T], _ supported: (T) -> Bool) -> String {
            let names = all.filter(supported).map { String(describing: $0) }
            return names.isEmpty ? "none" : names.joined(separator: ", ")
        }
        let zoom = device.maxAvailableVideoZoomFactor > device.minAvailableVideoZoomFactor
            ? "\(fixed(device.minAvailableVideoZoomFactor, 1))x - \(fixed(device.maxAvailableVideoZoomFactor, 1))x"
                + (device.isVideoZoomDigital ? " (camerad's crop)" : "") : "none"
        return [
            "",
            "Capabilities:",
            "\tFocus modes    : " + list(CaptureDevice.FocusMode.allCases, device.isFocusModeSupported),
            "\tLens position  : " + (device.isLockingFocusWithCustomLensPositionSupported ? "yes" : "no"),
            "\tExposure modes : " + list(CaptureDevice.ExposureMode.allCases, device.isExposureModeSupported),
            "\tWhite balance  : " + list(CaptureDevice.WhiteBalanceMode.allCases, device.isWhiteBalanceModeSupported),
            "\tTorch          : " + (device.hasTorch ? list(CaptureDevice.TorchMode.allCases, device.isTorchModeSupported) : "none"),
            "\tFlash          : " + (device.hasFlash ? list(CaptureDevice.FlashMode.allCases, device.isFlashModeSupported) : "none"),
            "\tZoom           : " + zoom,
            "\tSession presets: " + list(SessionPreset.allCases, device.supportsSessionPreset),
        ].joined(separator: "\n")
    }

    static func className(_ controlClass: UInt32) -> String {
        switch controlClass {
        case 0x0098_0000: "User Controls"
        case 0x0099_0000: "Codec Controls"
        case 0x009a_0000: "Camera Controls"
        case 0x009c_0000: "Flash Controls"
        case 0x009e_0000: "Image Source Controls"
        case 0x009f_0000: "Image Processing Controls"
        default: "Controls 0x" + hex(UInt64(controlClass), width: 8)
        }
    }

    /// v4l2-ctl's names for V4L2_CTRL_FLAG_* bits.
    static func flagNames(_ flags: UInt32) -> [String] {
        let names: [(UInt32, String)] = [
            (0x0001, "disabled"), (0x0002, "grabbed"), (0x0004, "read-only"), (0x0008, "update"),
            (0x0010, "inactive"), (0x0020, "slider"), (0x0040, "write-only"), (0x0080, "volatile"),
            (0x0100, "has-payload"), (0x0200, "execute-on-write"), (0x0400, "modify-layout"),
        ]
        return names.filter { flags & $0.0 != 0 }.map(\.1)
    }

    /// `value` with `digits` decimals: fixed(0.0333, 3) == "0.033".
    static func fixed(_ value: Double, _ digits: Int = 2) -> String {
        String(format: "%.\(digits)f", value)
    }

    static func hex(_ value: UInt64, width: Int = 0) -> String {
        String(format: "%0\(width)llx", value)
    }
}
