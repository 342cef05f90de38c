import CameraMedia

/// camerad's own types for what a device can make: its formats, their frame
/// rates, and the mode it runs in. Backends describe themselves in these; the
/// protocol's messages are made from them in one place, at the handler edge
/// (`Handlers/ProtocolMapping.swift`).

/// How long one frame lasts: a fraction of a second (V4L2's `timeperframe`,
/// AVFoundation's `minFrameDuration`). Equal when numerator and denominator are;
/// ``compare(_:_:)`` orders durations by length.
struct FrameDuration: Hashable, Sendable, CustomStringConvertible {
    let numerator: UInt32
    let denominator: UInt32

    static func seconds(_ numerator: UInt32, per denominator: UInt32) -> FrameDuration {
        FrameDuration(numerator: numerator, denominator: denominator)
    }

    /// 1/30 s, what most webcams run at.
    static let thirtieth = seconds(1, per: 30)

    /// Whether it is a duration at all (neither part zero).
    var isValid: Bool { numerator > 0 && denominator > 0 }

    var nanoseconds: Int64 { Int64(numerator) * 1_000_000_000 / Int64(max(1, denominator)) }

    var framesPerSecond: Double { Double(denominator) / Double(max(1, numerator)) }

    /// "1/30".
    var description: String { "\(numerator)/\(denominator)" }

    /// -1, 0 or 1 as `a` is shorter than, as long as, or longer than `b`.
    static func compare(_ a: FrameDuration, _ b: FrameDuration) -> Int {
        let left = UInt64(a.numerator) * UInt64(b.denominator)
        let right = UInt64(b.numerator) * UInt64(a.denominator)
        return left < right ? -1 : left == right ? 0 : 1
    }
}

/// AVFrameRateRange: the frame durations a format allows, shortest to longest
/// (one, for a discrete V4L2 interval).
struct FrameRateRange: Hashable, Sendable {
    let minFrameDuration: FrameDuration
    let maxFrameDuration: FrameDuration

    func contains(_ duration: FrameDuration) -> Bool {
        FrameDuration.compare(minFrameDuration, duration) <= 0 && FrameDuration.compare(duration, maxFrameDuration) <= 0
    }

    /// "1/60 to 1/1 s", or "1/15 s" for one duration.
    var description: String {
        FrameDuration.compare(minFrameDuration, maxFrameDuration) == 0
            ? "\(minFrameDuration) s" : "\(minFrameDuration) to \(maxFrameDuration) s"
    }
}

/// AVCaptureDevice.Format: a pixel format at one size, with its frame rates.
struct DeviceFormat: Hashable, Sendable, CustomStringConvertible {
    let pixelFormat: PixelFormat
    let width: UInt32
    let height: UInt32
    /// The driver's name for the pixel format ("YUYV 4:2:2").
    let name: String
    let isCompressed: Bool
    let frameRateRanges: [FrameRateRange]

    /// Whether camerad can read its frames (a V4L2 device may list others).
    var isStreamable: Bool { PixelFormat.known.contains(pixelFormat) }

    /// Whether a frame duration lies in one of its ranges.
    func allows(_ duration: FrameDuration) -> Bool { frameRateRanges.contains { $0.contains(duration) } }

    /// Whether it is `pixelFormat` at `width`x`height`.
    func matches(_ pixelFormat: PixelFormat, _ width: UInt32, _ height: UInt32) -> Bool {
        self.pixelFormat == pixelFormat && self.width == width && self.height == height
    }

    /// "YUYV 640x480".
    var description: String { "\(pixelFormat.code) \(width)x\(height)" }
}

/// The mode a device runs in: one of its formats, at one frame duration.
struct CaptureMode: Equatable, Sendable, CustomStringConvertible {
    /// Its place in the device's formats, as clients number them.
    let formatIndex: Int
    let format: DeviceFormat
    let frameDuration: FrameDuration

    var layout: FrameLayout {
        FrameLayout(format: format.pixelFormat, width: Int(format.width), height: Int(format.height))
    }

    var description: String { "\(format) at \(frameDuration.framesPerSecond) fps" }
}
