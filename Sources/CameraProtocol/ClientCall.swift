import CameraIPC
import SwiftProtobuf
import Synchronization

/// The client's record of one open call: where its responses go — an
/// AsyncThrowingStream read by a task, or a handler called on the event loop's
/// thread (no hop: a frame stream's messages).
final class ClientCall: Sendable {
    let callID: UInt64
    let method: String
    let responses: AsyncThrowingStream<RawMessage, any Error>
    private let sink: AsyncThrowingStream<RawMessage, any Error>.Continuation
    private let handler: RawHandler?
    private let ended = OrderedMutex(.rpcClient, false)

    /// Called on the event loop's thread: each message in order, then the end once.
    struct RawHandler: Sendable {
        let message: @Sendable (RawMessage) -> Void
        let end: @Sendable (RPCError?) -> Void
    }

    init(callID: UInt64, method: String, handler: RawHandler? = nil, onCancel: @escaping @Sendable () -> Void) {
        self.callID = callID
        self.method = method
        self.handler = handler
        (responses, sink) = AsyncThrowingStream.makeStream()
        // With a handler the responses go to it: the stream is never read.
        if handler == nil {
            sink.onTermination = { termination in
                if case .cancelled = termination { onCancel() }
            }
        }
    }

    var hasEnded: Bool { ended.withLock { $0 } }

    func receive(_ message: RawMessage) {
        if let handler {
            // The end may have come from another thread (a cancel): nothing after it.
            guard !hasEnded else { return }
            handler.message(message)
        } else {
            sink.wake(with: message)
        }
    }

    /// The server ended the call (nil: OK), or the connection did.
    func end(with error: RPCError?) {
        let first = ended.withLock { ended in
            defer { ended = true }
            return !ended
        }
        guard first else { return }
        if let handler {
            handler.end(error)
        } else if let error {
            sink.wakeFinished(throwing: error)
        } else {
            sink.wakeFinished()
        }
    }
}

/// What a call's response handler gets, on the event loop's thread.
public enum CallEvent<Response: SwiftProtobuf.Message>: Sendable {
    case message(Received<Response>)
    /// The call ended: nil when the server ended it with OK; then nothing more comes.
    case end(RPCError?)
}

/// What a raw call handler gets, on the event loop's thread: each response's
/// bytes, undecoded, with its descriptors.
public enum RawCallEvent: Sendable {
    case message(payload: [UInt8], descriptors: [OwnedFD])
    /// The call ended: nil when the server ended it with OK; then nothing more comes.
    case end(RPCError?)
}

/// An open bidirectional call: send requests, read responses, half-close or cancel.
public final class BidirectionalCall<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>: Sendable {
    private let client: RPCClient
    private let call: ClientCall
    /// The server's responses; empty when they go to a handler instead
    /// (``RPCClient/bidirectional(_:handler:)``).
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
        try send(serialized: try request.serializedBytes(), descriptors: descriptors)
    }

    /// Sends one request already serialized (by ``StreamWire``, say). Never blocks.
    public func send(serialized payload: [UInt8], descriptors: [OwnedFD] = []) throws {
        guard !call.hasEnded else { throw RPCError(.invalidState, "\(call.method) has ended; start a new call") }
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
