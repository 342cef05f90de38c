import CameraMedia
import Dispatch
import Synchronization

/// One camera as the daemon drives it, whatever it is underneath: a virtual
/// camera or a V4L2 node. Like libcamera's pipeline handlers, each kind lives in
/// its own files behind this protocol.
///
/// A backend describes itself in camerad's ``DeviceDescription``, kept current;
/// the registry adds the running mode and the lock holder.
protocol CameraBackend: AnyObject, Sendable {
    /// Stable across reboots and re-plugging; never /dev/videoN.
    var uniqueID: String { get }

    /// The sysfs folder of the USB device it hangs from (``USBParent/path``):
    /// a webcam's camera and microphone share it, and are linked. Nil when it is not on USB.
    var usbDevice: String? { get }

    /// Where the device's blocking work runs, in order: everything below that
    /// touches the device (``startCapture(_:onFrame:onFailure:)`` and stopping
    /// it, ``configure(_:)``, ``setControls(_:)``, ``refreshAvailability()``,
    /// ``activeMode``) is called there.
    var executor: DeviceExecutor { get }

    /// The device as clients see it now (`isConnected` true).
    func describe() -> DeviceDescription

    /// What it can make, in the order clients number them.
    var formats: [DeviceFormat] { get }

    /// The session presets its formats can serve (``DeviceCapabilities/presets(for:)``).
    var supportedPresets: [SessionPreset] { get }

    /// Its controls now, in camerad's namespace.
    var controls: [CameraControl] { get }

    /// The mode a stream gets when it does not ask for another: the configured
    /// one, else the device's own.
    var activeMode: CaptureMode { get }

    /// The mode set under the configuration lock (or restored from the stored
    /// defaults): every stream that starts the idle device runs it, whatever
    /// its preset. Nil: presets pick.
    var configuredMode: CaptureMode? { get }

    /// Makes `mode` the configured one; a V4L2 node is set to it at once when idle.
    func configure(_ mode: CaptureMode) throws

    /// Forgets the configured mode: presets pick again (the client that set it is gone).
    func clearConfiguredMode()

    /// Points of interest, the kind of manual exposure, settling automatic modes.
    var settingsState: CameraSettingsState { get }

    /// Frames to let pass before a photo from a device started for it (a real
    /// camera's exposure settles over its first frames).
    var photoWarmUpFrames: Int { get }

    /// A photo's EXIF Make: the driver's name, or "camerad".
    var photoMake: String { get }

    /// Starts making frames in `mode`, calling `onFrame` for each on a capture
    /// thread of its own, until the returned stream is stopped or the device
    /// fails; then `onFailure` says why (`DEVICE_DISCONNECTED` when it went).
    /// A frame keeps its device buffer until its last reference goes; a device
    /// out of buffers skips frames (a gap in the sequence numbers), and
    /// stopping waits for every frame to go.
    func startCapture(
        _ mode: CaptureMode, onFrame: @escaping @Sendable (CapturedFrame) -> Void,
        onFailure: @escaping @Sendable (CameraError) -> Void
    ) throws -> any CaptureStream

    /// Sets controls, all or none; ``ControlChange`` has checked each against its range.
    func setControls(_ changes: [ControlChange]) throws

    /// Looks again whether the device can stream now (another program may hold
    /// it); returns whether its description changed.
    func refreshAvailability() -> Bool
}

extension CameraBackend {
    var usbDevice: String? { nil }
    func refreshAvailability() -> Bool { false }
    var photoWarmUpFrames: Int { 0 }
    var photoMake: String { "camerad" }

    /// What its AVFoundation-named settings can do, from its controls now.
    var capabilities: DeviceCapabilities {
        DeviceCapabilities(controls: controls, pointsOfInterest: settingsState.supportsPointsOfInterest)
    }

    /// Its description: who it is, as the backend says, with the formats,
    /// presets and controls, and what follows from the controls (capabilities
    /// and the AVFoundation-named settings).
    func description(
        modelID: String, localizedName: String, manufacturer: String, position: DeviceDescription.Position,
        deviceType: DeviceDescription.DeviceType, backend: DeviceDescription.Backend, devicePath: String? = nil,
        activeMode: CaptureMode, unavailableReason: String? = nil
    ) -> DeviceDescription {
        let controls = controls
        return DeviceDescription(
            uniqueID: uniqueID, modelID: modelID, localizedName: localizedName, manufacturer: manufacturer,
            position: position, deviceType: deviceType, backend: backend, devicePath: devicePath,
            unavailableReason: unavailableReason, formats: formats, activeMode: activeMode, controls: controls,
            capabilities: DeviceCapabilities(controls: controls, pointsOfInterest: settingsState.supportsPointsOfInterest),
            supportedPresets: supportedPresets, settings: CameraSettingsMapping.settings(from: controls, state: settingsState))
    }
}

/// A device making frames; ``stop()`` ends it and waits for its thread.
protocol CaptureStream: AnyObject, Sendable {
    /// Its buffers as clients can map them; nil when they cannot be shared
    /// (a node without `VIDIOC_EXPBUF`, rows padded, frames that are copies).
    var buffers: DeviceBuffers? { get }

    /// Why ``buffers`` is nil, for the log, when the frames could be shared.
    var unsharedBecause: String? { get }

    /// Stops the device and waits for its thread and for its frames to go;
    /// buffers clients still hold stay theirs (``DeviceBuffers``).
    func stop()
}

extension CaptureStream {
    var unsharedBecause: String? { nil }
}

/// One frame as the device made it. Its bytes stay valid — and the device's
/// buffer stays lent out — until the last reference to it goes: then the
/// buffer goes back (V4L2 queues it again; a virtual camera draws into it anew),
/// unless a pool shares it with clients (``DeviceBuffers/loan(_:)``).
/// So its conversions can run on other threads than the capture thread.
///
/// Unchecked Sendable: `bytes` points into the device's buffer (or the
/// capture's packed copy), which nobody writes while this frame lives — its
/// lease keeps the buffer from the device until `giveBack`.
final class CapturedFrame: @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer
    let sequence: UInt64
    /// CLOCK_MONOTONIC nanoseconds at capture.
    let timestampNanoseconds: Int64
    let durationNanoseconds: Int64
    /// The device buffer the frame is, as clients can map it: set when `bytes`
    /// are that buffer's own from its start (not packed, not a copy).
    let buffer: DeviceBuffers.Buffer?
    private let giveBack: @Sendable () -> Void

    /// A frame in a device buffer; `giveBack` returns the buffer.
    init(bytes: UnsafeRawBufferPointer, sequence: UInt64, timestampNanoseconds: Int64, durationNanoseconds: Int64,
         buffer: DeviceBuffers.Buffer? = nil, giveBack: @escaping @Sendable () -> Void) {
        self.bytes = bytes
        self.sequence = sequence
        self.timestampNanoseconds = timestampNanoseconds
        self.durationNanoseconds = durationNanoseconds
        self.buffer = buffer
        self.giveBack = giveBack
    }

    deinit { giveBack() }
}
