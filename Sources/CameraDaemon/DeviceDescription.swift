/// A device — a camera or a microphone — as clients see it (AVCaptureDevice's
/// properties), in camerad's own types: a backend describes itself in it, the
/// registry adds the running mode and the lock holder, and the protocol's
/// `Device` is made from it at the handler edge (`Handlers/ProtocolMapping.swift`).
/// A microphone has ``audio`` and none of a camera's formats, modes or controls.
struct DeviceDescription: Sendable {
    /// AVCaptureDevice.Position.
    enum Position: Sendable, Hashable {
        case unspecified, back, front
    }

    /// AVCaptureDevice.DeviceType, as far as Linux can tell.
    enum DeviceType: Sendable, Hashable {
        case builtInWideAngleCamera, external, microphone
    }

    /// What drives the device.
    enum Backend: Sendable, Hashable {
        case virtual, v4l2, alsa
    }

    /// Stable across reboots and re-plugging; never /dev/videoN.
    var uniqueID: String
    var modelID: String
    var localizedName: String
    var manufacturer: String
    var position: Position
    var deviceType: DeviceType
    var backend: Backend
    /// The node (/dev/videoN) of a V4L2 device, the PCM of an ALSA one.
    var devicePath: String?
    var isConnected = true
    /// Why no stream can start now (another program holds the node).
    var unavailableReason: String?
    /// What it can make, in the order clients number them.
    var formats: [DeviceFormat]
    /// AVCaptureDevice's `activeFormat` and its frame durations; nil for a microphone.
    var activeMode: CaptureMode?
    var controls: [CameraControl]
    var capabilities: DeviceCapabilities
    var supportedPresets: [SessionPreset]
    var settings: CameraSettings
    /// Who holds its configuration lock.
    var lockHolder: ConfigurationLocks.Holder?
    /// A microphone's formats; nil for a camera.
    var audio: AudioCapabilities? = nil
    /// The devices physically linked to it (on the same USB device), by uniqueID.
    var linkedUniqueIDs: [String] = []
    /// A microphone's input gain, 0 to 1; nil when it has none to set.
    var inputGain: Float?

    /// AVCaptureDevice.hasMediaType: a camera's is video, a microphone's audio.
    var mediaType: MediaType { audio == nil ? .video : .audio }

    /// AVMediaType.
    enum MediaType: Sendable, Hashable {
        case video, audio
    }

    /// A microphone as clients see it: who it is and what it captures.
    static func microphone(
        uniqueID: String, modelID: String, localizedName: String, manufacturer: String, backend: Backend,
        devicePath: String? = nil, audio: AudioCapabilities
    ) -> DeviceDescription {
        DeviceDescription(uniqueID: uniqueID, modelID: modelID, localizedName: localizedName, manufacturer: manufacturer,
                          position: .unspecified, deviceType: .microphone, backend: backend, devicePath: devicePath,
                          formats: [], activeMode: nil, controls: [], capabilities: DeviceCapabilities(),
                          supportedPresets: [], settings: CameraSettings(), audio: audio)
    }
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
