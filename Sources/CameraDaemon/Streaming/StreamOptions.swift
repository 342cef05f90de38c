import CameraIPC
import CameraMedia

/// What a stream asks for, before the device's mode is known:
/// AVCaptureVideoDataOutput's settings, its connection's, and the session's preset.
struct StreamRequest: Sendable {
    /// Nil: the device's own.
    var pixelFormat: PixelFormat?
    /// NV12 with full-range values ('420f').
    var fullRange = false
    /// Before the connection turns it; 0 each way: the preset's or the mode's, one
    /// side: the other from the mode's aspect ratio.
    var width = 0
    var height = 0
    var rotation = Rotation.none
    var mirrored = false
    /// At most one frame per this long; nil: every frame.
    var minFrameDuration: FrameDuration?
    var alwaysDiscardsLateFrames = true
    /// Frames copied into messages instead of shared memory.
    var inline = false
    /// 0: ``StreamOptions/defaultFramesInFlight``.
    var maxFramesInFlight = 0
    var preset = SessionPreset.inputPriority
}

/// A stream's settings, checked and resolved against the mode the device runs.
struct StreamOptions: Sendable {
    /// Frames a client holds at most, when it does not say.
    static let defaultFramesInFlight = 3

    let variant: FrameVariant
    /// The frames' layout (what a slot holds).
    let layout: FrameLayout
    /// Its subscription's in-flight limit, late-frame policy and frame rate.
    let policy: SubscriptionPolicy

    /// Frames copied into messages instead of shared memory.
    var inline: Bool { policy.copies }
    /// Slots a stream of these options may hold at once.
    var slotsHeld: Int { policy.slotsHeld }

    /// - Throws: `INVALID_ARGUMENT` for out-of-range numbers, `UNSUPPORTED_FORMAT`
    ///   for a format or size the device's frames cannot be made into.
    init(_ request: StreamRequest, mode: CaptureMode) throws {
        let rotation = request.rotation
        let format = request.pixelFormat ?? mode.layout.format

        // The size is the output's before the connection turns it, as in
        // AVFoundation: a portrait connection swaps it.
        let (modeWidth, modeHeight) = (Int(mode.format.width), Int(mode.format.height))
        var width = request.width
        var height = request.height
        if width == 0 && height == 0, let size = ModeSelection.outputSize(for: request.preset) {
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
        variant = FrameVariant(format: format, width: width, height: height, rotation: rotation, mirrored: request.mirrored,
                               fullRange: request.fullRange)
        do {
            layout = try FrameConverter(source: mode.layout, target: variant).targetLayout
        } catch let error as ConversionError {
            throw CameraError(.unsupportedFormat, "\(variant) from the device's \(mode.layout): \(error.message)")
        }
        if request.inline && layout.capacity > Self.maxInlineFrameSize {
            throw CameraError(.resourceExhausted,
                              "inline frames of \(variant) take \(layout.capacity) bytes, more than a message holds (\(Self.maxInlineFrameSize)); use shared memory (without --inline) or a smaller size")
        }
        let largest = max(modeWidth * modeHeight, Self.maxUpscaledPixels)
        guard width * height <= largest else {
            throw CameraError(.resourceExhausted,
                              "output \(width)x\(height) is over camerad's limit of \(largest) pixels (the device's own size, or 1920x1080 for smaller devices); ask for a smaller size")
        }

        let inFlight = request.maxFramesInFlight == 0 ? Self.defaultFramesInFlight : request.maxFramesInFlight
        guard (1...8).contains(inFlight) else {
            throw CameraError(.invalidArgument, "max_frames_in_flight \(inFlight) is out of range; use 1 to 8")
        }
        policy = SubscriptionPolicy(maxInFlight: inFlight, alwaysDiscardsLate: request.alwaysDiscardsLateFrames,
                                    minDurationNanoseconds: request.minFrameDuration?.nanoseconds ?? 0, copies: request.inline)
    }

    /// The most pixels an output may have when the device's own frames have
    /// fewer: scaling a small camera up past 1080p only costs everyone time.
    static let maxUpscaledPixels = 1920 * 1080

    /// The most shared memory a stream of these options may hold.
    var bytesHeld: Int { max(1, slotsHeld) * MediaPool.slotSize(of: .video(layout)) }

    /// The largest frame inline delivery carries: a message less room for its fields.
    static let maxInlineFrameSize = Frame.maxPayloadLength - 4096

    private static func even(_ value: Int) -> Int { max(2, value & ~1) }
}
