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
        // Cross-multiplied to compare exactly: 1/30 < 1/25.
        Int(lhs.value) * Int(rhs.timescale) < Int(rhs.value) * Int(lhs.timescale)
    }

    public static func == (lhs: CMTime, rhs: CMTime) -> Bool {
        guard lhs.isValid && rhs.isValid else { return lhs.isValid == rhs.isValid }
        return Int(lhs.value) * Int(rhs.timescale) == Int(rhs.value) * Int(lhs.timescale)
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
