import CameraProtocol
import Synchronization

/// AVCaptureDevice: one camera or microphone served by camerad.
///
/// Properties read the device's description as CaptureKit last heard it: from the
/// call that returned the device, from ``refresh()``, and from device events while
/// anything in the process watches them. Every call that reaches the daemon is
/// `async throws(CaptureError)` — on Linux the cameras live in another process.
public final class CaptureDevice: Hashable, Sendable, CustomStringConvertible, Identifiable {
    /// Stable across reboots and re-plugging: "virtual-0", or from the USB ids.
    public let uniqueID: String
    private let snapshot: Mutex<Camerad_V1_Device>

    init(_ description: Camerad_V1_Device) {
        uniqueID = description.uniqueID
        snapshot = Mutex(description)
        LiveDevices.shared.add(self)
    }

    /// Replaces the description with a newer one.
    func update(_ description: Camerad_V1_Device) {
        snapshot.withLock { $0 = description }
    }

    func read<T>(_ body: (Camerad_V1_Device) -> T) -> T {
        snapshot.withLock { body($0) }
    }

    public var id: String { uniqueID }
    public var modelID: String { read(\.modelID) }
    public var localizedName: String { read(\.localizedName) }
    public var manufacturer: String { read(\.manufacturer) }
    public var position: Position { Position(read(\.position)) }
    /// A kind of device this version of CaptureKit does not know reads `.external`.
    public var deviceType: DeviceType { DeviceType(read(\.deviceType)) ?? .external }
    /// False once the device has gone away.
    public var isConnected: Bool { read(\.isConnected) }

    /// Why the device cannot stream now though connected (held by another
    /// program, say); nil when it can. Linux only.
    public var unavailableReason: String? { read { $0.unavailableReason.isEmpty ? nil : $0.unavailableReason } }

    /// The V4L2 node ("/dev/video0"), the ALSA PCM ("hw:CARD=Loopback,DEV=1"); nil for virtual devices. Linux only.
    public var devicePath: String? { read { $0.devicePath.isEmpty ? nil : $0.devicePath } }

    /// Whether this is one of camerad's built-in virtual cameras or microphones. Linux only.
    public var isVirtual: Bool { read(\.backend) == .virtual }

    /// The uniqueIDs of the devices physically linked to this one — a USB
    /// webcam's camera and its microphone name each other; empty for the rest.
    /// What AVFoundation's `linkedDevices` (macOS) holds, by id: ``linkedDevices()`` fetches them.
    public var linkedDeviceUniqueIDs: [String] { read(\.linkedUniqueIds) }

    /// AVCaptureDevice.linkedDevices: the devices physically linked to this one
    /// (a webcam's microphone for its camera), as camerad describes them now.
    public func linkedDevices() async throws(CaptureError) -> [CaptureDevice] {
        let ids = linkedDeviceUniqueIDs
        guard !ids.isEmpty else { return [] }
        return try await Self.devices().filter { ids.contains($0.uniqueID) }
    }

    /// Video for a camera, audio for a microphone.
    public func hasMediaType(_ mediaType: MediaType) -> Bool { mediaType == self.mediaType }

    /// What the device captures (Linux: AVCaptureDevice has only ``hasMediaType(_:)``).
    public var mediaType: MediaType { read(\.mediaType) == .audio ? .audio : .video }

    /// A microphone's format and what an audio output may ask of it; nil for a camera. Linux only.
    public var audioCapabilities: AudioCapabilities? {
        read { device in device.hasAudio ? AudioCapabilities(device.audio) : nil }
    }

    /// AVAudioSession.isInputGainSettable: a microphone with a capture volume
    /// (``setInputGain(_:)``). Linux: per device, not per session.
    public var isInputGainSettable: Bool { read(\.audio.inputGainSettable) }

    /// AVAudioSession.inputGain: 0 to 1 over the capture volume's range, as
    /// camerad set it last; 0 when ``isInputGainSettable`` is false.
    public var inputGain: Float { read(\.audio.inputGain) }

    /// Every pixel format and size a camera offers; a microphone's own format.
    public var formats: [Format] {
        if let native = audioCapabilities?.native { return [Format(audio: native)] }
        return read { device in device.formats.map { Format($0, maxZoom: device.capabilities.maxZoomFactor) } }
    }

    /// The mode the device runs (or will run) in, as the daemon said.
    var snapshotActiveFormat: Format? {
        read { device in
            guard device.optionalActiveFormatIndex != nil, Int(device.activeFormatIndex) < device.formats.count else { return nil }
            return Format(device.formats[Int(device.activeFormatIndex)], maxZoom: device.capabilities.maxZoomFactor)
        }
    }


    /// Every control of the device, like `v4l2-ctl --list-ctrls-menus`. Linux only.
    public var controls: [Control] { read { $0.controls.map(Control.init) } }

    /// The control with v4l2-ctl's `name` ("brightness").
    public func control(named name: String) -> Control? {
        read { device in device.controls.first { $0.name == name }.map(Control.init) }
    }

    /// Fetches the device's current description from the daemon.
    ///
    /// - Throws: `deviceNotFound` when it is gone (and ``isConnected`` turns false).
    public func refresh() async throws(CaptureError) {
        var request = Camerad_V1_GetDeviceRequest()
        request.uniqueID = uniqueID
        do {
            let response = try await DaemonClient.shared.unary(CameraService.getDevice, request)
            LiveDevices.shared.update(response.device)
        } catch where error.code == .deviceNotFound {
            snapshot.withLock { $0.isConnected = false }
            throw error
        }
    }

    public static func == (lhs: CaptureDevice, rhs: CaptureDevice) -> Bool { lhs.uniqueID == rhs.uniqueID }
    public func hash(into hasher: inout Hasher) { hasher.combine(uniqueID) }

    public var description: String { "\(localizedName) [\(uniqueID)]" }
}

// MARK: - Finding devices

extension CaptureDevice {
    /// Every device the daemon serves, in its order.
    public static func devices() async throws(CaptureError) -> [CaptureDevice] {
        try await list(Camerad_V1_DeviceFilter())
    }

    /// The devices that capture `mediaType`.
    public static func devices(for mediaType: MediaType) async throws(CaptureError) -> [CaptureDevice] {
        try await DiscoverySession(deviceTypes: DeviceType.allCases, mediaType: mediaType, position: .unspecified).devices
    }

    /// The default device for `mediaType`, as on an iPhone: the back wide-angle
    /// camera where there is one, else any back camera, else the first the
    /// daemon lists (for audio, its first microphone).
    public static func `default`(for mediaType: MediaType) async throws(CaptureError) -> CaptureDevice? {
        let devices = try await devices(for: mediaType)
        return devices.first { $0.position == .back && $0.deviceType == .builtInWideAngleCamera }
            ?? devices.first { $0.position == .back } ?? devices.first
    }

    /// The first device of `deviceType` at `position` (`.unspecified`: any position).
    public static func `default`(
        _ deviceType: DeviceType, for mediaType: MediaType?, position: Position
    ) async throws(CaptureError) -> CaptureDevice? {
        try await DiscoverySession(deviceTypes: [deviceType], mediaType: mediaType, position: position).devices.first
    }

    /// The device with `uniqueID`; nil when the daemon has none.
    public convenience init?(uniqueID: String) async throws(CaptureError) {
        var request = Camerad_V1_GetDeviceRequest()
        request.uniqueID = uniqueID
        do {
            self.init(try await DaemonClient.shared.unary(CameraService.getDevice, request).device)
        } catch where error.code == .deviceNotFound {
            return nil
        }
    }

    /// The device a user named the way `v4l2-ctl` and `camctl` accept: a
    /// uniqueID, an index into ``devices()``, or a `/dev/video*` path. Linux only.
    ///
    /// - Throws: `deviceNotFound` saying what was looked for.
    public static func matching(_ specifier: String) async throws(CaptureError) -> CaptureDevice {
        let all = try await devices()
        let found: CaptureDevice?
        if specifier.hasPrefix("/dev/") {
            found = all.first { $0.devicePath == specifier }
        } else if let index = Int(specifier), !all.contains(where: { $0.uniqueID == specifier }) {
            found = all.indices.contains(index) ? all[index] : nil
        } else {
            found = all.first { $0.uniqueID == specifier }
        }
        guard let found else {
            throw CaptureError(.deviceNotFound,
                               "no device '\(specifier)' among \(all.count); give a uniqueID, an index or a /dev/video path from 'camctl list'")
        }
        return found
    }

    static func list(_ filter: Camerad_V1_DeviceFilter) async throws(CaptureError) -> [CaptureDevice] {
        var request = Camerad_V1_ListDevicesRequest()
        request.filter = filter
        return try await DaemonClient.shared.unary(CameraService.listDevices, request).devices.map(LiveDevices.shared.update)
    }
}

/// Every CaptureDevice object alive in the process, so that news of a device
/// reaches all of them.
final class LiveDevices: Sendable {
    static let shared = LiveDevices()

    private struct Entry {
        weak var device: CaptureDevice?
    }
    private let entries = Mutex<[String: [Entry]]>([:])

    func add(_ device: CaptureDevice) {
        entries.withLock { entries in
            entries[device.uniqueID, default: []].removeAll { $0.device == nil }
            entries[device.uniqueID, default: []].append(Entry(device: device))
        }
    }

    /// Gives every live object of the device the new description and returns
    /// one of them (a new one when none is alive).
    @discardableResult
    func update(_ description: Camerad_V1_Device) -> CaptureDevice {
        let alive = entries.withLock { $0[description.uniqueID]?.compactMap(\.device) ?? [] }
        for device in alive { device.update(description) }
        return alive.first ?? CaptureDevice(description)
    }
}
