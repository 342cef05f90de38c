import CameraMedia
import CameraProtocol

/// One camera as the daemon drives it, whatever it is underneath: a virtual
/// camera or a V4L2 node. Like libcamera's pipeline handlers, each kind lives in
/// its own files behind this protocol.
///
/// A backend describes itself with the protocol's `Device` message, kept current:
/// the registry sends it to clients as it is.
protocol CameraBackend: AnyObject, Sendable {
    /// Stable across reboots and re-plugging; never /dev/videoN.
    var uniqueID: String { get }

    /// Where the device's blocking work runs, in order: everything below that
    /// touches the device (``startCapture(_:onFrame:onFailure:)`` and stopping
    /// it, ``configure(_:)``, ``setControls(_:)``, ``refreshAvailability()``,
    /// ``activeMode``) is called there.
    var executor: DeviceExecutor { get }

    /// The device as clients see it now (`isConnected` true).
    func describe() -> Camerad_V1_Device

    /// The mode a stream gets when it does not ask for another: the configured
    /// one, else the device's own.
    var activeMode: CaptureMode { get }

    /// The mode set under the configuration lock (or restored from the stored
    /// defaults): every stream that starts the idle device runs it, whatever
    /// its preset. Nil: presets pick.
    var configuredMode: CaptureMode? { get }

    /// Makes `mode` the configured one; a V4L2 node is set to it at once when idle.
    func configure(_ mode: CaptureMode) throws

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
    func startCapture(
        _ mode: CaptureMode, onFrame: @escaping @Sendable (CapturedFrame) -> Void,
        onFailure: @escaping @Sendable (RPCError) -> Void
    ) throws -> any CaptureStream

    /// Sets controls, all or none; ``ControlChange`` has checked each against its range.
    func setControls(_ changes: [ControlChange]) throws

    /// Looks again whether the device can stream now (another program may hold
    /// it); returns whether its description changed.
    func refreshAvailability() -> Bool
}

extension CameraBackend {
    func refreshAvailability() -> Bool { false }
    var photoWarmUpFrames: Int { 0 }
    var photoMake: String { "camerad" }

    /// Fills in what follows from the controls: capabilities and the
    /// AVFoundation-named settings.
    func completeDescription(_ device: inout Camerad_V1_Device) {
        device.capabilities = DeviceCapabilities.derive(from: device.controls)
        CameraSettingsMapping.addRanges(to: &device.capabilities, from: device.controls)
        device.capabilities.focusPointOfInterestSupported = settingsState.supportsPointsOfInterest
        device.capabilities.exposurePointOfInterestSupported = settingsState.supportsPointsOfInterest
        device.settings = CameraSettingsMapping.settings(from: device.controls, state: settingsState)
    }
}

/// A device making frames; ``stop()`` ends it and waits for its thread.
protocol CaptureStream: AnyObject, Sendable {
    func stop()
}

/// One frame as the device made it. `bytes` is valid only during the call that
/// hands it over: the device reuses its buffer at once.
struct CapturedFrame {
    let bytes: UnsafeRawBufferPointer
    let sequence: UInt64
    /// CLOCK_MONOTONIC nanoseconds at capture.
    let timestampNanoseconds: Int64
    let durationNanoseconds: Int64
}

/// A device mode: one of its formats, at a frame duration.
struct CaptureMode: Equatable, Sendable, CustomStringConvertible {
    let formatIndex: Int
    let format: Camerad_V1_Format
    let frameDuration: Camerad_V1_Fraction

    var layout: FrameLayout {
        FrameLayout(format: PixelFormat(fourcc: format.fourcc), width: Int(format.width), height: Int(format.height))
    }

    var frameDurationNanoseconds: Int64 {
        Int64(frameDuration.numerator) * 1_000_000_000 / Int64(max(1, frameDuration.denominator))
    }

    var description: String {
        let rate = Double(frameDuration.denominator) / Double(max(1, frameDuration.numerator))
        return "\(PixelFormat(fourcc: format.fourcc).code) \(format.width)x\(format.height) at \(rate) fps"
    }
}
