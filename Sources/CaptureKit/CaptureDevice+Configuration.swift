import CameraProtocol
import Foundation
import Synchronization

// MARK: - The configuration lock

extension CaptureDevice {
    /// Who holds a device's configuration lock. Linux only: on Linux the holder
    /// may be another process.
    public struct ConfigurationLockHolder: Hashable, Sendable, CustomStringConvertible {
        public let pid: Int32
        /// From /proc/PID/comm.
        public let processName: String
        /// What the holder called itself to camerad (``CaptureDaemon/clientName``).
        public let clientName: String

        public var description: String { "pid \(pid) (\(processName.isEmpty ? clientName : processName))" }
    }

    /// AVCaptureDevice.lockForConfiguration, across processes: this process may
    /// change the device until ``unlockForConfiguration()``. Counted: lock as
    /// often as you like and unlock as often. The lock also ends when this
    /// process's connection to camerad does (it exits or is killed).
    ///
    /// - Parameter timeout: how long to wait for another holder to let go; zero fails at once.
    /// - Throws: `deviceLocked` naming the holder; `deviceNotFound`.
    public func lockForConfiguration(waitingUpTo timeout: Duration = .zero) async throws(CaptureError) {
        var request = Camerad_V1_LockForConfigurationRequest()
        request.uniqueID = uniqueID
        let (seconds, attoseconds) = timeout.components
        request.waitMs = UInt32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        let response = try await DaemonClient.shared.unary(CameraService.lockForConfiguration, request)
        LiveDevices.shared.update(response.device)
    }

    /// AVCaptureDevice.unlockForConfiguration: undoes one ``lockForConfiguration(waitingUpTo:)``,
    /// sending first the settings set as properties. Like Apple's, it does not
    /// fail, and one setting camerad refuses takes no other down with it: the
    /// settings go as one change, and if camerad refuses it, one by one; each
    /// refused one is posted as ``configurationDidFailNotification`` and
    /// printed to stderr (``CaptureDiagnostics``). Unlocking a device this
    /// process does not hold does nothing.
    public func unlockForConfiguration() async {
        if let changes = StagedConfigurations.shared.take(uniqueID) {
            do {
                try await configure(changes)
            } catch {
                let parts = changes.parts
                for (name, part) in parts {
                    do throws(CaptureError) {
                        // One part alone: the error is the whole change's.
                        if parts.count > 1 { try await configure(part) } else { throw error }
                    } catch {
                        NotificationCenter.default.post(name: Self.configurationDidFailNotification, object: self,
                                                        userInfo: [Self.configurationErrorKey: error])
                        CaptureDiagnostics.report("\(name) of \(uniqueID) was not applied at unlockForConfiguration()", error)
                    }
                }
            }
        }
        var request = Camerad_V1_UnlockForConfigurationRequest()
        request.uniqueID = uniqueID
        _ = try? await DaemonClient.shared.unary(CameraService.unlockForConfiguration, request)
        try? await refresh()
    }

    /// Who holds the configuration lock, as CaptureKit last heard; nil when nobody does.
    public var configurationLockHolder: ConfigurationLockHolder? {
        read { device in
            guard device.hasLock else { return nil }
            return ConfigurationLockHolder(pid: device.lock.pid, processName: device.lock.processName,
                                           clientName: device.lock.clientName)
        }
    }
}

// MARK: - Changing the device

extension CaptureDevice {
    /// Several changes to a device, applied as one, all or none. Nil fields stay
    /// as they are. Each setter of ``CaptureDevice`` is one of these.
    public struct Configuration: Sendable {
        public var activeFormat: Format?
        public var activeVideoMinFrameDuration: CMTime?
        public var activeVideoMaxFrameDuration: CMTime?
        public var focusMode: FocusMode?
        /// 0 (near) to 1 (far); locks focus there.
        public var lensPosition: Float?
        public var focusPointOfInterest: CGPoint?
        public var exposureMode: ExposureMode?
        /// With ``iso``: custom exposure.
        public var exposureDuration: CMTime?
        public var iso: Float?
        public var exposurePointOfInterest: CGPoint?
        public var whiteBalanceMode: WhiteBalanceMode?
        /// Kelvin; locks white balance there.
        public var whiteBalanceTemperature: Float?
        public var torchMode: TorchMode?
        /// 0 < level ≤ 1; turns the torch on.
        public var torchLevel: Float?
        public var videoZoomFactor: Double?
        /// Any control by v4l2-ctl name; for menus the entry's index.
        public var controls: [(name: String, value: Int64)] = []
        /// A microphone's input gain, 0 to 1 (AVAudioSession.inputGain); the one
        /// setting a microphone takes.
        public var inputGain: Float?

        public init() {}

        /// Its settings as separate changes, named as their properties: the
        /// ones that only make sense together (a custom exposure's mode,
        /// duration and ISO; the torch's mode and level) stay together.
        var parts: [(name: String, configuration: Configuration)] {
            var parts: [(String, Configuration)] = []
            func part(_ name: String, _ isSet: Bool, _ fill: (inout Configuration) -> Void) {
                guard isSet else { return }
                var configuration = Configuration()
                fill(&configuration)
                parts.append((name, configuration))
            }
            part("activeFormat", activeFormat != nil) { $0.activeFormat = activeFormat }
            part("activeVideoMinFrameDuration", activeVideoMinFrameDuration != nil) { $0.activeVideoMinFrameDuration = activeVideoMinFrameDuration }
            part("activeVideoMaxFrameDuration", activeVideoMaxFrameDuration != nil) { $0.activeVideoMaxFrameDuration = activeVideoMaxFrameDuration }
            part("focusMode", focusMode != nil) { $0.focusMode = focusMode }
            part("lensPosition", lensPosition != nil) { $0.lensPosition = lensPosition }
            part("focusPointOfInterest", focusPointOfInterest != nil) { $0.focusPointOfInterest = focusPointOfInterest }
            part("exposureMode", exposureMode != nil || exposureDuration != nil || iso != nil) {
                $0.exposureMode = exposureMode
                $0.exposureDuration = exposureDuration
                $0.iso = iso
            }
            part("exposurePointOfInterest", exposurePointOfInterest != nil) { $0.exposurePointOfInterest = exposurePointOfInterest }
            part("whiteBalanceMode", whiteBalanceMode != nil) { $0.whiteBalanceMode = whiteBalanceMode }
            part("whiteBalanceTemperature", whiteBalanceTemperature != nil) { $0.whiteBalanceTemperature = whiteBalanceTemperature }
            part("torchMode", torchMode != nil || torchLevel != nil) {
                $0.torchMode = torchMode
                $0.torchLevel = torchLevel
            }
            part("videoZoomFactor", videoZoomFactor != nil) { $0.videoZoomFactor = videoZoomFactor }
            part("controls", !controls.isEmpty) { $0.controls = controls }
            part("inputGain", inputGain != nil) { $0.inputGain = inputGain }
            return parts
        }

        var proto: Camerad_V1_DeviceConfiguration {
            var message = Camerad_V1_DeviceConfiguration()
            // A microphone's format is its one: nothing to send.
            if let format = activeFormat, format.mediaType == .video {
                message.activeFormat.fourcc = format.v4l2PixelFormat.rawValue
                message.activeFormat.width = UInt32(clamping: format.dimensions.width)
                message.activeFormat.height = UInt32(clamping: format.dimensions.height)
            }
            if let duration = activeVideoMinFrameDuration { message.activeMinFrameDuration = duration.fraction }
            if let duration = activeVideoMaxFrameDuration { message.activeMaxFrameDuration = duration.fraction }
            if let mode = focusMode { message.focusMode = Camerad_V1_FocusMode(rawValue: mode.rawValue + 1) ?? .unspecified }
            if let position = lensPosition { message.lensPosition = position }
            if let point = focusPointOfInterest { message.focusPointOfInterest = point.proto }
            if let mode = exposureMode {
                message.exposureMode = Camerad_V1_ExposureMode(rawValue: mode.rawValue + 1) ?? .unspecified
            }
            if let duration = exposureDuration { message.exposureDuration = duration.fraction }
            if let iso { message.iso = iso }
            if let point = exposurePointOfInterest { message.exposurePointOfInterest = point.proto }
            if let mode = whiteBalanceMode {
                message.whiteBalanceMode = Camerad_V1_WhiteBalanceMode(rawValue: mode.rawValue + 1) ?? .unspecified
            }
            if let kelvin = whiteBalanceTemperature { message.whiteBalanceTemperature = kelvin }
            if let mode = torchMode { message.torchMode = Camerad_V1_TorchMode(rawValue: mode.rawValue + 1) ?? .unspecified }
            if let level = torchLevel { message.torchLevel = level }
            if let factor = videoZoomFactor { message.videoZoomFactor = factor }
            if let gain = inputGain { message.inputGain = gain }
            message.controls = controls.map { name, value in
                var control = Camerad_V1_ControlValue()
                control.name = name
                control.value = value
                return control
            }
            return message
        }
    }

    /// Applies several changes as one, all or none, and takes the device's new
    /// state. Needs the configuration lock, as every setter does.
    ///
    /// - Parameters:
    ///   - configuration: the changes; nil fields stay as they are.
    ///   - persist: also store them as the device's defaults, applied
    ///     whenever it connects (the torch is never stored). Linux only.
    /// - Throws: `notLocked` without the lock; `unsupportedFormat` for a format
    ///   or frame rate the device lacks; `unsupported` for a focus, exposure,
    ///   white-balance or torch mode or setting it lacks; `invalidArgument` naming the allowed values.
    public func configure(_ configuration: Configuration, persist: Bool = false) async throws(CaptureError) {
        var request = Camerad_V1_ConfigureDeviceRequest()
        request.uniqueID = uniqueID
        request.configuration = configuration.proto
        request.persist = persist
        // Nothing to change (a microphone's one format set as it is): nothing sent.
        guard request.configuration != Camerad_V1_DeviceConfiguration() || persist else { return }
        let response = try await DaemonClient.shared.unary(CameraService.configureDevice, request)
        LiveDevices.shared.update(response.device)
        if configuration.activeFormat?.mediaType == .video { LiveSessions.shared.deviceActiveFormatWasSet(self) }
    }

    private func configure(_ change: (inout Configuration) -> Void) async throws(CaptureError) {
        var configuration = Configuration()
        change(&configuration)
        try await configure(configuration)
    }

    /// Sets `activeFormat`; sessions in this process using the device switch to
    /// the `.inputPriority` preset, as in AVFoundation. Streams running on the
    /// device, in any process, keep their own output and are told of the change.
    public func setActiveFormat(_ format: Format) async throws(CaptureError) {
        try await configure { $0.activeFormat = format }
    }

    /// The device makes a frame this often; within the active format's ranges.
    public func setActiveVideoMinFrameDuration(_ duration: CMTime) async throws(CaptureError) {
        try await configure { $0.activeVideoMinFrameDuration = duration }
    }

    /// At least the minimum; a V4L2 device runs at its minimum.
    public func setActiveVideoMaxFrameDuration(_ duration: CMTime) async throws(CaptureError) {
        try await configure { $0.activeVideoMaxFrameDuration = duration }
    }

    public func setFocusMode(_ mode: FocusMode) async throws(CaptureError) {
        try await configure { $0.focusMode = mode }
    }

    /// AVCaptureDevice.setFocusModeLocked(lensPosition:).
    public func setFocusModeLocked(lensPosition: Float) async throws(CaptureError) {
        try await configure { $0.lensPosition = lensPosition }
    }

    public func setFocusPointOfInterest(_ point: CGPoint) async throws(CaptureError) {
        try await configure { $0.focusPointOfInterest = point }
    }

    public func setExposureMode(_ mode: ExposureMode) async throws(CaptureError) {
        try await configure { $0.exposureMode = mode }
    }

    /// AVCaptureDevice.setExposureModeCustom(duration:iso:); nil keeps the current one.
    public func setExposureModeCustom(duration: CMTime?, iso: Float?) async throws(CaptureError) {
        try await configure { configuration in
            configuration.exposureMode = .custom
            configuration.exposureDuration = duration
            configuration.iso = iso
        }
    }

    public func setExposurePointOfInterest(_ point: CGPoint) async throws(CaptureError) {
        try await configure { $0.exposurePointOfInterest = point }
    }

    public func setWhiteBalanceMode(_ mode: WhiteBalanceMode) async throws(CaptureError) {
        try await configure { $0.whiteBalanceMode = mode }
    }

    /// Locks white balance at a colour temperature in kelvin (Apple's
    /// `setWhiteBalanceModeLocked(with:)` takes gains; V4L2 takes kelvin).
    public func setWhiteBalanceModeLocked(temperature: Float) async throws(CaptureError) {
        try await configure { $0.whiteBalanceTemperature = temperature }
    }

    /// Lights the torch with or without a session running, as iOS does; it
    /// stays as set until changed, or until this process's connection to
    /// camerad ends (the process exits), when it goes off.
    public func setTorchMode(_ mode: TorchMode) async throws(CaptureError) {
        try await configure { $0.torchMode = mode }
    }

    /// AVCaptureDevice.setTorchModeOn(level:).
    public func setTorchModeOn(level: Float) async throws(CaptureError) {
        try await configure { $0.torchLevel = level }
    }

    public func setVideoZoomFactor(_ factor: Double) async throws(CaptureError) {
        try await configure { $0.videoZoomFactor = factor }
    }

    /// AVAudioSession.setInputGain(_:), for a microphone: 0 to 1 over its
    /// capture volume's range (an ALSA card's capture volume control, as
    /// `amixer` shows it). Needs the lock, as a camera's settings do.
    ///
    /// - Throws: `unsupported` when ``isInputGainSettable`` is false;
    ///   `invalidArgument` outside 0 to 1; `notLocked`.
    public func setInputGain(_ gain: Float) async throws(CaptureError) {
        try await configure { $0.inputGain = gain }
    }

    /// Sets controls by v4l2-ctl name, all or none — like
    /// `v4l2-ctl -c brightness=200,horizontal_flip=1`. Needs the lock. Linux only;
    /// for menus the value is the entry's index.
    ///
    /// - Throws: `invalidArgument` naming a control the device lacks or a value
    ///   outside its range; `notLocked`.
    public func setControls(_ values: [(name: String, value: Int64)]) async throws(CaptureError) {
        try await configure { $0.controls = values }
    }
}

// MARK: - Settings as properties

/// Settings set as properties under the lock and not yet sent, per device
/// (every object of a device sees them).
final class StagedConfigurations: Sendable {
    static let shared = StagedConfigurations()
    private let staged = Mutex<[String: CaptureDevice.Configuration]>([:])

    func change(_ uniqueID: String, _ body: (inout CaptureDevice.Configuration) -> Void) {
        staged.withLock { body(&$0[uniqueID, default: CaptureDevice.Configuration()]) }
    }

    func read<T>(_ uniqueID: String, _ value: (CaptureDevice.Configuration) -> T?) -> T? {
        staged.withLock { $0[uniqueID] }.flatMap(value)
    }

    func take(_ uniqueID: String) -> CaptureDevice.Configuration? {
        staged.withLock { $0.removeValue(forKey: uniqueID) }
    }
}

extension CaptureDevice {
    /// Posted when settings set as properties could not be applied at
    /// ``unlockForConfiguration()``; `userInfo[configurationErrorKey]` is the
    /// ``CaptureError``. Linux only: AVFoundation applies each at once.
    public static let configurationDidFailNotification = Notification.Name("CaptureDeviceConfigurationDidFailNotification")
    public static let configurationErrorKey = "CaptureDeviceConfigurationError"

    /// Sends the settings set as properties since the lock (or the last commit)
    /// as one change, all or none — what ``unlockForConfiguration()`` does first —
    /// and throws what the daemon refused (the settings are then dropped).
    /// Linux only.
    public func commitConfiguration() async throws(CaptureError) {
        guard let changes = StagedConfigurations.shared.take(uniqueID) else { return }
        try await configure(changes)
    }

    /// A property set: kept for ``commitConfiguration()``, and read back at once.
    ///
    /// - Precondition: this process holds the configuration lock, as AVFoundation
    ///   requires (it raises otherwise).
    ///
    /// A value the device cannot take (`refusal` says why) is refused here, as
    /// AVFoundation's setter raises: it is not kept, so nothing set with it is
    /// lost, and the refusal is posted as ``configurationDidFailNotification``
    /// and printed to stderr (``CaptureDiagnostics``).
    private func stage(_ name: String, refusing refusal: String? = nil, _ change: (inout Configuration) -> Void) {
        precondition(read { $0.hasLock && $0.lock.pid == getpid() },
                     "set \(name) of \(uniqueID) between lockForConfiguration() and unlockForConfiguration(), as AVFoundation requires")
        if let refusal {
            let error = CaptureError(.invalidArgument, "\(name) of \(uniqueID) not set: \(refusal)")
            NotificationCenter.default.post(name: Self.configurationDidFailNotification, object: self,
                                            userInfo: [Self.configurationErrorKey: error])
            CaptureDiagnostics.report("a setting was refused", error)
            return
        }
        StagedConfigurations.shared.change(uniqueID, change)
    }

    /// Why `value` is outside `range`, if it is.
    private func outside<T: Comparable>(_ value: T, _ range: ClosedRange<T>, _ what: String) -> String? {
        range.contains(value) ? nil : "\(value) is outside \(what) \(range.lowerBound)...\(range.upperBound)"
    }

    /// Why a point of interest cannot be set, if it cannot.
    private func pointRefusal(_ point: CGPoint, supported: Bool) -> String? {
        guard supported else { return "the device has no point of interest for it" }
        return (0...1).contains(point.x) && (0...1).contains(point.y) ? nil : "\(point) is outside (0, 0)...(1, 1)"
    }

    /// Why a frame duration cannot be set with the active format (or the one set with it), if it cannot.
    private func frameDurationRefusal(_ duration: CMTime) -> String? {
        let format = activeFormat
        let ranges = format.videoSupportedFrameRateRanges
        guard !ranges.isEmpty, !ranges.contains(where: { $0.minFrameDuration <= duration && duration <= $0.maxFrameDuration }) else { return nil }
        return "\(duration.seconds) s is not among \(format)'s frame rates (\(ranges.map(\.description).joined(separator: ", ")))"
    }

    private func staged<T>(_ value: (Configuration) -> T?) -> T? {
        StagedConfigurations.shared.read(uniqueID, value)
    }
}

// MARK: - Reading the settings

/// Each setting AVFoundation has as a settable property reads back what was set
/// at once; set it only between `lockForConfiguration()` and
/// `unlockForConfiguration()`, which sends what was set as one change (see
/// ``CaptureDevice/commitConfiguration()``). The `set…` methods send each
/// change at once and throw its error.
extension CaptureDevice {
    /// The format the device runs (or will run) in. Never nil, as Apple's: a
    /// connected camera always has a mode; a device camerad offers no format
    /// of (none it can stream) answers an empty 0x0 format.
    public var activeFormat: Format {
        get { staged(\.activeFormat) ?? snapshotActiveFormat ?? formats.first ?? Format.none }
        set {
            stage("activeFormat", refusing: formats.contains(newValue) ? nil : "\(newValue) is not one of the device's formats") {
                $0.activeFormat = newValue
            }
        }
    }

    public var activeVideoMinFrameDuration: CMTime {
        get { staged(\.activeVideoMinFrameDuration) ?? CMTime(read(\.activeMinFrameDuration)) }
        set {
            stage("activeVideoMinFrameDuration", refusing: frameDurationRefusal(newValue)) { $0.activeVideoMinFrameDuration = newValue }
        }
    }

    public var activeVideoMaxFrameDuration: CMTime {
        get { staged(\.activeVideoMaxFrameDuration) ?? CMTime(read(\.activeMaxFrameDuration)) }
        set {
            stage("activeVideoMaxFrameDuration", refusing: frameDurationRefusal(newValue)) { $0.activeVideoMaxFrameDuration = newValue }
        }
    }

    /// `.locked` when the device has no focus control (a fixed lens), as
    /// Apple's fixed-focus cameras answer; `reportedFocusMode`, for camctl, tells the two apart.
    public var focusMode: FocusMode {
        get { reportedFocusMode ?? .locked }
        set {
            stage("focusMode", refusing: isFocusModeSupported(newValue) ? nil : "the device cannot focus in \(newValue)") {
                $0.focusMode = newValue
            }
        }
    }
    /// 0 (near) to 1 (far); nil when the device has no lens position.
    public var lensPosition: Float? { read { $0.settings.lensPosition < 0 ? nil : $0.settings.lensPosition } }
    public var focusPointOfInterest: CGPoint {
        get { staged(\.focusPointOfInterest) ?? read { CGPoint($0.settings.focusPointOfInterest, unset: !$0.settings.hasFocusPointOfInterest) } }
        set {
            stage("focusPointOfInterest", refusing: pointRefusal(newValue, supported: isFocusPointOfInterestSupported)) {
                $0.focusPointOfInterest = newValue
            }
        }
    }
    public var isAdjustingFocus: Bool { read(\.settings.adjustingFocus) }

    /// `.continuousAutoExposure` when the device has no exposure control: the
    /// camera exposes by itself (`reportedExposureMode`, for camctl, tells the two apart).
    public var exposureMode: ExposureMode {
        get { reportedExposureMode ?? .continuousAutoExposure }
        set {
            stage("exposureMode", refusing: isExposureModeSupported(newValue) ? nil : "the device has no \(newValue) exposure") {
                $0.exposureMode = newValue
            }
        }
    }
    public var exposureDuration: CMTime { CMTime(read(\.settings.exposureDuration)) }
    public var iso: Float { read(\.settings.iso) }
    public var exposurePointOfInterest: CGPoint {
        get {
            staged(\.exposurePointOfInterest)
                ?? read { CGPoint($0.settings.exposurePointOfInterest, unset: !$0.settings.hasExposurePointOfInterest) }
        }
        set {
            stage("exposurePointOfInterest", refusing: pointRefusal(newValue, supported: isExposurePointOfInterestSupported)) {
                $0.exposurePointOfInterest = newValue
            }
        }
    }
    public var isAdjustingExposure: Bool { read(\.settings.adjustingExposure) }
    /// Custom exposure's range (Apple has these on the active format).
    public var minExposureDuration: CMTime { CMTime(read(\.capabilities.minExposureDuration)) }
    public var maxExposureDuration: CMTime { CMTime(read(\.capabilities.maxExposureDuration)) }
    public var minISO: Float { read(\.capabilities.minIso) }
    public var maxISO: Float { read(\.capabilities.maxIso) }

    /// `.continuousAutoWhiteBalance` when the device has no white balance
    /// control: the camera balances by itself (`reportedWhiteBalanceMode`, for camctl, tells the two apart).
    public var whiteBalanceMode: WhiteBalanceMode {
        get { reportedWhiteBalanceMode ?? .continuousAutoWhiteBalance }
        set {
            stage("whiteBalanceMode", refusing: isWhiteBalanceModeSupported(newValue) ? nil : "the device has no \(newValue) white balance") {
                $0.whiteBalanceMode = newValue
            }
        }
    }
    /// Kelvin; 0 when the device has no temperature control. Linux only.
    public var whiteBalanceTemperature: Float { read(\.settings.whiteBalanceTemperature) }
    public var isAdjustingWhiteBalance: Bool { read(\.settings.adjustingWhiteBalance) }

    /// The modes as set or as camerad last said; nil when the device has no
    /// such control: camctl prints "none".
    package var reportedFocusMode: FocusMode? { staged(\.focusMode) ?? FocusMode(read(\.settings.focusMode)) }
    package var reportedExposureMode: ExposureMode? { staged(\.exposureMode) ?? ExposureMode(read(\.settings.exposureMode)) }
    package var reportedWhiteBalanceMode: WhiteBalanceMode? {
        staged(\.whiteBalanceMode) ?? WhiteBalanceMode(read(\.settings.whiteBalanceMode))
    }

    /// As set (read back at once); it shines with or without a session
    /// running, until changed or until this process exits (``setTorchMode(_:)``).
    public var torchMode: TorchMode {
        get { staged(\.torchMode) ?? TorchMode(read(\.settings.torchMode)) ?? .off }
        set {
            stage("torchMode", refusing: isTorchModeSupported(newValue) ? nil : hasTorch ? "the torch has no \(newValue) mode" : "the device has no torch") {
                $0.torchMode = newValue
            }
        }
    }
    public var torchLevel: Float { read(\.settings.torchLevel) }
    /// Whether the torch shines now, as camerad last said: not what was set
    /// and not yet applied (``torchMode`` reads that back at once).
    public var isTorchActive: Bool { TorchMode(read(\.settings.torchMode)) == .on }

    public var videoZoomFactor: Double {
        get { staged(\.videoZoomFactor) ?? read { $0.settings.videoZoomFactor == 0 ? 1 : $0.settings.videoZoomFactor } }
        set {
            stage("videoZoomFactor", refusing: outside(newValue, minAvailableVideoZoomFactor...max(minAvailableVideoZoomFactor, maxAvailableVideoZoomFactor), "the device's zoom")) {
                $0.videoZoomFactor = newValue
            }
        }
    }
}

extension CMTime {
    var fraction: Camerad_V1_Fraction {
        var fraction = Camerad_V1_Fraction()
        fraction.numerator = UInt32(clamping: value)
        fraction.denominator = UInt32(clamping: timescale)
        return fraction
    }
}

extension CGPoint {
    /// AVFoundation's default point of interest is the centre.
    init(_ point: Camerad_V1_Point, unset: Bool) {
        self = unset ? CGPoint(x: 0.5, y: 0.5) : CGPoint(x: point.x, y: point.y)
    }

    var proto: Camerad_V1_Point {
        var point = Camerad_V1_Point()
        point.x = Double(x)
        point.y = Double(y)
        return point
    }
}
