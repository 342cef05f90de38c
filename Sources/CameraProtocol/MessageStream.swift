import CameraIPC
import SwiftProtobuf

/// One message of a call as it came off the wire, not yet decoded, with the
/// descriptors that came with it.
struct RawMessage: Sendable {
    var payload: [UInt8]
    var descriptors: [OwnedFD]
}

/// A message with the file descriptors that came with it.
public struct Received<Message: SwiftProtobuf.Message>: Sendable {
    public let message: Message
    /// In the order they were sent; closed when the last reference goes.
    public let descriptors: [OwnedFD]
}

/// The messages of one call, decoded as they are read, in the order they were
/// sent. Serves both sides: a bidirectional call's requests on the server
/// (``RequestStream``) and a call's responses on the client (``ResponseStream``).
public struct MessageStream<Message: SwiftProtobuf.Message>: AsyncSequence, Sendable {
    public typealias Element = Message
    let base: AsyncThrowingStream<RawMessage, any Error>
    /// The error for a message that does not decode.
    let undecodable: @Sendable (_ detail: String) -> RPCError
    /// The call whose requests these are, on the server; nil for responses.
    let call: ServerCall?
    /// A request's check once decoded (its numbers' ranges); nil for responses.
    let check: (@Sendable (Message) throws -> Void)?

    public struct AsyncIterator: AsyncIteratorProtocol {
        var received: WithDescriptors.AsyncIterator

        public mutating func next() async throws -> Message? {
            try await received.next()?.message
        }

        /// On the server: hands the requests still to come to `body` on the
        /// event loop's thread as each arrives — no task, no hop; for requests
        /// as frequent as frames (a stream's releases). Returns when the client
        /// half-closes. `body` must not block: every call of the connection
        /// waits behind it. A request that does not decode, or an error `body`
        /// throws, is thrown here and no request reaches `body` after it; the
        /// call ending first throws CancellationError. `read`, when given, reads
        /// a request by hand first (``StreamWire``); where it gives nil,
        /// SwiftProtobuf decodes.
        public mutating func forEachOnLoop(
            reading read: (@Sendable ([UInt8]) -> Message?)? = nil, _ body: @escaping @Sendable (Message) throws -> Void
        ) async throws {
            try await received.forEachOnLoop(reading: read) { try body($0.message) }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(received: withDescriptors.makeAsyncIterator())
    }

    /// The same messages with the descriptors that came with each.
    public var withDescriptors: WithDescriptors { WithDescriptors(base: base, undecodable: undecodable, call: call, check: check) }

    /// ``MessageStream/withDescriptors``: messages and their descriptors.
    public struct WithDescriptors: AsyncSequence, Sendable {
        public typealias Element = Received<Message>
        let base: AsyncThrowingStream<RawMessage, any Error>
        let undecodable: @Sendable (String) -> RPCError
        let call: ServerCall?
        let check: (@Sendable (Message) throws -> Void)?

        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncThrowingStream<RawMessage, any Error>.AsyncIterator
            let undecodable: @Sendable (String) -> RPCError
            let call: ServerCall?
            let check: (@Sendable (Message) throws -> Void)?

            public mutating func next() async throws -> Received<Message>? {
                guard let raw = try await base.next() else { return nil }
                return try Self.decode(raw, undecodable, check)
            }

            /// ``MessageStream/AsyncIterator/forEachOnLoop(_:)`` with descriptors.
            public mutating func forEachOnLoop(
                reading read: (@Sendable ([UInt8]) -> Message?)? = nil, _ body: @escaping @Sendable (Received<Message>) throws -> Void
            ) async throws {
                guard let call else { preconditionFailure("only a server's requests are handled on its loop") }
                let (undecodable, check) = (self.undecodable, self.check)
                try await call.takeRequestsOnLoop(draining: &base) { raw in
                    // What `read` gives (a stream's releases, read by hand) has no number to check: any pool and slot is answered.
                    if let message = read?(raw.payload) {
                        try body(Received(message: message, descriptors: raw.descriptors))
                    } else {
                        try body(Self.decode(raw, undecodable, check))
                    }
                }
            }

            private static func decode(
                _ raw: RawMessage, _ undecodable: @Sendable (String) -> RPCError, _ check: (@Sendable (Message) throws -> Void)?
            ) throws -> Received<Message> {
                let message: Message
                do {
                    message = try Message(serializedBytes: raw.payload)
                } catch {
                    throw undecodable("\(error)")
                }
                try check?(message)
                return Received(message: message, descriptors: raw.descriptors)
            }
        }

        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(base: base.makeAsyncIterator(), undecodable: undecodable, call: call, check: check)
        }
    }
}

/// The requests of a bidirectional call. Ends when the client half-closes;
/// throws `INVALID_ARGUMENT` on a request that does not decode.
public typealias RequestStream<Request: SwiftProtobuf.Message> = MessageStream<Request>

/// The responses of a call. Ends when the server ends the call; throws
/// ``RPCError`` when it ends it with an error. Dropping the iteration (or
/// cancelling its task) cancels the call.
public typealias ResponseStream<Response: SwiftProtobuf.Message> = MessageStream<Response>

extension MessageStream {
    /// A call's requests, each checked (``CheckedMessage``) as it is decoded.
    static func requests(of call: ServerCall) -> Self where Message: CheckedMessage {
        MessageStream(base: call.requests, undecodable: { [method = call.method] in RPCError.undecodableRequest(method, $0) },
                      call: call, check: { try $0.checkFields() })
    }

    static func responses(_ base: AsyncThrowingStream<RawMessage, any Error>, method: String) -> Self {
        MessageStream(base: base, undecodable: { RPCError.undecodableResponse(method, $0) }, call: nil, check: nil)
    }
}
