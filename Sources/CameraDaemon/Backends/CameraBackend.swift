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
    /// stopping waits for every buffer to come back.
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
    func stop()
}

/// One frame as the device made it. Its bytes stay valid — and the device's
/// buffer stays lent out — until the last reference to it goes: then the
/// buffer goes back (V4L2 queues it again; a virtual camera draws into it anew).
/// So its conversions can run on other threads than the capture thread.
final class CapturedFrame: @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer
    let sequence: UInt64
    /// CLOCK_MONOTONIC nanoseconds at capture.
    let timestampNanoseconds: Int64
    let durationNanoseconds: Int64
    private let giveBack: (@Sendable () -> Void)?
    private let owned: UnsafeMutableRawBufferPointer?

    /// A frame in a device buffer; `giveBack` returns the buffer.
    init(bytes: UnsafeRawBufferPointer, sequence: UInt64, timestampNanoseconds: Int64, durationNanoseconds: Int64,
         giveBack: @escaping @Sendable () -> Void) {
        self.bytes = bytes
        self.sequence = sequence
        self.timestampNanoseconds = timestampNanoseconds
        self.durationNanoseconds = durationNanoseconds
        self.giveBack = giveBack
        owned = nil
    }

    /// A frame in memory of its own: a copy of `bytes` (an encoded JPEG, say).
    init(copying bytes: UnsafeRawBufferPointer, sequence: UInt64, timestampNanoseconds: Int64, durationNanoseconds: Int64) {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 64)
        copy.copyMemory(from: bytes)
        owned = copy
        self.bytes = UnsafeRawBufferPointer(rebasing: copy[..<bytes.count])
        self.sequence = sequence
        self.timestampNanoseconds = timestampNanoseconds
        self.durationNanoseconds = durationNanoseconds
        giveBack = nil
    }

    deinit {
        owned?.deallocate()
        giveBack?()
    }
}

/// A device's buffers lent out as frames: which are free, and waiting, when
/// its capture stops, until every one is back.
final class BufferLeases: @unchecked Sendable {
    private let state: Mutex<(free: [Int], out: Int)>
    private let returned = DispatchSemaphore(value: 0)
    private let onReturn: @Sendable () -> Void

    /// - Parameters:
    ///   - count: buffers `0 ..< count`, all free.
    ///   - onReturn: told each time a buffer comes back (a capture thread waits on it).
    init(count: Int, onReturn: @escaping @Sendable () -> Void = {}) {
        state = Mutex((Array(0..<count), 0))
        self.onReturn = onReturn
    }

    /// A free buffer, now lent out; nil when every one is. The one back last,
    /// still in the cache, and so that buffers a device never needs at once
    /// are never touched.
    func take() -> Int? {
        state.withLock { state in
            guard let index = state.free.popLast() else { return nil }
            state.out += 1
            return index
        }
    }

    /// Lends out a buffer the device handed over (V4L2's dequeued ones).
    func lend(_ index: Int) {
        state.withLock { state in
            state.free.removeAll { $0 == index }
            state.out += 1
        }
    }

    /// A buffer back from its frame.
    func giveBack(_ index: Int) {
        state.withLock { state in
            state.free.append(index)
            state.out -= 1
        }
        returned.signal()
        onReturn()
    }

    /// Takes the buffers back since the last call (for a device that queues them again).
    func takeFree() -> [Int] {
        state.withLock { state in
            defer { state.free.removeAll() }
            return state.free
        }
    }

    /// Waits until no buffer is lent out.
    func waitUntilAllBack() { waitUntil(atMostOut: 0) }

    /// Waits until at most `count` buffers are lent out.
    func waitUntil(atMostOut count: Int) {
        while state.withLock({ $0.out }) > count { returned.wait() }
    }
}
