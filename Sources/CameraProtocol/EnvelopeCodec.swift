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
        // envelope always names a call and says what it is.
        guard envelope.callID != 0 else { throw MalformedEnvelope(reason: "call id 0") }
        guard envelope.kind != nil else { throw MalformedEnvelope(reason: "no start, message, end or cancel") }
        let claimed = try descriptors.take(Int(envelope.fdCount))
        return (envelope, claimed)
    }

    /// `envelope` as frame payload bytes, with `fdCount` set to `descriptorCount`.
    public static func encode(_ envelope: Camerad_V1_Envelope, descriptorCount: Int = 0) -> [UInt8] {
        var envelope = envelope
        envelope.fdCount = UInt32(descriptorCount)
        // Serializing a message made in memory cannot fail.
        return try! envelope.serializedBytes()
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

    public static func cancel(callID: UInt64) -> Camerad_V1_Envelope {
        var envelope = Camerad_V1_Envelope()
        envelope.callID = callID
        envelope.cancel = Camerad_V1_CallCancel()
        return envelope
    }
}
