import CameraIPC
import Foundation
import Synchronization
import SwiftProtobuf

/// One call being served: where its responses go, where its requests arrive,
/// and the task running its handler.
///
/// It ends exactly once — by its handler returning or throwing, by the client
/// cancelling, or by the connection closing — and after that sends nothing.
final class ServerCall: Sendable {
    /// Requests a client may send ahead of its handler before the call fails.
    static let requestBufferLimit = 256

    let callID: UInt64
    let method: String
    // Strong: the connection drops its calls when they end, which breaks the cycle.
    private let connection: RPCServerConnection
    let requests: AsyncThrowingStream<RawMessage, any Error>
    private let requestSink: AsyncThrowingStream<RawMessage, any Error>.Continuation

    private struct State {
        var ended = false
        var task: Task<Void, Never>?
    }
    private let state = Mutex(State())

    init(callID: UInt64, method: String, connection: RPCServerConnection) {
        self.callID = callID
        self.method = method
        self.connection = connection
        (requests, requestSink) = AsyncThrowingStream.makeStream(
            bufferingPolicy: .bufferingOldest(Self.requestBufferLimit))
    }

    /// Runs the handler in a task of its own and ends the call with what it gives.
    func run(_ handler: @escaping RPCRouter.Handler, request: [UInt8], context: RPCContext) {
        let task = Task { [self] in
            do {
                try await handler(self, request, context)
                end(with: nil)
            } catch let error as RPCError {
                end(with: error)
            } catch let error as any RPCErrorConvertible {
                end(with: error.rpcError)
            } catch is CancellationError {
                end(with: .cancelled)
            } catch {
                end(with: RPCError(.internal, "\(method) failed: \(error)"))
            }
        }
        let endedAlready = state.withLock { state -> Bool in
            state.task = task
            return state.ended
        }
        if endedAlready { task.cancel() }
    }

    /// Sends one response, unless the call has ended. A response too large for
    /// a message ends the call with RESOURCE_EXHAUSTED instead.
    ///
    /// - Parameter threshold: drop the response rather than queue it when the
    ///   client is more than this many bytes behind.
    /// - Returns: whether it was sent or queued.
    func send(_ payload: [UInt8], descriptors: [OwnedFD], droppingAbove threshold: Int?) -> Bool {
        let result = state.withLock { state -> SocketConnection.SendResult in
            guard !state.ended else { return .closed }
            let bytes = EnvelopeCodec.encodeMessage(callID: callID, payload: payload, descriptorCount: descriptors.count)
            return connection.socket.send(bytes, descriptors: descriptors, droppingAbove: threshold)
        }
        switch result {
        case .written, .queued:
            return true
        case .dropped, .closed:
            return false
        case .tooLarge:
            end(with: RPCError(.resourceExhausted,
                               "\(method.echoed)'s response of \(payload.count) bytes is over the \(Frame.maxPayloadLength)-byte message limit; ask for less"))
            cancelHandler()
            return false
        }
    }

    var hasEnded: Bool { state.withLock { $0.ended } }

    /// A request message of a bidirectional call arrived.
    func receive(_ message: RawMessage) {
        if case .dropped = requestSink.yield(message) {
            end(with: RPCError(.resourceExhausted,
                               "more than \(Self.requestBufferLimit) requests queued on \(method); wait for responses before sending more"))
            cancelHandler()
        }
    }

    /// The client half-closed: no more requests.
    func finishRequests() {
        requestSink.finish()
    }

    /// Ends the call with `error`, or OK when nil. Later calls do nothing.
    ///
    /// - Parameter notify: false when the connection is gone and nothing can be sent.
    func end(with error: RPCError?, notify: Bool = true) {
        let first = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.ended = true
            if notify {
                let status = error?.status ?? Camerad_V1_Status()
                _ = connection.socket.send(EnvelopeCodec.encode(EnvelopeCodec.end(callID: callID, status: status)))
            }
            return true
        }
        guard first else { return }
        requestSink.finish()
        connection.callDidEnd(callID)
    }

    /// Stops the handler's task; it sees cancellation at its next suspension.
    func cancelHandler() {
        state.withLock { $0.task }?.cancel()
    }
}

/// Where a handler sends its responses.
public struct ResponseWriter<Response: SwiftProtobuf.Message>: Sendable {
    let call: ServerCall

    /// Sends one response; descriptors ride with it. Never blocks.
    ///
    /// - Returns: false when the call has ended or the client is gone.
    @discardableResult
    public func send(_ response: Response, descriptors: [OwnedFD] = []) -> Bool {
        call.send(Self.serialize(response), descriptors: descriptors, droppingAbove: nil)
    }

    /// Sends one response unless the client is more than `threshold` bytes behind
    /// in reading, in which case it is dropped. For responses a slow client may
    /// skip, such as frames superseded by newer ones.
    ///
    /// - Returns: whether it was sent.
    @discardableResult
    public func send(_ response: Response, descriptors: [OwnedFD] = [], droppingAbove threshold: Int) -> Bool {
        call.send(Self.serialize(response), descriptors: descriptors, droppingAbove: threshold)
    }

    /// Sends a response serialized once for many calls (the same frame to every
    /// stream of a variant). Never blocks.
    ///
    /// - Returns: false when the call has ended or the client is gone.
    @discardableResult
    public func send(serialized response: [UInt8], descriptors: [OwnedFD] = []) -> Bool {
        call.send(response, descriptors: descriptors, droppingAbove: nil)
    }

    /// Whether the call has ended (cancelled, or the client gone).
    public var isClosed: Bool { call.hasEnded }

    /// Ends the call now with `error` (nil: OK), from anywhere; the handler's task
    /// is cancelled and sees it at its next suspension.
    public func end(with error: RPCError?) {
        call.end(with: error)
        call.cancelHandler()
    }

    private static func serialize(_ response: Response) -> [UInt8] {
        // Serializing a message built in memory cannot fail.
        try! response.serializedBytes()
    }
}
