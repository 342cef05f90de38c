import CameraMedia
import CameraProtocol

/// camerad's own types ⇄ the protocol's messages, in one place: the daemon
/// works in its own types (`DeviceFormat.swift`, `ControlID.swift`,
/// `CameraError.swift`) and turns them into messages only where they leave it.

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

extension FrameDuration {
    init(_ fraction: Camerad_V1_Fraction) {
        self.init(numerator: fraction.numerator, denominator: fraction.denominator)
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

extension Camerad_V1_Device {
    /// Names `mode` as the device's active format and frame durations.
    mutating func setActive(_ mode: CaptureMode) {
        activeFormatIndex = UInt32(mode.formatIndex)
        activeMinFrameDuration = Camerad_V1_Fraction(mode.frameDuration)
        activeMaxFrameDuration = Camerad_V1_Fraction(mode.frameDuration)
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
            return variant
        }
    }
}

extension Camerad_V1_FramePool {
    /// A pool as the protocol describes it; its memfd is descriptor 0 when `shared`.
    init(_ pool: VariantPool, shared: Bool) {
        self.init()
        poolID = pool.id
        fdIndex = 0
        self.shared = shared
        slotSize = UInt64(pool.slotSize)
        slotCount = UInt32(pool.slotCount)
        fourcc = pool.layout.format.fourcc
        width = UInt32(pool.layout.width)
        height = UInt32(pool.layout.height)
        planes = pool.layout.planeInfos
        compressed = pool.layout.format.isCompressed
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
    init(_ preset: Camerad_V1_SessionPreset) {
        self = switch preset {
        case .high: .high
        case .medium: .medium
        case .low: .low
        case .photo: .photo
        case .vga640X480: .vga640x480
        case .hd1280X720: .hd1280x720
        case .hd1920X1080: .hd1920x1080
        case .hd4K3840X2160: .hd4K3840x2160
        case .inputPriority, .unspecified, .UNRECOGNIZED: .inputPriority
        }
    }
}

extension Camerad_V1_SessionPreset {
    init(_ preset: SessionPreset) {
        self = switch preset {
        case .inputPriority: .inputPriority
        case .high: .high
        case .medium: .medium
        case .low: .low
        case .photo: .photo
        case .vga640x480: .vga640X480
        case .hd1280x720: .hd1280X720
        case .hd1920x1080: .hd1920X1080
        case .hd4K3840x2160: .hd4K3840X2160
        }
    }
}

extension StreamRequest {
    /// What an OpenStream asks for.
    ///
    /// - Throws: `UNSUPPORTED_FORMAT` for a pixel format this camerad does not
    ///   know; `INVALID_ARGUMENT` for a minimum frame duration over zero.
    init(_ open: Camerad_V1_OpenStream) throws {
        self.init()
        let settings = open.settings
        switch settings.pixelFormat {
        case .nv12: pixelFormat = .nv12
        case .i420: pixelFormat = .i420
        case .yuyv: pixelFormat = .yuyv
        case .bgra: pixelFormat = .bgra
        case .native: pixelFormat = nil
        case .UNRECOGNIZED(let value):
            throw CameraError(.unsupportedFormat, "unknown pixel format \(value); use native, nv12, i420, yuyv or bgra")
        }
        width = Int(settings.width)
        height = Int(settings.height)
        rotation = Rotation(settings.orientation)
        mirrored = settings.mirrored
        if settings.hasMinFrameDuration && settings.minFrameDuration.numerator > 0 {
            guard settings.minFrameDuration.denominator > 0 else {
                throw CameraError(.invalidArgument, "min_frame_duration has a zero denominator")
            }
            minFrameDuration = FrameDuration(settings.minFrameDuration)
        }
        alwaysDiscardsLateFrames = settings.hasAlwaysDiscardsLateVideoFrames ? settings.alwaysDiscardsLateVideoFrames : true
        inline = settings.delivery == .inline
        maxFramesInFlight = Int(settings.maxFramesInFlight)
        preset = SessionPreset(open.preset)
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
    init(_ id: ControlID, _ value: Int64) {
        self.init()
        self.id = id.rawValue
        self.value = value
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
