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
        /// The client half-closed.
        var requestsFinished = false
        /// Set once the handler takes its requests on the loop.
        var onLoop: RequestsOnLoop?
    }

    /// Requests handled on the event loop's thread (``takeRequestsOnLoop``).
    private struct RequestsOnLoop {
        let body: @Sendable (RawMessage) throws -> Void
        /// Requests that came while the handler's task still handled those
        /// queued before; nil once it has caught up and the loop calls `body`.
        var pending: [RawMessage]? = []
        /// How the requests ended: the client half-closed (success), `body`
        /// threw, or the handler was cancelled.
        var outcome: Result<Void, any Error>?
        var waiting: CheckedContinuation<Void, any Error>?
    }
    private let state = OrderedMutex(.callState, State())
    /// Whether the call's end went out. A lock of its own, held across each
    /// response's sendmsg (which orders them, and the end after them): a
    /// sendmsg wakes the client, whose next request (a ReleaseFrames, say)
    /// is then read on the loop, which must not wait for the sender.
    private let output = OrderedMutex(.callOutput, false)

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
        if endedAlready { task.cancelUnlocked() }
    }

    /// Sends one response, unless the call has ended. A response too large for
    /// a message ends the call with RESOURCE_EXHAUSTED instead.
    ///
    /// - Parameter threshold: drop the response rather than queue it when the
    ///   client is more than this many bytes behind.
    /// - Returns: whether it was sent or queued.
    func send(_ payload: [UInt8], descriptors: [OwnedFD], droppingAbove threshold: Int?) -> Bool {
        let result = output.withLock { ended -> SocketConnection.SendResult in
            guard !ended else { return .closed }
            // The payload as it is, behind this call's envelope prefix: nothing is
            // copied or allocated per call (a frame goes to many).
            return EnvelopeCodec.withMessagePrefix(callID: callID, payloadCount: payload.count,
                                                   descriptorCount: descriptors.count) { prefix in
                payload.withUnsafeBytes { payload in
                    connection.socket.send(prefix, payload, descriptors: descriptors, droppingAbove: threshold)
                }
            }
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

    /// A request message of a bidirectional call arrived (on the loop's thread).
    func receive(_ message: RawMessage) {
        enum Route { case stream, held, body(@Sendable (RawMessage) throws -> Void), refused, dropped }
        let route = state.withLock { state -> Route in
            guard !state.ended, var onLoop = state.onLoop else { return state.ended ? .dropped : .stream }
            guard onLoop.outcome == nil else { return .dropped }
            guard var pending = onLoop.pending else { return .body(onLoop.body) }
            guard pending.count < Self.requestBufferLimit else { return .refused }
            pending.append(message)
            onLoop.pending = pending
            state.onLoop = onLoop
            return .held
        }
        switch route {
        case .stream:
            if case .dropped = requestSink.wake(with: message) { refuseRequests() }
        case .body(let body):
            do { try body(message) } catch { finishRequestsOnLoop(.failure(error)) }
        case .refused:
            refuseRequests()
        case .held, .dropped:
            break
        }
    }

    private func refuseRequests() {
        end(with: RPCError(.resourceExhausted,
                           "more than \(Self.requestBufferLimit) requests queued on \(method); wait for responses before sending more"))
        cancelHandler()
    }

    /// The client half-closed: no more requests.
    func finishRequests() {
        state.withLock { $0.requestsFinished = true }
        requestSink.wakeFinished()
        finishRequestsOnLoop(.success(()))
    }

    /// Hands the requests still to come to `body`, called on the event loop's
    /// thread as each arrives — no task, no hop — after those already queued
    /// (read from `queued`, on this task), in order. Returns when the client
    /// half-closes; throws what `body` throws (no request reaches it after
    /// that), or CancellationError when the call ends first.
    func takeRequestsOnLoop(
        draining queued: inout AsyncThrowingStream<RawMessage, any Error>.AsyncIterator,
        _ body: @escaping @Sendable (RawMessage) throws -> Void
    ) async throws {
        state.withLock { state in
            precondition(state.onLoop == nil, "\(method)'s requests are taken on the loop once")
            // Half-closed already: those queued are all there is.
            state.onLoop = RequestsOnLoop(body: body, outcome: state.requestsFinished ? .success(()) : nil)
        }
        // Nothing more goes into the stream: what it holds came first.
        requestSink.wakeFinished()
        try await withTaskCancellationHandler {
            do {
                while let message = try await queued.next() { try body(message) }
                // Then those that came meanwhile, until none is left and the loop takes over.
                while let pending = state.withLock({ state -> [RawMessage]? in
                    let pending = state.onLoop?.pending ?? []
                    state.onLoop?.pending = pending.isEmpty ? nil : []
                    return pending.isEmpty ? nil : pending
                }) {
                    for message in pending { try body(message) }
                }
            } catch {
                finishRequestsOnLoop(.failure(error))
            }
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if let outcome = state.onLoop?.outcome { return outcome }
                    state.onLoop?.waiting = continuation
                    return nil
                }
                if let outcome { continuation.wake(with: outcome) }
            }
        } onCancel: {
            finishRequestsOnLoop(.failure(CancellationError()))
        }
    }

    /// The requests taken on the loop end (the first outcome counts).
    private func finishRequestsOnLoop(_ outcome: Result<Void, any Error>) {
        let waiting = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard state.onLoop != nil, state.onLoop?.outcome == nil else { return nil }
            state.onLoop?.outcome = outcome
            defer { state.onLoop?.waiting = nil }
            return state.onLoop?.waiting
        }
        waiting?.wake(with: outcome)
    }

    /// Ends the call with `error`, or OK when nil. Later calls do nothing.
    ///
    /// - Parameter notify: false when the connection is gone and nothing can be sent.
    func end(with error: RPCError?, notify: Bool = true) {
        let first = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.ended = true
            return true
        }
        guard first else { return }
        output.withLock { ended in
            ended = true
            guard notify else { return }
            let status = error?.status ?? Camerad_V1_Status()
            _ = connection.socket.send(EnvelopeCodec.encode(EnvelopeCodec.end(callID: callID, status: status)))
        }
        requestSink.wakeFinished()
        connection.callDidEnd(callID)
    }

    /// Stops the handler's task; it sees cancellation at its next suspension.
    func cancelHandler() {
        state.withLock { $0.task }?.cancelUnlocked()
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
