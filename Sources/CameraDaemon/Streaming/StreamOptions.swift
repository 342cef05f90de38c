import CameraIPC
import CameraMedia
import CameraProtocol

/// A stream's settings, checked and resolved against the mode the device runs.
struct StreamOptions: Sendable {
    /// Frames a client holds at most, when it does not say.
    static let defaultFramesInFlight = 3
    /// Frames waiting for a client that does not discard late ones.
    static let queueLimit = 3

    let variant: FrameVariant
    /// The frames' layout (what a slot holds).
    let layout: FrameLayout
    let maxFramesInFlight: Int
    let alwaysDiscardsLateFrames: Bool
    let minFrameDurationNanoseconds: Int64
    let inline: Bool

    /// Slots a stream of these options may hold at once.
    var slotsHeld: Int { inline ? 0 : maxFramesInFlight + (alwaysDiscardsLateFrames ? 0 : Self.queueLimit) }

    /// - Throws: `INVALID_ARGUMENT` for out-of-range numbers, `UNSUPPORTED_FORMAT`
    ///   for a format or size the device's frames cannot be made into.
    init(_ settings: Camerad_V1_OutputSettings, preset: Camerad_V1_SessionPreset, mode: CaptureMode) throws {
        let rotation: Rotation = switch settings.orientation {
        case .portrait: .clockwise90
        case .landscapeLeft: .clockwise180
        case .portraitUpsideDown: .clockwise270
        default: .none
        }
        let format: PixelFormat
        switch settings.pixelFormat {
        case .nv12: format = .nv12
        case .i420: format = .i420
        case .yuyv: format = .yuyv
        case .bgra: format = .bgra
        case .native: format = mode.layout.format
        case .UNRECOGNIZED(let value):
            throw CameraError(.unsupportedFormat, "unknown pixel format \(value); use native, nv12, i420, yuyv or bgra")
        }

        // The size is the output's before the connection turns it, as in
        // AVFoundation: a portrait connection swaps it.
        let (modeWidth, modeHeight) = (Int(mode.format.width), Int(mode.format.height))
        var width = Int(settings.width)
        var height = Int(settings.height)
        if width == 0 && height == 0, let size = ModeSelection.outputSize(for: preset) {
            (width, height) = (Int(size.0), Int(size.1))
        }
        if width == 0 && height == 0 {
            (width, height) = (modeWidth, modeHeight)
        } else if width == 0 {
            width = Self.even(height * modeWidth / modeHeight)
        } else if height == 0 {
            height = Self.even(width * modeHeight / modeWidth)
        }
        if rotation.swapsDimensions { (width, height) = (height, width) }
        guard (2...8192).contains(width), (2...8192).contains(height) else {
            throw CameraError(.invalidArgument, "output size \(width)x\(height) is out of range; use 2 to 8192 each way")
        }
        variant = FrameVariant(format: format, width: width, height: height, rotation: rotation, mirrored: settings.mirrored)
        do {
            layout = try FrameConverter(source: mode.layout, target: variant).targetLayout
        } catch let error as ConversionError {
            throw CameraError(.unsupportedFormat, "\(variant) from the device's \(mode.layout): \(error.message)")
        }
        inline = settings.delivery == .inline
        if inline && layout.capacity > Self.maxInlineFrameSize {
            throw CameraError(.resourceExhausted,
                              "inline frames of \(variant) take \(layout.capacity) bytes, more than a message holds (\(Self.maxInlineFrameSize)); use shared memory (without --inline) or a smaller size")
        }
        let largest = max(modeWidth * modeHeight, Self.maxUpscaledPixels)
        guard width * height <= largest else {
            throw CameraError(.resourceExhausted,
                              "output \(width)x\(height) is over camerad's limit of \(largest) pixels (the device's own size, or 1920x1080 for smaller devices); ask for a smaller size")
        }

        let inFlight = settings.maxFramesInFlight == 0 ? Self.defaultFramesInFlight : Int(settings.maxFramesInFlight)
        guard (1...8).contains(inFlight) else {
            throw CameraError(.invalidArgument, "max_frames_in_flight \(inFlight) is out of range; use 1 to 8")
        }
        maxFramesInFlight = inFlight
        alwaysDiscardsLateFrames = settings.hasAlwaysDiscardsLateVideoFrames ? settings.alwaysDiscardsLateVideoFrames : true
        if settings.hasMinFrameDuration && settings.minFrameDuration.numerator > 0 {
            guard settings.minFrameDuration.denominator > 0 else {
                throw CameraError(.invalidArgument, "min_frame_duration has a zero denominator")
            }
            minFrameDurationNanoseconds = Int64(settings.minFrameDuration.numerator) * 1_000_000_000
                / Int64(settings.minFrameDuration.denominator)
        } else {
            minFrameDurationNanoseconds = 0
        }
    }

    /// The most pixels an output may have when the device's own frames have
    /// fewer: scaling a small camera up past 1080p only costs everyone time.
    static let maxUpscaledPixels = 1920 * 1080

    /// The most shared memory a stream of these options may hold.
    var bytesHeld: Int { max(1, slotsHeld) * VariantPool.slotSize(of: layout) }

    /// The largest frame inline delivery carries: a message less room for its fields.
    static let maxInlineFrameSize = Frame.maxPayloadLength - 4096

    private static func even(_ value: Int) -> Int { max(2, value & ~1) }
}
