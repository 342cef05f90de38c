import Foundation
import CameraIPC
import SwiftProtobuf

/// Turns frames into envelopes and back: the framing layer between the
/// transport (bytes and descriptors) and the calls.
public enum EnvelopeCodec {
    /// Why a frame is not an envelope. Each one closes the connection.
    public struct MalformedEnvelope: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { "malformed envelope: \(reason)" }
    }

    /// The envelope in `frame`, with the descriptors it claims taken from `descriptors`.
    ///
    /// - Throws: ``MalformedEnvelope`` when the bytes do not decode, name no call or
    ///   carry no kind; ``FramingError`` when the envelope claims descriptors that did not arrive.
    public static func decode(
        _ frame: [UInt8], descriptors: inout DescriptorQueue
    ) throws -> (Camerad_V1_Envelope, [OwnedFD]) {
        let envelope: Camerad_V1_Envelope
        do {
            envelope = try Camerad_V1_Envelope(serializedBytes: frame)
        } catch {
            throw MalformedEnvelope(reason: "\(error)")
        }
        // Protobuf decodes many random byte strings without complaint; a real
        // envelope always names a call (or, ending the connection, call 0) and
        // says what it is.
        guard envelope.kind != nil else { throw MalformedEnvelope(reason: "no start, message, end or cancel") }
        if envelope.callID == 0, !envelope.endsConnection { throw MalformedEnvelope(reason: "call id 0") }
        let claimed = try descriptors.take(Int(envelope.fdCount))
        return (envelope, claimed)
    }

    /// A message envelope's call and message, read without SwiftProtobuf (see
    /// ``StreamWire``), its descriptors taken from `descriptors`; nil when
    /// `frame` is another kind of envelope, or in a form left to ``decode(_:descriptors:)``.
    static func decodeMessage(_ frame: [UInt8], descriptors: inout DescriptorQueue) throws -> (callID: UInt64, message: RawMessage)? {
        guard let envelope = StreamWire.envelopeMessage(frame) else { return nil }
        let claimed = try descriptors.take(Int(envelope.fdCount))
        return (envelope.callID, RawMessage(payload: Array(frame[envelope.payload]), descriptors: claimed))
    }

    /// `envelope` as frame payload bytes, with `fdCount` set to `descriptorCount`.
    public static func encode(_ envelope: Camerad_V1_Envelope, descriptorCount: Int = 0) -> [UInt8] {
        var envelope = envelope
        envelope.fdCount = UInt32(descriptorCount)
        // Serializing a message made in memory cannot fail.
        return try! envelope.serializedBytes()
    }

    /// A message envelope's bytes, written directly: what SwiftProtobuf writes for
    /// `Envelope{call_id, fd_count, message{payload}}`, without building and
    /// serializing that message around an already serialized payload. Frames and
    /// releases go this way, once per client per frame.
    public static func encodeMessage(callID: UInt64, payload: [UInt8], descriptorCount: Int = 0) -> [UInt8] {
        withMessagePrefix(callID: callID, payloadCount: payload.count, descriptorCount: descriptorCount) { prefix in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(prefix.count + payload.count)
            bytes.append(contentsOf: prefix)
            bytes.append(contentsOf: payload)
            return bytes
        }
    }

    /// What ``encodeMessage(callID:payload:descriptorCount:)`` writes before the
    /// payload's own bytes, on the stack: a message envelope is this prefix and
    /// then the payload, so a payload serialized once (a frame, for every client
    /// of a variant) goes out as it is, behind each call's prefix, uncopied.
    public static func withMessagePrefix<Result>(
        callID: UInt64, payloadCount: Int, descriptorCount: Int, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        // Tags and varints: at most 1 + 10, 1 + 10, 1 + 5 and 1 + 5 bytes.
        try withUnsafeTemporaryAllocation(byteCount: 48, alignment: 1) { buffer in
            var count = 0
            func byte(_ value: UInt8) {
                buffer[count] = value
                count += 1
            }
            func varint(_ value: UInt64) { WireWriter.varint(value, byte) }
            if callID != 0 {
                byte(0x08)  // call_id: field 1, varint
                varint(callID)
            }
            if descriptorCount > 0 {
                byte(0x10)  // fd_count: field 2, varint
                varint(UInt64(descriptorCount))
            }
            byte(0x22)  // message: field 4, length-delimited
            guard payloadCount > 0 else {
                byte(0)  // an empty CallMessage
                return try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            }
            varint(UInt64(1 + WireWriter.varintLength(UInt64(payloadCount)) + payloadCount))
            byte(0x0A)  // CallMessage.payload: field 1, length-delimited
            varint(UInt64(payloadCount))
            return try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    public static func start(callID: UInt64, method: String, request: [UInt8]) -> Camerad_V1_Envelope {
        var envelope = Camerad_V1_Envelope()
        envelope.callID = callID
        envelope.start.method = method
        envelope.start.request = Data(request)
        return envelope
    }

    public static func message(callID: UInt64, payload: [UInt8]) -> Camerad_V1_Envelope {
        var envelope = Camerad_V1_Envelope()
        envelope.callID = callID
        envelope.message.payload = Data(payload)
        return envelope
    }

    public static func end(callID: UInt64, status: Camerad_V1_Status) -> Camerad_V1_Envelope {
        var envelope = Camerad_V1_Envelope()
        envelope.callID = callID
        envelope.end.status = status
        return envelope
    }

    /// The server's last word on a connection it ends: a CallEnd for call 0.
    public static func connectionEnd(_ error: RPCError) -> Camerad_V1_Envelope {
        end(callID: 0, status: error.status)
    }

    public static func cancel(callID: UInt64) -> Camerad_V1_Envelope {
        var envelope = Camerad_V1_Envelope()
        envelope.callID = callID
        envelope.cancel = Camerad_V1_CallCancel()
        return envelope
    }
}

extension Camerad_V1_Envelope {
    /// A CallEnd for call 0: the server ends the whole connection with its status.
    public var endsConnection: Bool {
        guard callID == 0, case .end? = kind else { return false }
        return true
    }
}
