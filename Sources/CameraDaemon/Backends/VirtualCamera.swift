import CameraIPC
import CameraMedia
import Synchronization

/// A camera built into the daemon: a test-pattern generator with webcam-like
/// formats and controls. The default on a machine with no camera, and what most
/// tests use.
///
/// Formats: YUYV, NV12 and MJPEG at 640x480, 1280x720 and 1920x1080 — and at one
/// size more if it was made with one (a 4K test camera, say) — each with one
/// frame-rate range of 1–60 fps (1–30 at 1080p and above). The picture is
/// ``TestPattern``.
final class VirtualCamera: CameraBackend {
    static let pixelFormats: [PixelFormat] = [.yuyv, .nv12, .mjpeg]
    static let sizes: [Size] = [Size(640, 480), Size(1280, 720), Size(1920, 1080)]
    static let modelID = "camerad-virtual"

    /// A frame size.
    struct Size: Equatable, Sendable, CustomStringConvertible {
        let width: UInt32
        let height: UInt32

        init(_ width: UInt32, _ height: UInt32) {
            self.width = width
            self.height = height
        }

        var description: String { "\(width)x\(height)" }
    }

    /// The bounds of a size of its own: even, 64x64 to 4096x2160.
    static func allows(_ size: Size) -> Bool {
        size.width % 2 == 0 && size.height % 2 == 0 && (64...4096).contains(size.width) && (64...2160).contains(size.height)
    }

    /// The highest frame rate at a size.
    static func maxFrameRate(height: UInt32) -> UInt32 { height >= 1080 ? 30 : 60 }

    /// The formats of a virtual camera made with the three sizes only.
    static let standardFormats = formats(adding: nil)

    /// The formats of a virtual camera, in the order they are listed: for each
    /// pixel format, the three sizes and then `size`, if it is another.
    static func formats(adding size: Size?) -> [DeviceFormat] {
        let sizes = Self.sizes + (size.map { Self.sizes.contains($0) ? [] : [$0] } ?? [])
        return pixelFormats.flatMap { pixelFormat in
            sizes.map { size in
                DeviceFormat(
                    pixelFormat: pixelFormat, width: size.width, height: size.height, name: pixelFormat.description,
                    isCompressed: pixelFormat.isCompressed,
                    frameRateRanges: [FrameRateRange(minFrameDuration: .seconds(1, per: maxFrameRate(height: size.height)),
                                                     maxFrameDuration: .seconds(1, per: 1))])
            }
        }
    }

    /// The mode a virtual camera starts in: YUYV 640x480 at 30 fps, like most webcams.
    static let defaultFormatIndex = 0
    static let defaultFrameDuration = FrameDuration.thirtieth

    /// How a virtual camera starts and makes frames.
    struct Options: Sendable {
        /// A size beyond the three, offered in every pixel format.
        var extraSize: Size?
        /// Index into its formats of the mode it starts in.
        var formatIndex = VirtualCamera.defaultFormatIndex
        var frameDuration = VirtualCamera.defaultFrameDuration
        /// Frames as fast as they are delivered: the next made while one is
        /// converted (benchmarks).
        var unthrottled = false
        /// Bars drawn once, only the stamp bands after (benchmarks).
        var staticPicture = false
        /// A flash at every whole second of CLOCK_MONOTONIC (``SyncMarks``):
        /// the frame whose exposure holds it is drawn bright.
        var syncMarks = false
    }

    let index: Int
    let uniqueID: String
    let executor: DeviceExecutor
    let localizedName: String
    let position: DeviceDescription.Position
    let options: Options
    let formats: [DeviceFormat]
    let supportedPresets: [SessionPreset]

    struct State {
        var controls: [CameraControl]
        var configuredMode: CaptureMode?
        /// The emulated flash lights the picture until then (CLOCK_MONOTONIC ns).
        var strobeUntil: Int64 = 0
    }
    let state: OrderedMutex<State>
    let settingsState = CameraSettingsState(supportsPointsOfInterest: true, settling: .milliseconds(400))

    init(index: Int, localizedName: String? = nil, position: DeviceDescription.Position = .unspecified, options: Options = Options()) {
        self.index = index
        uniqueID = "virtual-\(index)"
        executor = DeviceExecutor(label: uniqueID)
        self.localizedName = localizedName.flatMap { $0.isEmpty ? nil : $0 } ?? "Virtual Camera \(index)"
        self.position = position
        self.options = options
        formats = Self.formats(adding: options.extraSize)
        supportedPresets = DeviceCapabilities.presets(for: formats)
        state = OrderedMutex(.cameraState, State(controls: Self.defaultControls()))
    }

    var controls: [CameraControl] { state.withLock { $0.controls } }

    /// The mode it was created in.
    var startingMode: CaptureMode {
        CaptureMode(formatIndex: options.formatIndex, format: formats[options.formatIndex],
                    frameDuration: options.frameDuration)
    }

    var activeMode: CaptureMode { configuredMode ?? startingMode }

    var configuredMode: CaptureMode? { state.withLock { $0.configuredMode } }

    func clearConfiguredMode() {
        state.withLock { $0.configuredMode = nil }
    }

    func configure(_ mode: CaptureMode) throws {
        state.withLock { $0.configuredMode = mode }
    }

    func describe() -> DeviceDescription {
        description(modelID: Self.modelID, localizedName: localizedName, manufacturer: "camerad", position: position,
                    deviceType: .builtInWideAngleCamera, backend: .virtual, activeMode: activeMode)
    }
}
