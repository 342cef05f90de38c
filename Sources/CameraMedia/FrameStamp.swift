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
            let y = bandTop + row * band / rows..<bandTop + (row + 1) * band / rows
            return (columnSpan(column, width: width), y)
        }

        /// The pixel columns of block column `column` in a frame `width` wide.
        public static func columnSpan(_ column: Int, width: Int) -> Range<Int> {
            column * width / columns..<(column + 1) * width / columns
        }
    }

    /// The 88 bits to draw, most significant first.
    public var bits: [Bool] {
        let word = self.word
        return (0..<Layout.bitCount).map { Self.bit($0, of: word) }
    }

    /// The 88 bits as one number: bit `index` of ``bits`` is ``bit(_:of:)``.
    var word: UInt128 {
        let payload = UInt128(sequence) << 48 | UInt128(timestampMicroseconds)
        return payload << 8 | UInt128(Self.crc8(payload))
    }

    /// Bit `index` (0 ..< ``Layout/bitCount``, most significant first) of a ``word``.
    static func bit(_ index: Int, of word: UInt128) -> Bool {
        word >> (Layout.bitCount - 1 - index) & 1 != 0
    }

    /// The stamp the bits spell, or nil when they do not check out.
    public init?(bits: [Bool]) {
        guard bits.count == Layout.bitCount else { return nil }
        let word = bits.reduce(UInt128(0)) { $0 << 1 | ($1 ? 1 : 0) }
        let payload = word >> 8
        guard Self.crc8(payload) == UInt8(truncatingIfNeeded: word) else { return nil }
        self.init(sequence: UInt32(truncatingIfNeeded: payload >> 48),
                  timestampMicroseconds: UInt64(truncatingIfNeeded: payload) & Self.timestampMask)
    }

    /// CRC-8, polynomial 0x07, of the payload's 10 bytes (32 bits of sequence,
    /// 48 of timestamp), most significant first.
    static func crc8(_ payload: UInt128) -> UInt8 {
        var crc: UInt8 = 0
        for byte in (0..<10).reversed() {
            crc ^= UInt8(truncatingIfNeeded: payload >> (8 * byte))
            for _ in 0..<8 {
                crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1
            }
        }
        return crc
    }
}
