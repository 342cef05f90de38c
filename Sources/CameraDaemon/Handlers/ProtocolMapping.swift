import CameraMedia
import CameraProtocol
import SwiftProtobuf

/// camerad's own types ⇄ the protocol's messages, in one place: the daemon
/// works in its own types (`DeviceDescription.swift`, `DeviceFormat.swift`,
/// `CameraSettings.swift`, `CameraControl.swift`, `CameraError.swift`,
/// `PhotoCapture.swift`) and turns messages into them where they come in, and
/// them into messages where they leave. The stored defaults' file is the
/// protocol's JSON, so ``DefaultsStore`` uses these too.

extension CameraError: RPCErrorConvertible {
    /// The protocol's reason for each code (its status code follows from it).
    var reason: Camerad_V1_ErrorReason {
        switch code {
        case .invalidArgument: .invalidArgument
        case .unsupportedFormat: .unsupportedFormat
        case .unsupported: .unsupported
        case .invalidState: .invalidState
        case .notLocked: .notLocked
        case .deviceLocked: .deviceLocked
        case .deviceNotFound: .deviceNotFound
        case .deviceBusy: .deviceBusy
        case .deviceDisconnected: .deviceDisconnected
        case .resourceExhausted: .resourceExhausted
        case .permissionDenied: .permissionDenied
        case .timedOut: .timedOut
        case .alreadyExists: .alreadyExists
        case .shuttingDown: .shuttingDown
        case .internalError: .internal
        }
    }

    var rpcError: RPCError { RPCError(reason, message) }
}

extension Camerad_V1_Fraction {
    init(_ duration: FrameDuration) {
        self.init()
        numerator = duration.numerator
        denominator = duration.denominator
    }

    /// `numerator / denominator` seconds (exposure durations).
    static func seconds(_ numerator: UInt32, per denominator: UInt32) -> Camerad_V1_Fraction {
        var fraction = Camerad_V1_Fraction()
        fraction.numerator = numerator
        fraction.denominator = denominator
        return fraction
    }
}

extension Camerad_V1_FrameRateRange {
    init(_ range: FrameRateRange) {
        self.init()
        minFrameDuration = Camerad_V1_Fraction(range.minFrameDuration)
        maxFrameDuration = Camerad_V1_Fraction(range.maxFrameDuration)
    }
}

extension Camerad_V1_Format {
    init(_ format: DeviceFormat) {
        self.init()
        fourcc = format.pixelFormat.fourcc
        description_p = format.name
        width = format.width
        height = format.height
        compressed = format.isCompressed
        frameRateRanges = format.frameRateRanges.map(Camerad_V1_FrameRateRange.init)
    }
}

// MARK: - Devices

extension Camerad_V1_Device {
    init(_ device: DeviceDescription) {
        self.init()
        uniqueID = device.uniqueID
        modelID = device.modelID
        localizedName = device.localizedName
        manufacturer = device.manufacturer
        position = Camerad_V1_Position(device.position)
        deviceType = switch device.deviceType {
        case .builtInWideAngleCamera: .builtInWideAngleCamera
        case .external: .external
        case .microphone: .microphone
        }
        backend = switch device.backend {
        case .virtual: .virtual
        case .v4l2: .v4L2
        case .alsa: .alsa
        }
        mediaType = device.mediaType == .audio ? .audio : .video
        if let audio = device.audio { self.audio = Camerad_V1_AudioCapabilities(audio) }
        if let gain = device.inputGain {
            audio.inputGainSettable = true
            audio.inputGain = gain
        }
        linkedUniqueIds = device.linkedUniqueIDs
        devicePath = device.devicePath ?? ""
        isConnected = device.isConnected
        unavailableReason = device.unavailableReason ?? ""
        formats = device.formats.map(Camerad_V1_Format.init)
        if let mode = device.activeMode {
            activeFormatIndex = UInt32(mode.formatIndex)
            activeMinFrameDuration = Camerad_V1_Fraction(mode.frameDuration)
            activeMaxFrameDuration = Camerad_V1_Fraction(mode.frameDuration)
        }
        controls = device.controls.map(Camerad_V1_Control.init)
        capabilities = Camerad_V1_Capabilities(device.capabilities)
        supportedPresets = device.supportedPresets.map(Camerad_V1_SessionPreset.init)
        settings = Camerad_V1_CameraSettings(device.settings)
        if let holder = device.lockHolder { lock = Camerad_V1_ConfigurationLock(holder) }
    }
}

extension Camerad_V1_Position {
    init(_ position: DeviceDescription.Position) {
        self = switch position {
        case .unspecified: .unspecified
        case .back: .back
        case .front: .front
        }
    }
}

extension DeviceDescription.Position {
    /// - Throws: `INVALID_ARGUMENT` for a position this camerad does not know.
    init(_ position: Camerad_V1_Position) throws(CameraError) {
        self = switch position {
        case .back: .back
        case .front: .front
        case .unspecified: .unspecified
        case .UNRECOGNIZED(let raw): throw Camerad_V1_Position.unknown(raw, "position")
        }
    }
}

extension Camerad_V1_ConfigurationLock {
    init(_ holder: ConfigurationLocks.Holder) {
        self.init()
        pid = holder.pid
        processName = holder.processName
        clientName = holder.clientName
    }
}

extension Camerad_V1_DeviceEvent {
    init(_ event: DeviceEvent) {
        self.init()
        kind = switch event.kind {
        case .subscribed: .subscribed
        case .connected: .connected
        case .disconnected: .disconnected
        case .changed: .changed
        case .locked: .locked
        case .unlocked: .unlocked
        }
        if let device = event.device { self.device = Camerad_V1_Device(device) }
        timestampNs = event.timestampNanoseconds
    }
}

extension VirtualCamera.Options {
    /// The options an AddVirtualCamera request asks for.
    ///
    /// - Throws: `UNSUPPORTED_FORMAT` for a mode virtual cameras do not have,
    ///   `INVALID_ARGUMENT` for a frame duration that is none or outside its format's range.
    init(_ request: Camerad_V1_AddVirtualCameraRequest) throws {
        try self.init(unthrottled: request.unthrottled, staticPicture: request.staticPicture,
                      pixelFormat: request.fourcc == 0 ? nil : PixelFormat(fourcc: request.fourcc),
                      width: request.width, height: request.height,
                      frameDuration: request.hasFrameDuration ? FrameDuration(request.frameDuration, field: "frame_duration") : nil)
        syncMarks = request.syncMarks
    }
}

// MARK: - The AVFoundation-named settings

extension Camerad_V1_Capabilities {
    init(_ capabilities: DeviceCapabilities) {
        self.init()
        focusModes = capabilities.focusModes.map(\.wire)
        focusPointOfInterestSupported = capabilities.isFocusPointOfInterestSupported
        lensPositionSupported = capabilities.isLensPositionSupported
        exposureModes = capabilities.exposureModes.map(\.wire)
        exposurePointOfInterestSupported = capabilities.isExposurePointOfInterestSupported
        whiteBalanceModes = capabilities.whiteBalanceModes.map(\.wire)
        supportsTorch = capabilities.hasTorch
        torchModes = capabilities.torchModes.map(\.wire)
        supportsFlash = capabilities.hasFlash
        flashModes = capabilities.flashModes.map(\.wire)
        minZoomFactor = capabilities.minZoomFactor
        maxZoomFactor = capabilities.maxZoomFactor
        digitalZoom = capabilities.isDigitalZoom
        if let durations = capabilities.exposureDurations {
            minExposureDuration = Camerad_V1_Fraction(exposure: durations.lowerBound)
            maxExposureDuration = Camerad_V1_Fraction(exposure: durations.upperBound)
        }
        if let range = capabilities.isoRange {
            minIso = range.lowerBound
            maxIso = range.upperBound
        }
        if let range = capabilities.whiteBalanceTemperatures {
            minWhiteBalanceTemperature = range.lowerBound
            maxWhiteBalanceTemperature = range.upperBound
        }
    }
}

extension Camerad_V1_CameraSettings {
    /// The protocol's "none" values: a lens position of -1, an ISO and a
    /// temperature of 0, an unspecified mode.
    init(_ settings: CameraSettings) {
        self.init()
        if let mode = settings.focusMode { focusMode = mode.wire }
        lensPosition = settings.lensPosition ?? -1
        if let point = settings.focusPointOfInterest { focusPointOfInterest = Camerad_V1_Point(point) }
        adjustingFocus = settings.isAdjustingFocus
        if let mode = settings.exposureMode { exposureMode = mode.wire }
        if let duration = settings.exposureDuration { exposureDuration = Camerad_V1_Fraction(exposure: duration) }
        iso = settings.iso ?? 0
        if let point = settings.exposurePointOfInterest { exposurePointOfInterest = Camerad_V1_Point(point) }
        adjustingExposure = settings.isAdjustingExposure
        if let mode = settings.whiteBalanceMode { whiteBalanceMode = mode.wire }
        whiteBalanceTemperature = settings.whiteBalanceTemperature ?? 0
        adjustingWhiteBalance = settings.isAdjustingWhiteBalance
        if let mode = settings.torchMode { torchMode = mode.wire }
        torchLevel = settings.torchLevel
        videoZoomFactor = settings.videoZoomFactor
    }
}

extension DeviceConfiguration {
    /// What a ConfigureDevice asks for (or the stored defaults hold).
    ///
    /// - Throws: `INVALID_ARGUMENT` for a mode this camerad does not know, or a
    ///   duration with a zero numerator or denominator.
    init(_ message: Camerad_V1_DeviceConfiguration) throws {
        self.init()
        if message.optionalInputGain != nil {
            throw CameraError(.invalidArgument, "input_gain is a microphone's setting; a camera has none")
        }
        if message.hasActiveFormat {
            let format = message.activeFormat
            activeFormat = FormatChoice(pixelFormat: PixelFormat(fourcc: format.fourcc), width: format.width, height: format.height)
        }
        if message.hasActiveMinFrameDuration {
            activeMinFrameDuration = try FrameDuration(message.activeMinFrameDuration, field: "active_min_frame_duration")
        }
        if message.hasActiveMaxFrameDuration {
            activeMaxFrameDuration = try FrameDuration(message.activeMaxFrameDuration, field: "active_max_frame_duration")
        }
        focusMode = try FocusMode(message.focusMode)
        if message.optionalLensPosition != nil { lensPosition = message.lensPosition }
        if message.hasFocusPointOfInterest { focusPointOfInterest = NormalizedPoint(message.focusPointOfInterest) }
        exposureMode = try ExposureMode(message.exposureMode)
        if message.hasExposureDuration { exposureDuration = try Duration(exposure: message.exposureDuration) }
        if message.optionalIso != nil { iso = message.iso }
        if message.hasExposurePointOfInterest { exposurePointOfInterest = NormalizedPoint(message.exposurePointOfInterest) }
        whiteBalanceMode = try WhiteBalanceMode(message.whiteBalanceMode)
        if message.optionalWhiteBalanceTemperature != nil { whiteBalanceTemperature = message.whiteBalanceTemperature }
        torchMode = try TorchMode(message.torchMode)
        if message.optionalTorchLevel != nil { torchLevel = message.torchLevel }
        if message.optionalVideoZoomFactor != nil { videoZoomFactor = message.videoZoomFactor }
        controls = message.controls.map(ControlValue.init)
    }
}

extension Camerad_V1_DeviceConfiguration {
    init(_ configuration: DeviceConfiguration) {
        self.init()
        if let format = configuration.activeFormat {
            var message = Camerad_V1_Format()
            message.fourcc = format.pixelFormat.fourcc
            message.width = format.width
            message.height = format.height
            activeFormat = message
        }
        if let duration = configuration.activeMinFrameDuration { activeMinFrameDuration = Camerad_V1_Fraction(duration) }
        if let duration = configuration.activeMaxFrameDuration { activeMaxFrameDuration = Camerad_V1_Fraction(duration) }
        if let mode = configuration.focusMode { focusMode = mode.wire }
        if let position = configuration.lensPosition { lensPosition = position }
        if let point = configuration.focusPointOfInterest { focusPointOfInterest = Camerad_V1_Point(point) }
        if let mode = configuration.exposureMode { exposureMode = mode.wire }
        if let duration = configuration.exposureDuration { exposureDuration = Camerad_V1_Fraction(exposure: duration) }
        if let iso = configuration.iso { self.iso = iso }
        if let point = configuration.exposurePointOfInterest { exposurePointOfInterest = Camerad_V1_Point(point) }
        if let mode = configuration.whiteBalanceMode { whiteBalanceMode = mode.wire }
        if let kelvin = configuration.whiteBalanceTemperature { whiteBalanceTemperature = kelvin }
        if let mode = configuration.torchMode { torchMode = mode.wire }
        if let level = configuration.torchLevel { torchLevel = level }
        if let factor = configuration.videoZoomFactor { videoZoomFactor = factor }
        controls = configuration.controls.map(Camerad_V1_ControlValue.init)
    }
}

extension Camerad_V1_Fraction {
    /// An exposure duration, in EXPOSURE_ABSOLUTE's 100 µs (x/10000 s).
    init(exposure duration: Duration) {
        let unit = CameraSettingsMapping.exposureUnit
        self = .seconds(UInt32(clamping: Int64((duration / unit).rounded())), per: UInt32(Duration.seconds(1) / unit))
    }
}

extension Duration {
    /// An exposure duration the protocol gives as a fraction of a second.
    ///
    /// - Throws: `INVALID_ARGUMENT` for a zero numerator or denominator.
    init(exposure fraction: Camerad_V1_Fraction) throws(CameraError) {
        let duration = try FrameDuration(fraction, field: "exposure_duration")
        self = .nanoseconds(Int64(duration.numerator) * 1_000_000_000 / Int64(duration.denominator))
    }
}

extension NormalizedPoint {
    init(_ point: Camerad_V1_Point) { self.init(x: point.x, y: point.y) }
}

extension Camerad_V1_Point {
    init(_ point: NormalizedPoint) {
        self.init()
        x = point.x
        y = point.y
    }
}

extension CameraError {
    /// A mode from a newer client, unknown to this camerad (the rule of ``RequestValues.swift``).
    static func unknownMode(_ raw: Int, _ what: String, use names: String) -> CameraError {
        CameraError(.invalidArgument, "\(what) mode \(raw) is unknown to this camerad; use \(names)")
    }
}

/// An AVFoundation-named mode and its protocol enum, whose 0 is "unspecified".
/// One rule for all of them: unspecified is nil, a number this camerad does not
/// know is INVALID_ARGUMENT, naming the modes it does know.
protocol WireMode: CaseIterable, Sendable where AllCases == [Self] {
    associatedtype Wire: SwiftProtobuf.Enum
    /// What the mode sets, for messages ("white balance").
    static var setting: String { get }
    var wire: Wire { get }
}

extension WireMode {
    /// Nil for unspecified.
    ///
    /// - Throws: `INVALID_ARGUMENT` for a mode this camerad does not know.
    init?(_ wire: Wire) throws {
        guard wire.rawValue != 0 else { return nil }
        guard let mode = Self.allCases.first(where: { $0.wire == wire }) else {
            let names = ["0 (unspecified)"] + Self.allCases.map { "\($0.wire.rawValue) (\($0))" }
            throw CameraError.unknownMode(wire.rawValue, Self.setting, use: acceptedValues(names))
        }
        self = mode
    }
}

extension FocusMode: WireMode {
    static let setting = "focus"
    var wire: Camerad_V1_FocusMode {
        switch self {
        case .locked: .locked
        case .autoFocus: .autoFocus
        case .continuousAutoFocus: .continuousAutoFocus
        }
    }
}

extension ExposureMode: WireMode {
    static let setting = "exposure"
    var wire: Camerad_V1_ExposureMode {
        switch self {
        case .locked: .locked
        case .autoExpose: .autoExpose
        case .continuousAutoExposure: .continuousAutoExposure
        case .custom: .custom
        }
    }
}

extension WhiteBalanceMode: WireMode {
    static let setting = "white balance"
    var wire: Camerad_V1_WhiteBalanceMode {
        switch self {
        case .locked: .locked
        case .autoWhiteBalance: .autoWhiteBalance
        case .continuousAutoWhiteBalance: .continuousAutoWhiteBalance
        }
    }
}

extension TorchMode: WireMode {
    static let setting = "torch"
    var wire: Camerad_V1_TorchMode {
        switch self {
        case .off: .off
        case .on: .on
        case .auto: .auto
        }
    }
}

extension FlashMode: WireMode {
    static let setting = "flash"
    var wire: Camerad_V1_FlashMode {
        switch self {
        case .off: .off
        case .on: .on
        case .auto: .auto
        }
    }
}

// MARK: - Photos

extension PhotoSettings {
    /// What a CapturePhoto asks for.
    ///
    /// - Throws: `INVALID_ARGUMENT` for a codec, flash mode or orientation this camerad does not know.
    init(_ message: Camerad_V1_PhotoSettings) throws {
        self.init()
        codec = switch message.codec {
        case .bgra: .bgra
        case .nv12: .nv12
        case .jpeg: .jpeg
        case .UNRECOGNIZED(let raw): throw Camerad_V1_PhotoCodec.unknown(raw, "codec")
        }
        quality = message.quality == 0 ? nil : Int(message.quality)
        flashMode = try FlashMode(message.flashMode) ?? .off
        maxWidth = Int(message.maxWidth)
        maxHeight = Int(message.maxHeight)
        rotation = Rotation(try message.orientation.known("orientation"))
        mirrored = message.mirrored
    }
}

extension Camerad_V1_CapturePhotoResponse {
    init(_ photo: Photo) {
        self.init()
        data = photo.data
        fourcc = photo.pixelFormat.fourcc
        width = UInt32(photo.width)
        height = UInt32(photo.height)
        if let layout = photo.layout { planes = layout.planeInfos }
        sequence = photo.sequence
        presentationTimeNs = photo.timestampNanoseconds
        flashFired = photo.flashFired
        passedThrough = photo.passedThrough
        note = photo.note ?? ""
    }
}

extension Camerad_V1_DropReason {
    init(_ reason: DropReason) {
        self = switch reason {
        case .discontinuity: .discontinuity
        case .frameWasLate: .frameWasLate
        case .outOfBuffers: .outOfBuffers
        }
    }
}

extension DropReason {
    /// Its number in stream.proto's DropReason, as a frame ring's drop record carries it.
    var wireValue: UInt32 { UInt32(Camerad_V1_DropReason(self).rawValue) }
}

extension Camerad_V1_InterruptionReason {
    init(_ reason: StreamInterruption) {
        self = switch reason {
        case .deviceDisconnected: .deviceDisconnected
        case .deviceFailed: .deviceFailed
        case .shuttingDown: .shuttingDown
        }
    }
}

extension Camerad_V1_DeviceStatistics {
    init(uniqueID: String, _ statistics: DeviceStreamer.Statistics) {
        self.init()
        self.uniqueID = uniqueID
        capturing = statistics.isCapturing
        framesCaptured = statistics.framesCaptured
        streams = UInt32(statistics.streams)
        variants = statistics.variants.map { made in
            var variant = Camerad_V1_VariantStatistics()
            variant.poolID = made.poolID
            variant.fourcc = made.variant.format.fourcc
            variant.width = UInt32(made.variant.width)
            variant.height = UInt32(made.variant.height)
            variant.rotationDegrees = UInt32(made.variant.rotation.rawValue)
            variant.mirrored = made.variant.mirrored
            variant.streams = UInt32(made.streams)
            variant.slotCount = UInt32(made.slotCount)
            variant.slotsInUse = UInt32(made.slotsInUse)
            variant.conversions = made.conversions
            variant.framesSkipped = made.framesSkipped
            variant.framesShared = made.framesShared
            variant.framesCopied = made.framesCopied
            return variant
        }
    }
}

extension Camerad_V1_FramePool {
    /// A pool as the protocol describes it; when `shared`, its memory is the
    /// envelope's descriptors in the order of ``VariantPool/descriptors``.
    init(_ pool: MediaPool, shared: Bool) {
        self.init()
        poolID = pool.id
        fdIndex = 0
        self.shared = shared
        slotSize = UInt64(pool.slotSize)
        slotCount = UInt32(pool.slotCount)
        if shared, let locations = pool.locations {
            slots = locations.map { location in
                var slot = Camerad_V1_SlotLocation()
                slot.fdIndex = UInt32(location.descriptor)
                slot.offset = UInt64(location.offset)
                return slot
            }
        }
        if let layout = pool.media.audio { audio = Camerad_V1_AudioFormat(layout) }
        if let layout = pool.media.video {
            fourcc = layout.format.fourcc
            width = UInt32(layout.width)
            height = UInt32(layout.height)
            planes = layout.planeInfos
            compressed = layout.format.isCompressed
        }
        fullRange = (pool as? VariantPool)?.variant.fullRange ?? false
    }
}

extension FrameLayout {
    /// Where the planes lie, as the protocol says it.
    var planeInfos: [Camerad_V1_PlaneInfo] {
        planes.map { plane in
            var info = Camerad_V1_PlaneInfo()
            info.offset = UInt64(plane.offset)
            info.bytesPerRow = UInt32(plane.bytesPerRow)
            info.height = UInt32(plane.height)
            return info
        }
    }
}

extension SessionPreset {
    /// - Throws: `INVALID_ARGUMENT` for a preset this camerad does not know.
    init(_ preset: Camerad_V1_SessionPreset) throws(CameraError) {
        if preset == .unspecified {
            self = .inputPriority
        } else if let name = preset.avFoundationName, let known = SessionPreset(rawValue: name) {
            self = known
        } else {
            throw Camerad_V1_SessionPreset.unknown(Int(preset.rawValue), "preset")
        }
    }
}

extension Camerad_V1_SessionPreset {
    init(_ preset: SessionPreset) {
        // Every preset camerad has is in the protocol's table (a test holds them to it).
        self = Camerad_V1_SessionPreset(avFoundationName: preset.rawValue) ?? .unspecified
    }
}

extension StreamRequest {
    /// What an OpenStream asks for.
    ///
    /// - Throws: `INVALID_ARGUMENT` for a pixel format, orientation, delivery or
    ///   preset this camerad does not know, or a minimum frame duration that is none.
    init(_ open: Camerad_V1_OpenStream) throws {
        self.init()
        let settings = open.settings
        switch settings.pixelFormat {
        case .nv12: pixelFormat = .nv12
        case .nv12FullRange:
            pixelFormat = .nv12
            fullRange = true
        case .i420: pixelFormat = .i420
        case .yuyv: pixelFormat = .yuyv
        case .bgra: pixelFormat = .bgra
        case .argb: pixelFormat = .argb
        case .native: pixelFormat = nil
        case .UNRECOGNIZED(let raw):
            throw Camerad_V1_OutputPixelFormat.unknown(raw, "pixel_format")
        }
        width = Int(settings.width)
        height = Int(settings.height)
        rotation = Rotation(try settings.orientation.known("orientation"))
        mirrored = settings.mirrored
        if settings.hasMinFrameDuration {
            minFrameDuration = try FrameDuration(settings.minFrameDuration, field: "min_frame_duration")
        }
        alwaysDiscardsLateFrames = settings.optionalAlwaysDiscardsLateVideoFrames != nil ? settings.alwaysDiscardsLateVideoFrames : true
        inline = try settings.delivery.known("delivery") == .inline
        maxFramesInFlight = Int(settings.maxFramesInFlight)
        preset = try SessionPreset(open.preset)
    }
}

extension Rotation {
    /// The turn that shows a landscape camera's frames in `orientation`
    /// (AVCaptureConnection.videoOrientation).
    init(_ orientation: Camerad_V1_VideoOrientation) {
        self = switch orientation {
        case .portrait: .clockwise90
        case .landscapeLeft: .clockwise180
        case .portraitUpsideDown: .clockwise270
        default: .none
        }
    }
}

extension Camerad_V1_ControlValue {
    init(_ control: ControlValue) {
        self.init()
        switch control.key {
        case .id(let id): self.id = id.rawValue
        case .name(let name): self.name = name
        }
        value = control.value
    }
}

extension ControlValue {
    /// By id when the message gives one, else by name.
    init(_ message: Camerad_V1_ControlValue) {
        self.init(message.id != 0 ? .id(ControlID(rawValue: message.id)) : .name(message.name), message.value)
    }
}

extension Camerad_V1_Control {
    init(_ control: CameraControl) {
        self.init()
        id = control.id.rawValue
        name = control.name
        displayName = control.displayName
        type = Camerad_V1_ControlType(rawValue: Int(control.kind.rawValue)) ?? .unspecified
        minimum = control.minimum
        maximum = control.maximum
        step = control.step
        defaultValue = control.defaultValue
        value = control.value
        flags = control.flags.rawValue
        menuItems = control.menuItems.map { item in
            var entry = Camerad_V1_MenuItem()
            entry.index = item.index
            entry.name = item.name
            entry.value = item.value
            return entry
        }
    }
}
