import CameraIPC
import CameraMedia
import Foundation
import Glibc
import Synchronization
import V4L2

/// A real camera: one V4L2 video capture node, through libv4l2.
///
/// The node is opened only while it is probed, streams, or has its controls set,
/// so other programs (and the kernel, on unplug) are not kept waiting on camerad.
/// Formats are what the driver lists (libv4lconvert's emulated ones left out);
/// formats camerad cannot read are listed but not picked for streaming.
final class V4L2Camera: CameraBackend {
    let uniqueID: String
    var usbDevice: String? { identity.usbDevice }
    let executor: DeviceExecutor
    let devicePath: String
    let identity: V4L2Identity
    let capability: V4L2Capability
    let formats: [DeviceFormat]
    let supportedPresets: [SessionPreset]
    let position: DeviceDescription.Position
    /// Called when a stream found the device gone, with its path (the discovery
    /// looks again: the node may still answer).
    let onLost: @Sendable (String) -> Void

    private struct State {
        var controls: [CameraControl]
        var driverControls: [V4L2Control]
        /// The node's own mode, as last read.
        var nodeMode: CaptureMode
        var configuredMode: CaptureMode?
        var unavailableReason: String?
        var lastAvailabilityCheck: Int64 = 0
        var capturing = false
    }
    private let state: OrderedMutex<State>
    /// A UVC camera's auto exposure needs a few frames after it starts.
    let photoWarmUpFrames = 5
    var photoMake: String { capability.driver }

    /// V4L2 has no points of interest; UVC cameras report no settling either.
    let settingsState = CameraSettingsState(supportsPointsOfInterest: false, settling: .zero)

    /// Reads a node: nil when it is not a video capture node (metadata, output,
    /// radio, touch...) or has no format camerad can stream.
    ///
    /// - Throws: ``V4L2Error`` when it cannot be opened or answered.
    static func probe(path: String, onLost: @escaping @Sendable (String) -> Void) throws(V4L2Error) -> V4L2Camera? {
        let device = try V4L2Device(path: path)
        guard device.capability.isVideoCapture else { return nil }
        let identity = V4L2Discovery.identity(of: path, busInfo: device.capability.busInfo)
        let formats = try Self.formats(of: device)
        let driverControls = (try? device.controls()) ?? []
        let values = device.values(of: driverControls)
        let current = try? device.format()
        let interval = try? device.frameInterval()
        guard let mode = Self.startingMode(formats, current: current, interval: interval) else { return nil }
        let position: DeviceDescription.Position = switch device.orientation(among: driverControls) {
        case 0: .front
        case 1: .back
        default: .unspecified
        }
        let camera = V4L2Camera(
            path: path, identity: identity, capability: device.capability, formats: formats, position: position,
            driverControls: driverControls, values: values, mode: mode, onLost: onLost)
        if device.isBusy() { camera.markBusy() }
        return camera
    }

    private init(
        path: String, identity: V4L2Identity, capability: V4L2Capability, formats: [DeviceFormat],
        position: DeviceDescription.Position, driverControls: [V4L2Control], values: [UInt32: Int64], mode: CaptureMode,
        onLost: @escaping @Sendable (String) -> Void
    ) {
        uniqueID = identity.uniqueID
        executor = DeviceExecutor(label: uniqueID)
        devicePath = path
        self.identity = identity
        self.capability = capability
        self.formats = formats
        supportedPresets = DeviceCapabilities.presets(for: formats.filter(\.isStreamable))
        self.position = position
        self.onLost = onLost
        state = OrderedMutex(.cameraState, State(controls: driverControls.map { Self.control($0, value: values[$0.id]) },
                            driverControls: driverControls, nodeMode: mode))
    }

    /// The configured mode, else the one the node is set to (another program,
    /// such as `v4l2-ctl --set-fmt-video`, may have set it), read again while
    /// camerad is not capturing from it.
    var activeMode: CaptureMode {
        if let configured = configuredMode { return configured }
        if !state.withLock({ $0.capturing }), let device = try? V4L2Device(path: devicePath),
           let mode = Self.startingMode(formats, current: try? device.format(), interval: try? device.frameInterval()) {
            state.withLock { state in
                if !state.capturing { state.nodeMode = mode }
            }
        }
        return state.withLock { $0.nodeMode }
    }

    var configuredMode: CaptureMode? { state.withLock { $0.configuredMode } }

    /// The node keeps the format it was set to (another program may read it);
    /// camerad's presets pick again.
    func clearConfiguredMode() {
        state.withLock { $0.configuredMode = nil }
    }

    var controls: [CameraControl] { state.withLock { $0.controls } }

    /// Sets the node to `mode` now when camerad is not capturing from it (as
    /// `v4l2-ctl --set-fmt-video --set-parm` would), so other programs see it too.
    func configure(_ mode: CaptureMode) throws {
        if !state.withLock({ $0.capturing }) {
            do {
                let device = try V4L2Device(path: devicePath)
                _ = try device.setFormat(fourcc: mode.format.pixelFormat.fourcc, width: mode.format.width, height: mode.format.height)
                if !mode.format.frameRateRanges.isEmpty {
                    _ = try? device.setFrameInterval(V4L2Fraction(mode.frameDuration.numerator, mode.frameDuration.denominator))
                }
            } catch {
                throw error.rpcError(for: uniqueID)
            }
        }
        state.withLock { state in
            state.configuredMode = mode
            state.nodeMode = mode
        }
    }

    func describe() -> DeviceDescription {
        let (mode, unavailableReason) = state.withLock { ($0.configuredMode ?? $0.nodeMode, $0.unavailableReason) }
        return description(
            modelID: identity.modelID, localizedName: capability.card, manufacturer: identity.manufacturer,
            position: position, deviceType: identity.isExternal ? .external : .builtInWideAngleCamera, backend: .v4l2,
            devicePath: devicePath, activeMode: mode, unavailableReason: unavailableReason)
    }

    // MARK: - Availability

    /// Looks again, at most once a second, whether another program streams from
    /// the node; returns whether that changed.
    @discardableResult
    func refreshAvailability() -> Bool {
        let now = monotonicNanoseconds()
        let due = state.withLock { state in
            guard !state.capturing, now - state.lastAvailabilityCheck >= 1_000_000_000 else { return false }
            state.lastAvailabilityCheck = now
            return true
        }
        guard due else { return false }
        let busy = (try? V4L2Device(path: devicePath))?.isBusy() ?? false
        return busy ? markBusy() : markAvailable()
    }

    /// Notes that another program holds the node; returns whether that is news.
    @discardableResult
    func markBusy() -> Bool {
        let reason = Self.busyReason(devicePath)
        return state.withLock { state in
            defer { state.unavailableReason = reason }
            return state.unavailableReason == nil
        }
    }

    @discardableResult
    private func markAvailable() -> Bool {
        state.withLock { state in
            defer { state.unavailableReason = nil }
            return state.unavailableReason != nil
        }
    }

    func setCapturing(_ capturing: Bool) {
        state.withLock { state in
            state.capturing = capturing
            if capturing { state.unavailableReason = nil }
        }
    }

    /// "in use by another program (pid 4242 v4l2-ctl); stop it to stream here".
    static func busyReason(_ path: String) -> String {
        "in use by another program" + (holders(of: path).map { " (\($0))" } ?? "") + "; stop it to stream here"
    }

    /// "pid 4242 v4l2-ctl" for each other process with the node open, from /proc.
    static func holders(of path: String) -> String? {
        let files = FileManager.default
        let pids = ((try? files.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init).filter { $0 != getpid() }
        let found = pids.sorted().filter { pid in
            let descriptors = (try? files.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            return descriptors.contains { (try? files.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == path }
        }.map { pid in
            let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "?"
            return "pid \(pid) \(command.trimmingCharacters(in: .whitespacesAndNewlines))"
        }
        return found.isEmpty ? nil : found.joined(separator: ", ")
    }

    // MARK: - Controls

    func setControls(_ changes: [ControlChange]) throws {
        let driverControls = state.withLock { $0.driverControls }
        let values: [(control: V4L2Control, value: Int64)] = changes.compactMap { change in
            driverControls.first { $0.id == change.control.id.rawValue }.map { ($0, change.value) }
        }
        do {
            let device = try V4L2Device(path: devicePath)
            try device.setValues(values)
            let readBack = device.values(of: driverControls)
            state.withLock { state in
                state.controls = driverControls.map { Self.control($0, value: readBack[$0.id]) }
            }
        } catch {
            throw error.rpcError(for: uniqueID)
        }
    }

    /// A driver control in camerad's namespace: the same id (camerad numbers
    /// its controls as V4L2 does) and type.
    static func control(_ control: V4L2Control, value: Int64?) -> CameraControl {
        CameraControl(
            id: ControlID(rawValue: control.id), displayName: control.name,
            // V4L2Control.handledTypes are the kinds camerad has.
            kind: CameraControl.Kind(rawValue: control.type) ?? .integer,
            minimum: control.minimum, maximum: control.maximum, step: control.step, defaultValue: control.defaultValue,
            value: value ?? 0,
            menuItems: control.menuItems.map { CameraControl.MenuItem(index: $0.index, name: $0.name, value: $0.value) },
            flags: ControlFlags(rawValue: control.flags))
    }

    // MARK: - Formats

    /// Sizes offered for a stepwise or continuous range: these common ones where
    /// the range has them, and its largest.
    static let stepwiseSizes: [(UInt32, UInt32)] = [
        (160, 120), (320, 240), (640, 480), (800, 600), (1280, 720), (1280, 960), (1920, 1080), (2560, 1440),
        (3840, 2160),
    ]

    /// Every pixel format at every size, with its frame intervals: discrete
    /// intervals become ranges of one duration, stepwise ones one range.
    static func formats(of device: V4L2Device) throws(V4L2Error) -> [DeviceFormat] {
        var formats: [DeviceFormat] = []
        for description in try device.formatDescriptions() {
            let sizes: [V4L2Size]
            switch try device.frameSizes(description.fourcc) {
            case .discrete(let discrete):
                sizes = discrete
            case .stepwise(let minimum, let maximum, let step):
                let fitting = stepwiseSizes.map { V4L2Size($0.0, $0.1) }.filter { size in
                    (minimum.width...maximum.width).contains(size.width)
                        && (minimum.height...maximum.height).contains(size.height)
                        && (size.width - minimum.width) % step.width == 0 && (size.height - minimum.height) % step.height == 0
                }
                sizes = fitting.contains(maximum) ? fitting : fitting + [maximum]
            }
            for size in sizes {
                formats.append(DeviceFormat(
                    pixelFormat: PixelFormat(fourcc: description.fourcc), width: size.width, height: size.height,
                    name: description.description, isCompressed: description.isCompressed,
                    frameRateRanges: Self.ranges((try? device.frameIntervals(description.fourcc, size)) ?? .discrete([]))))
            }
        }
        return formats
    }

    private static func ranges(_ intervals: V4L2FrameIntervals) -> [FrameRateRange] {
        func range(_ shortest: V4L2Fraction, _ longest: V4L2Fraction) -> FrameRateRange {
            FrameRateRange(minFrameDuration: .seconds(shortest.numerator, per: shortest.denominator),
                           maxFrameDuration: .seconds(longest.numerator, per: longest.denominator))
        }
        switch intervals {
        case .discrete(let discrete): return discrete.map { range($0, $0) }
        case .stepwise(let minimum, let maximum, _): return [range(minimum, maximum)]
        }
    }

    /// The mode the node is set to, if camerad can stream it; else the one the
    /// `.high` preset picks among what it can.
    static func startingMode(
        _ formats: [DeviceFormat], current: V4L2Format?, interval: V4L2Fraction?
    ) -> CaptureMode? {
        let preferred = interval.map { FrameDuration.seconds($0.numerator, per: $0.denominator) } ?? .thirtieth
        func mode(_ index: Int) -> CaptureMode {
            CaptureMode(formatIndex: index, format: formats[index],
                        frameDuration: ModeSelection.frameDuration(for: formats[index], preferring: preferred))
        }
        if let current, let index = formats.indices.first(where: { index in
            formats[index].isStreamable
                && formats[index].matches(PixelFormat(fourcc: current.fourcc), current.width, current.height)
        }) {
            return mode(index)
        }
        guard let first = formats.indices.first(where: { formats[$0].isStreamable }) else { return nil }
        return ModeSelection.mode(for: .high, formats: formats, active: mode(first))
    }
}

extension V4L2Error {
    /// What a client is told.
    func rpcError(for uniqueID: String) -> CameraError {
        if meansBusy {
            return CameraError(.deviceBusy, "\(uniqueID) (\(path)) is \(V4L2Camera.busyReason(path))")
        }
        if meansDeviceLost {
            return CameraError(.deviceDisconnected, "\(uniqueID) (\(path)) was disconnected: \(self)")
        }
        if code == ERANGE || code == EINVAL {
            return CameraError(.invalidArgument, "\(uniqueID) refused it: \(self)")
        }
        if code == EACCES || code == EPERM {
            return CameraError(.permissionDenied, "\(uniqueID): \(self); check the node's permissions or the control's flags")
        }
        return CameraError(.internalError, "\(uniqueID): \(self)")
    }
}

/// Who a node is, from sysfs: the part of its identity that survives reboots and re-plugging.
struct V4L2Identity: Sendable, Equatable {
    /// "usb-046d:0825-8A3F5E10", "usb-046d:0825@1-2.3" (no serial: the port), or
    /// the bus info ("platform-vivid-000"); "-N" added for the node of index N
    /// of one device.
    let uniqueID: String
    /// "046d:0825" for USB, else the driver's name in sysfs.
    let modelID: String
    let manufacturer: String
    /// Plugged in from outside (USB).
    let isExternal: Bool
    /// The USB device's sysfs folder (``USBParent/path``); nil when not on USB.
    let usbDevice: String?
}
