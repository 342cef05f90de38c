import Foundation

/// Protobuf's wire format read and written by hand for the messages that cross
/// the socket once per frame per client: a frame (an Envelope's CallMessage
/// holding a StreamResponse's FrameReady) and its release (ReleaseFrames).
/// The writers write what SwiftProtobuf writes, byte for byte.
/// SwiftProtobuf's generic decoding costs a client more than the rest of a
/// frame's handling together.
///
/// Each reader takes only the form camerad and CaptureKit write; for anything
/// else — another field, a field twice, an unexpected wire type, a truncation —
/// it returns nil and the caller decodes with SwiftProtobuf, which gives the
/// same message or the error. `StreamWireTests` holds each reader to
/// SwiftProtobuf's result on the messages written and on mutations of them.
public enum StreamWire {
    /// A message envelope's call, claimed descriptor count and payload; nil for
    /// any other envelope (and for call 0, which only a connection's end uses).
    public static func envelopeMessage(_ frame: [UInt8]) -> (callID: UInt64, fdCount: UInt32, payload: Range<Int>)? {
        frame.withUnsafeBytes { bytes in
            var reader = WireReader(bytes)
            var callID: UInt64?, fdCount: UInt32?, message: Range<Int>?
            while !reader.isAtEnd {
                switch reader.field() {
                case (1, .varint)? where callID == nil: callID = reader.varint()
                case (2, .varint)? where fdCount == nil: fdCount = reader.varint().map { UInt32(truncatingIfNeeded: $0) }
                case (4, .lengthDelimited)? where message == nil: message = reader.lengthDelimited()
                default: return nil
                }
                if reader.failed { return nil }
            }
            guard let callID, callID != 0, let message else { return nil }
            // CallMessage: its payload (field 1), or nothing for an empty one.
            var inner = WireReader(bytes, message)
            var payload: Range<Int>?
            while !inner.isAtEnd {
                guard case (1, .lengthDelimited)? = inner.field(), payload == nil else { return nil }
                payload = inner.lengthDelimited()
                if inner.failed { return nil }
            }
            return (callID, fdCount ?? 0, payload ?? message.upperBound..<message.upperBound)
        }
    }

    /// The FrameReady a StreamResponse carries; nil when it carries anything else.
    public static func frameReady(_ payload: [UInt8]) -> Camerad_V1_FrameReady? {
        payload.withUnsafeBytes { bytes in
            var reader = WireReader(bytes)
            guard case (2, .lengthDelimited)? = reader.field(), let body = reader.lengthDelimited(), reader.isAtEnd else { return nil }
            var frame = Camerad_V1_FrameReady()
            var fields = WireReader(bytes, body)
            var seen: UInt16 = 0
            while !fields.isAtEnd {
                guard let (number, type) = fields.field(), number < 16 else { return nil }
                // Scalars appear once; planes (7) repeat.
                if number != 7 {
                    guard seen & 1 << number == 0 else { return nil }
                    seen |= 1 << number
                }
                switch (number, type) {
                case (1, .varint): frame.poolID = fields.varint() ?? 0
                case (2, .varint): frame.slot = UInt32(truncatingIfNeeded: fields.varint() ?? 0)
                case (3, .varint): frame.sequence = fields.varint() ?? 0
                case (4, .varint): frame.presentationTimeNs = Int64(bitPattern: fields.varint() ?? 0)
                case (5, .varint): frame.durationNs = Int64(bitPattern: fields.varint() ?? 0)
                case (6, .varint): frame.bytesUsed = fields.varint() ?? 0
                case (7, .lengthDelimited):
                    guard let range = fields.lengthDelimited(), let plane = planeInfo(bytes, range) else { return nil }
                    frame.planes.append(plane)
                case (8, .lengthDelimited):
                    guard let range = fields.lengthDelimited() else { return nil }
                    frame.data = Data(bytes[range])
                default: return nil
                }
                if fields.failed { return nil }
            }
            return frame
        }
    }

    /// A StreamResponse carrying `frame` (without inline data): what
    /// SwiftProtobuf writes for it, byte for byte. camerad writes each frame
    /// once per output this way, for every client of the output.
    public static func frameResponse(_ frame: Camerad_V1_FrameReady) -> [UInt8] {
        precondition(frame.data.isEmpty, "inline frames are serialized by SwiftProtobuf")
        var body: [UInt8] = []
        body.reserveCapacity(48 + frame.planes.count * 12)
        WireWriter.scalar(0x08, frame.poolID, to: &body)  // field 1, varint
        WireWriter.scalar(0x10, UInt64(frame.slot), to: &body)
        WireWriter.scalar(0x18, frame.sequence, to: &body)
        WireWriter.scalar(0x20, UInt64(bitPattern: frame.presentationTimeNs), to: &body)
        WireWriter.scalar(0x28, UInt64(bitPattern: frame.durationNs), to: &body)
        WireWriter.scalar(0x30, frame.bytesUsed, to: &body)
        var plane: [UInt8] = []
        for info in frame.planes {
            plane.removeAll(keepingCapacity: true)
            WireWriter.scalar(0x08, info.offset, to: &plane)
            WireWriter.scalar(0x10, UInt64(info.bytesPerRow), to: &plane)
            WireWriter.scalar(0x18, UInt64(info.height), to: &plane)
            WireWriter.lengthDelimited(0x3A, plane, to: &body)  // planes: field 7
        }
        var response: [UInt8] = []
        response.reserveCapacity(body.count + 4)
        WireWriter.lengthDelimited(0x12, body, to: &response)  // StreamResponse.frame: field 2
        return response
    }

    private static func planeInfo(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Camerad_V1_PlaneInfo? {
        var plane = Camerad_V1_PlaneInfo()
        var reader = WireReader(bytes, range)
        var seen: UInt8 = 0
        while !reader.isAtEnd {
            guard case (let number, .varint)? = reader.field(), (1...3).contains(number), seen & 1 << number == 0 else { return nil }
            seen |= 1 << number
            let value = reader.varint() ?? 0
            switch number {
            case 1: plane.offset = value
            case 2: plane.bytesPerRow = UInt32(truncatingIfNeeded: value)
            default: plane.height = UInt32(truncatingIfNeeded: value)
            }
            if reader.failed { return nil }
        }
        return plane
    }

    /// A StreamRequest giving back `slots` of pool `poolID`: what SwiftProtobuf
    /// writes for it (slots packed).
    public static func releaseRequest(poolID: UInt64, slots: [UInt32]) -> [UInt8] {
        var packed: [UInt8] = []
        packed.reserveCapacity(slots.count * 2)
        for slot in slots { WireWriter.varint(UInt64(slot), to: &packed) }
        var release: [UInt8] = []
        release.reserveCapacity(packed.count + 16)
        WireWriter.scalar(0x08, poolID, to: &release)  // pool_id: field 1, varint
        if !packed.isEmpty { WireWriter.lengthDelimited(0x12, packed, to: &release) }  // slots: field 2, packed
        var request: [UInt8] = []
        request.reserveCapacity(release.count + 6)
        WireWriter.lengthDelimited(0x12, release, to: &request)  // StreamRequest.release: field 2
        return request
    }

    /// The ReleaseFrames a StreamRequest carries, slots packed or not; nil when
    /// it carries anything else.
    public static func releaseFrames(_ payload: [UInt8]) -> (poolID: UInt64, slots: [UInt32])? {
        payload.withUnsafeBytes { bytes in
            var reader = WireReader(bytes)
            guard case (2, .lengthDelimited)? = reader.field(), let body = reader.lengthDelimited(), reader.isAtEnd else { return nil }
            var fields = WireReader(bytes, body)
            var poolID: UInt64?
            var slots: [UInt32] = []
            while !fields.isAtEnd {
                switch fields.field() {
                case (1, .varint)? where poolID == nil:
                    poolID = fields.varint()
                case (2, .varint)?:
                    slots.append(UInt32(truncatingIfNeeded: fields.varint() ?? 0))
                case (2, .lengthDelimited)?:
                    guard let range = fields.lengthDelimited() else { return nil }
                    var packed = WireReader(bytes, range)
                    while !packed.isAtEnd {
                        guard let slot = packed.varint() else { return nil }
                        slots.append(UInt32(truncatingIfNeeded: slot))
                    }
                default:
                    return nil
                }
                if fields.failed { return nil }
            }
            return (poolID ?? 0, slots)
        }
    }
}

extension Camerad_V1_StreamRequest {
    /// A release read by hand (``StreamWire/releaseFrames(_:)``); nil for any other request.
    public static func release(wire payload: [UInt8]) -> Self? {
        guard let (poolID, slots) = StreamWire.releaseFrames(payload) else { return nil }
        var request = Self()
        request.release.poolID = poolID
        request.release.slots = slots
        return request
    }
}

/// Reads protobuf's wire format within a range of bytes. A read past the end or
/// a malformed varint sets ``failed``.
struct WireReader {
    enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5
    }

    private let bytes: UnsafeRawBufferPointer
    private var index: Int
    private let end: Int
    private(set) var failed = false

    init(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>? = nil) {
        self.bytes = bytes
        index = range?.lowerBound ?? 0
        end = range?.upperBound ?? bytes.count
    }

    var isAtEnd: Bool { failed || index >= end }

    /// The next field's number and wire type; nil at a malformed or unknown tag.
    mutating func field() -> (UInt64, WireType)? {
        guard let tag = varint(), let type = WireType(rawValue: tag & 7), tag >> 3 != 0 else {
            failed = true
            return nil
        }
        return (tag >> 3, type)
    }

    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < end {
            let byte = bytes[index]
            index += 1
            // The tenth byte may hold only the top bit.
            if shift == 63 && byte > 1 { break }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        failed = true
        return nil
    }

    /// A length-delimited field's bytes.
    mutating func lengthDelimited() -> Range<Int>? {
        guard let length = varint(), length <= UInt64(end - index) else {
            failed = true
            return nil
        }
        defer { index += Int(length) }
        return index..<index + Int(length)
    }
}

/// Writes protobuf's wire format.
enum WireWriter {
    /// A varint field, left out when zero, as proto3 writes scalars.
    static func scalar(_ tag: UInt8, _ value: UInt64, to bytes: inout [UInt8]) {
        guard value != 0 else { return }
        bytes.append(tag)
        varint(value, to: &bytes)
    }

    /// A length-delimited field (a message, bytes, packed numbers).
    static func lengthDelimited(_ tag: UInt8, _ field: [UInt8], to bytes: inout [UInt8]) {
        bytes.append(tag)
        varint(UInt64(field.count), to: &bytes)
        bytes.append(contentsOf: field)
    }

    static func varint(_ value: UInt64, to bytes: inout [UInt8]) {
        varint(value) { bytes.append($0) }
    }

    /// A varint's bytes, each handed to `byte` (a buffer on the stack, say).
    @inline(__always)
    static func varint(_ value: UInt64, _ byte: (UInt8) -> Void) {
        var value = value
        while value >= 0x80 {
            byte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        byte(UInt8(value))
    }

    /// How many bytes ``varint(_:to:)`` writes for `value`.
    static func varintLength(_ value: UInt64) -> Int {
        var (value, length) = (value, 1)
        while value >= 0x80 {
            value >>= 7
            length += 1
        }
        return length
    }
}
