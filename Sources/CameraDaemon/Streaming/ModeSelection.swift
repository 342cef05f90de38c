import CameraMedia

/// How a session preset picks a device mode, and the output size it asks for.
///
/// The device runs one mode at a time. A mode configured under the device's
/// lock (``CameraBackend/configuredMode``: `activeFormat` and frame durations,
/// `camctl set --format --fps`, or stored defaults) is what every start runs,
/// whatever the preset. Otherwise the first stream to start an idle device
/// picks it from its preset:
///
/// | preset | mode | output size when the client names none |
/// |---|---|---|
/// | `.inputPriority`, unspecified | the device's active format and frame duration | the mode's |
/// | `.vga640x480`, `.hd1280x720`, `.hd1920x1080`, `.hd4K3840x2160` | a format of exactly that size, else the smallest larger one, else the largest | the preset's |
/// | `.high` | the largest format up to 1920x1080 that reaches 30 fps | the mode's |
/// | `.photo` | the largest format | the mode's |
/// | `.medium` | the smallest format of at least 480x360 | 480x360 |
/// | `.low` | the smallest format of at least 192x144 | 192x144 |
///
/// Among formats of one size, the active format's pixel format wins, then NV12,
/// YUYV, others, and MJPEG last (it must be decoded). The frame duration is the
/// active one if the format allows it, else 1/30 s, else the format's shortest.
/// Only formats camerad can read are candidates (a V4L2 device may list others).
/// A later stream whose preset wants another mode gets the running mode,
/// scaled to its own output size, and is told so (StreamStarted.note,
/// CaptureKit's `CaptureConnection.modeNote`). Only the lock holder changes the
/// running mode; every stream then gets FormatChanged and keeps its own output.
/// AVCaptureSession.Preset: what a stream asks of the device's mode.
/// An AVCaptureSession.Preset, named as AVFoundation names it (its raw value:
/// the protocol's table, `Camerad_V1_SessionPreset.avFoundationNames`).
enum SessionPreset: String, Sendable, CaseIterable {
    /// The device's active format and frame duration (also when none is named).
    case inputPriority
    case high
    case medium
    case low
    case photo
    case vga640x480
    case hd1280x720
    case hd1920x1080
    case hd4K3840x2160
}

enum ModeSelection {
    static func mode(for preset: SessionPreset, formats: [DeviceFormat], active: CaptureMode) -> CaptureMode {
        let candidates = formats.indices.filter { formats[$0].isStreamable }
            .sorted { rank(formats[$0], active) < rank(formats[$1], active) }
        func area(_ index: Int) -> UInt64 { UInt64(formats[index].width) * UInt64(formats[index].height) }
        func atLeast(_ width: UInt32, _ height: UInt32) -> [Int] {
            candidates.filter { formats[$0].width >= width && formats[$0].height >= height }
        }
        let chosen: Int?
        switch preset {
        case .vga640x480, .hd1280x720, .hd1920x1080, .hd4K3840x2160:
            let (width, height) = outputSize(for: preset)!
            let exact = candidates.first { formats[$0].width == width && formats[$0].height == height }
            let larger = atLeast(width, height).min { area($0) < area($1) }
            chosen = exact ?? larger ?? candidates.max { area($0) < area($1) }
        case .high:
            let fitting = candidates.filter {
                formats[$0].width <= 1920 && formats[$0].height <= 1080 && reaches30(formats[$0])
            }
            chosen = (fitting.isEmpty ? candidates : fitting).max { area($0) < area($1) }
        case .photo:
            chosen = candidates.max { area($0) < area($1) }
        case .medium, .low:
            let (width, height) = outputSize(for: preset)!
            chosen = atLeast(width, height).min { area($0) < area($1) } ?? candidates.max { area($0) < area($1) }
        case .inputPriority:
            return active
        }
        guard let index = chosen else { return active }
        // `max`/`min` keep the first of equals, which the ranking put first.
        return CaptureMode(formatIndex: index, format: formats[index],
                           frameDuration: frameDuration(for: formats[index], preferring: active.frameDuration))
    }

    /// The output size a preset asks for; nil when it takes the mode's.
    static func outputSize(for preset: SessionPreset) -> (UInt32, UInt32)? {
        switch preset {
        case .vga640x480: (640, 480)
        case .hd1280x720: (1280, 720)
        case .hd1920x1080: (1920, 1080)
        case .hd4K3840x2160: (3840, 2160)
        case .medium: (480, 360)
        case .low: (192, 144)
        case .high, .photo, .inputPriority: nil
        }
    }

    /// `preferred` if the format allows it, else 1/30 s, else its shortest duration.
    static func frameDuration(for format: DeviceFormat, preferring preferred: FrameDuration) -> FrameDuration {
        if format.allows(preferred) { return preferred }
        if format.allows(.thirtieth) { return .thirtieth }
        return format.frameRateRanges.first?.minFrameDuration ?? .thirtieth
    }

    private static func reaches30(_ format: DeviceFormat) -> Bool {
        format.frameRateRanges.contains { FrameDuration.compare($0.minFrameDuration, .thirtieth) <= 0 }
    }

    private static func rank(_ format: DeviceFormat, _ active: CaptureMode) -> Int {
        switch format.pixelFormat {
        case active.format.pixelFormat: 0
        case .nv12: 1
        case .yuyv: 2
        case .mjpeg: 4
        default: 3
        }
    }
}
