/// A camera as clients see it (AVCaptureDevice's properties), in camerad's own
/// types: a backend describes itself in it, the registry adds the running mode
/// and the lock holder, and the protocol's `Device` is made from it at the
/// handler edge (`Handlers/ProtocolMapping.swift`).
struct DeviceDescription: Sendable {
    /// AVCaptureDevice.Position.
    enum Position: Sendable, Hashable {
        case unspecified, back, front
    }

    /// AVCaptureDevice.DeviceType, as far as Linux can tell.
    enum DeviceType: Sendable, Hashable {
        case builtInWideAngleCamera, external
    }

    /// What drives the device.
    enum Backend: Sendable, Hashable {
        case virtual, v4l2
    }

    /// Stable across reboots and re-plugging; never /dev/videoN.
    var uniqueID: String
    var modelID: String
    var localizedName: String
    var manufacturer: String
    var position: Position
    var deviceType: DeviceType
    var backend: Backend
    /// The node (/dev/videoN) of a V4L2 device.
    var devicePath: String?
    var isConnected = true
    /// Why no stream can start now (another program holds the node).
    var unavailableReason: String?
    /// What it can make, in the order clients number them.
    var formats: [DeviceFormat]
    /// AVCaptureDevice's `activeFormat` and its frame durations.
    var activeMode: CaptureMode
    var controls: [CameraControl]
    var capabilities: DeviceCapabilities
    var supportedPresets: [SessionPreset]
    var settings: CameraSettings
    /// Who holds its configuration lock.
    var lockHolder: ConfigurationLocks.Holder?
}

/// A device came, went or changed, as watchers hear it.
struct DeviceEvent: Sendable {
    enum Kind: Sendable {
        /// The watch has sent every present device and follows changes from now.
        case subscribed
        case connected, disconnected, changed
        /// Its configuration lock was taken or released.
        case locked, unlocked
    }

    let kind: Kind
    let device: DeviceDescription?
    /// CLOCK_MONOTONIC nanoseconds.
    let timestampNanoseconds: Int64
}
