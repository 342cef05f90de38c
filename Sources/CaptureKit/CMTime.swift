import CameraIPC

/// A time as a rational number of seconds, `value / timescale`: CoreMedia's
/// CMTime, which AVFoundation uses for frame durations.
public struct CMTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var value: Int64
    public var timescale: Int32

    public init(value: Int64, timescale: Int32) {
        self.value = value
        self.timescale = timescale
    }

    /// A time not set (timescale 0).
    public static let invalid = CMTime(value: 0, timescale: 0)
    public static let zero = CMTime(value: 0, timescale: 1)

    public var isValid: Bool { timescale > 0 }

    /// The time in seconds; NaN when invalid.
    public var seconds: Double { isValid ? Double(value) / Double(timescale) : .nan }

    public static func < (lhs: CMTime, rhs: CMTime) -> Bool {
        compare(lhs, rhs) < 0
    }

    public static func == (lhs: CMTime, rhs: CMTime) -> Bool {
        guard lhs.isValid && rhs.isValid else { return lhs.isValid == rhs.isValid }
        return compare(lhs, rhs) == 0
    }

    /// -1, 0 or 1, exactly: the fractions are cross-multiplied in 128 bits, so
    /// nanosecond timestamps (about 10¹² × 10⁹) do not overflow.
    private static func compare(_ lhs: CMTime, _ rhs: CMTime) -> Int {
        if lhs.timescale == rhs.timescale { return lhs.value < rhs.value ? -1 : lhs.value == rhs.value ? 0 : 1 }
        let left = lhs.value.multipliedFullWidth(by: Int64(rhs.timescale))
        let right = rhs.value.multipliedFullWidth(by: Int64(lhs.timescale))
        if left.high != right.high { return left.high < right.high ? -1 : 1 }
        return left.low < right.low ? -1 : left.low == right.low ? 0 : 1
    }

    public func hash(into hasher: inout Hasher) {
        guard isValid, value != 0 else { return hasher.combine(isValid) }
        let divisor = gcd(abs(value), Int64(timescale))
        hasher.combine(value / divisor)
        hasher.combine(Int64(timescale) / divisor)
    }

    public var description: String { isValid ? "\(value)/\(timescale) s" : "invalid" }
}

/// CoreMedia's CMTimeMake.
public func CMTimeMake(value: Int64, timescale: Int32) -> CMTime {
    CMTime(value: value, timescale: timescale)
}

private func gcd(_ a: Int64, _ b: Int64) -> Int64 {
    b == 0 ? max(a, 1) : gcd(b, a % b)
}

/// CMClock: a clock that media is stamped on. camerad stamps every frame and
/// period on one, the host's monotonic clock (CLOCK_MONOTONIC), so there is
/// one clock to read: ``CMClockGetHostTimeClock()``, which is also every
/// session's ``CaptureSession/synchronizationClock``.
public struct CMClock: Hashable, Sendable {
    /// The time now, as ``CMClockGetTime(_:)`` reads it.
    public var time: CMTime { CMTime(nanoseconds: monotonicNanoseconds()) }
}

/// The host's clock (CLOCK_MONOTONIC): the one every sample buffer's presentation time is on.
public func CMClockGetHostTimeClock() -> CMClock { CMClock() }

/// The clock's time now, in nanoseconds.
public func CMClockGetTime(_ clock: CMClock) -> CMTime { clock.time }
