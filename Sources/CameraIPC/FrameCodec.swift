/// The framing of a camerad connection: each frame is a 4-byte big-endian
/// payload length, then the payload.
public enum Frame {
    /// Bytes in the length prefix.
    public static let headerLength = 4

    /// The longest payload either side accepts: 16 MiB. A longer length prefix
    /// means a broken or hostile peer, and the connection is closed.
    public static let maxPayloadLength = 16 * 1024 * 1024

    /// Writes the length prefix of a `length`-byte payload into `bytes`' first four.
    static func writeHeader(length: Int, into bytes: UnsafeMutableRawBufferPointer) {
        bytes.storeBytes(of: UInt32(length).bigEndian, as: UInt32.self)
    }

    /// `payload` with its length prefix, ready to write.
    public static func encode(_ payload: some Collection<UInt8>) -> [UInt8] {
        precondition(payload.count <= maxPayloadLength, "frame of \(payload.count) bytes exceeds the limit")
        var bytes = [UInt8]()
        bytes.reserveCapacity(headerLength + payload.count)
        let length = UInt32(payload.count)
        bytes.append(UInt8(truncatingIfNeeded: length >> 24))
        bytes.append(UInt8(truncatingIfNeeded: length >> 16))
        bytes.append(UInt8(truncatingIfNeeded: length >> 8))
        bytes.append(UInt8(truncatingIfNeeded: length))
        bytes.append(contentsOf: payload)
        return bytes
    }
}

/// Why a byte stream cannot be framed. Each one closes the connection.
public enum FramingError: Error, Equatable, CustomStringConvertible {
    /// A length prefix above ``Frame/maxPayloadLength``.
    case frameTooLarge(length: Int, limit: Int)
    /// More file descriptors arrived than frames claimed.
    case tooManyDescriptors(count: Int, limit: Int)
    /// A frame claimed more file descriptors than arrived with it.
    case missingDescriptors(claimed: Int, available: Int)
    /// The kernel dropped ancillary data (`MSG_CTRUNC`): too many descriptors in one message.
    case descriptorsTruncated
    /// Descriptors arrived while the peer's user had this many waiting to be closed (their closes hang).
    case closesBehind(count: Int, limit: Int)

    public var description: String {
        switch self {
        case .frameTooLarge(let length, let limit):
            "frame of \(length) bytes is over the \(limit)-byte limit"
        case .tooManyDescriptors(let count, let limit):
            "\(count) file descriptors arrived that no message claimed (limit \(limit))"
        case .missingDescriptors(let claimed, let available):
            "a message claims \(claimed) file descriptors but \(available) arrived"
        case .descriptorsTruncated:
            "file descriptors were truncated in transit (too many in one message)"
        case .closesBehind(let count, let limit):
            "this user's clients sent \(count) file descriptors that camerad could not close yet (over \(limit): their servers do "
                + "not answer); send no more files until they do"
        }
    }
}

/// Turns a byte stream into frames, however the bytes are split.
///
/// Feed it bytes with ``append(_:)`` as they arrive; take complete payloads with
/// ``nextFrame()`` until it returns nil.
public struct FrameDecoder: Sendable {
    public let maxPayloadLength: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Bytes of the stream handed out as frames, headers included: the offset
    /// just after the last frame ``nextFrame()`` returned.
    public private(set) var consumedByteCount = 0

    public init(maxPayloadLength: Int = Frame.maxPayloadLength) {
        self.maxPayloadLength = maxPayloadLength
    }

    /// Bytes received but not yet returned as a frame.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfWorthIt()
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        compactIfWorthIt()
        buffer.append(contentsOf: bytes)
    }

    /// The next complete payload, or nil until more bytes arrive.
    ///
    /// - Throws: ``FramingError/frameTooLarge(length:limit:)`` as soon as the
    ///   length prefix is known to be over the limit.
    public mutating func nextFrame() throws(FramingError) -> [UInt8]? {
        guard bufferedByteCount >= Frame.headerLength else { return nil }
        var length = 0
        for offset in 0..<Frame.headerLength {
            length = length << 8 | Int(buffer[readIndex + offset])
        }
        guard length <= maxPayloadLength else {
            throw .frameTooLarge(length: length, limit: maxPayloadLength)
        }
        guard bufferedByteCount >= Frame.headerLength + length else { return nil }
        let start = readIndex + Frame.headerLength
        let payload = Array(buffer[start..<start + length])
        readIndex = start + length
        consumedByteCount += Frame.headerLength + length
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        }
        return payload
    }

    private mutating func compactIfWorthIt() {
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}
