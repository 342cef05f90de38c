import CameraIPC
import SwiftProtobuf
import Synchronization

/// The client's record of one open call: where its responses go.
final class ClientCall: Sendable {
    let callID: UInt64
    let method: String
    let responses: AsyncThrowingStream<RawMessage, any Error>
    private let sink: AsyncThrowingStream<RawMessage, any Error>.Continuation
    private let ended = Mutex(false)

    init(callID: UInt64, method: String, onCancel: @escaping @Sendable () -> Void) {
        self.callID = callID
        self.method = method
        (responses, sink) = AsyncThrowingStream.makeStream()
        sink.onTermination = { termination in
            if case .cancelled = termination { onCancel() }
        }
    }

    var hasEnded: Bool { ended.withLock { $0 } }

    func receive(_ message: RawMessage) {
        sink.yield(message)
    }

    /// The server ended the call (nil: OK), or the connection did.
    func end(with error: RPCError?) {
        let first = ended.withLock { ended in
            defer { ended = true }
            return !ended
        }
        guard first else { return }
        if let error {
            sink.finish(throwing: error)
        } else {
            sink.finish()
        }
    }
}

/// An open bidirectional call: send requests, read responses, half-close or cancel.
public final class BidirectionalCall<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>: Sendable {
    private let client: RPCClient
    private let call: ClientCall
    /// The server's responses.
    public let responses: ResponseStream<Response>

    init(client: RPCClient, call: ClientCall) {
        self.client = client
        self.call = call
        responses = .responses(call.responses, method: call.method)
    }

    /// Sends one request. Never blocks.
    ///
    /// - Throws: ``RPCError`` (`connectionLost`) when the connection is gone, or
    ///   (`invalidState`) when the call has ended.
    public func send(_ request: Request, descriptors: [OwnedFD] = []) throws {
        guard !call.hasEnded else { throw RPCError(.invalidState, "\(call.method) has ended; start a new call") }
        let payload: [UInt8] = try request.serializedBytes()
        try client.send(EnvelopeCodec.encodeMessage(callID: call.callID, payload: payload, descriptorCount: descriptors.count),
                        descriptors: descriptors)
    }

    /// Tells the server no more requests will come; responses keep arriving.
    public func finishSending() {
        var envelope = Camerad_V1_Envelope()
        envelope.callID = call.callID
        envelope.end = Camerad_V1_CallEnd()
        try? client.send(envelope)
    }

    /// Gives up on the call; ``responses`` ends with `CANCELLED`.
    public func cancel() {
        client.cancel(call)
    }
}
