/// The sequence number and capture time a virtual camera writes into each frame,
/// as two bands of large black and white blocks (top and bottom), so a client can
/// read them back after scaling, pixel-format conversion or JPEG.
///
/// A frame whose two bands disagree was torn: its top and bottom come from
/// different frames.
///
/// The 88 bits — 32 of sequence, 48 of timestamp in microseconds, 8 of CRC-8 —
/// fill ``Layout/rows`` × ``Layout/columns`` blocks in each band, most significant
/// bit first, row by row. Block edges are proportional to the frame's size, so
/// the same geometry holds at any scale.
public struct FrameStamp: Hashable, Sendable, CustomStringConvertible {
    public var sequence: UInt32
    /// CLOCK_MONOTONIC microseconds, modulo 2^48 (about 8.9 years).
    public var timestampMicroseconds: UInt64

    public init(sequence: UInt32, timestampMicroseconds: UInt64) {
        self.sequence = sequence
        self.timestampMicroseconds = timestampMicroseconds & Self.timestampMask
    }

    /// The stamp for frame `sequence` captured at `timestampNanoseconds`.
    public init(sequence: UInt32, timestampNanoseconds: Int64) {
        self.init(sequence: sequence, timestampMicroseconds: UInt64(max(0, timestampNanoseconds)) / 1000)
    }

    static let timestampMask: UInt64 = (1 << 48) - 1

    public var description: String { "#\(sequence) @\(timestampMicroseconds)µs" }

    /// Where the blocks are.
    public enum Layout {
        public static let rows = 4
        public static let columns = 22
        public static let bitCount = rows * columns

        /// Each band's height: a sixth of the frame.
        public static func bandHeight(frameHeight: Int) -> Int { frameHeight / 6 }

        /// The pixel rectangle of block `index` (0 ..< bitCount) in the top or bottom band.
        public static func block(_ index: Int, top: Bool, width: Int, height: Int) -> (x: Range<Int>, y: Range<Int>) {
            let row = index / columns
            let column = index % columns
            let band = bandHeight(frameHeight: height)
            let bandTop = top ? 0 : height - band
            let x = column * width / columns..<(column + 1) * width / columns
            let y = bandTop + row * band / rows..<bandTop + (row + 1) * band / rows
            return (x, y)
        }
    }

    /// The 88 bits to draw, most significant first.
    public var bits: [Bool] {
        let bytes = payloadBytes
        let all = bytes + [Self.crc8(bytes)]
        return all.flatMap { byte in (0..<8).map { byte & (0x80 >> $0) != 0 } }
    }

    /// The stamp the bits spell, or nil when they do not check out.
    public init?(bits: [Bool]) {
        guard bits.count == Layout.bitCount else { return nil }
        var bytes = [UInt8](repeating: 0, count: 11)
        for (index, bit) in bits.enumerated() where bit {
            bytes[index / 8] |= 0x80 >> UInt8(index % 8)
        }
        guard Self.crc8(Array(bytes[0..<10])) == bytes[10] else { return nil }
        let sequence = bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let timestamp = bytes[4..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        self.init(sequence: sequence, timestampMicroseconds: timestamp)
    }

    private var payloadBytes: [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: sequence >> (24 - 8 * UInt32($0))) }
            + (0..<6).map { UInt8(truncatingIfNeeded: timestampMicroseconds >> (40 - 8 * UInt64($0))) }
    }

    /// CRC-8, polynomial 0x07.
    static func crc8(_ bytes: [UInt8]) -> UInt8 {
        var crc: UInt8 = 0
        for byte in bytes {
            crc ^= byte
            for _ in 0..<8 {
                crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1
            }
        }
        return crc
    }
}
