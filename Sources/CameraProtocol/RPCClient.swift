import CameraIPC
import Foundation
import Synchronization
import SwiftProtobuf

/// A client's connection to camerad: one socket, any number of concurrent calls.
///
/// ``connect(to:clientName:loop:)`` says Hello before it returns. When the
/// connection breaks, every open call fails with `CONNECTION_LOST`.
public final class RPCClient: SocketConnectionDelegate, @unchecked Sendable {
    public let socket: SocketConnection
    /// What the server said to Hello.
    public private(set) var hello = Camerad_V1_HelloResponse()

    private struct State {
        var nextCallID: UInt64 = 1
        var calls: [UInt64: ClientCall] = [:]
        var closedBecause: RPCError?
    }
    private let state = OrderedMutex(.rpcClient, State())

    private init(socket: SocketConnection) {
        self.socket = socket
    }

    /// Connects to the daemon at `path` and says Hello.
    ///
    /// - Throws: ``RPCError`` — `DAEMON_UNAVAILABLE` when nothing listens at
    ///   `path`, `VERSION_MISMATCH` when the daemon speaks another protocol version.
    public static func connect(to path: String, clientName: String, loop: EventLoop) async throws -> RPCClient {
        let client: RPCClient
        do {
            let fd = try UnixSocket.connect(to: path)
            client = RPCClient(socket: try SocketConnection(socket: fd, loop: loop, maxDescriptors: DescriptorQueue.clientLimit))
            try client.socket.start(delegate: client)
        } catch {
            throw RPCError(.daemonUnavailable,
                           "cannot reach camerad at \(path) (\(error)); start camerad, or pass --socket / set CAMERAD_SOCKET")
        }
        var request = Camerad_V1_HelloRequest()
        request.protocolVersion = CameraService.protocolVersion
        request.clientName = clientName
        do {
            client.hello = try await client.unary(CameraService.hello, request)
        } catch {
            client.close()
            throw error
        }
        return client
    }

    /// Closes the connection; open calls fail with `CONNECTION_LOST`.
    public func close() {
        socket.close()
    }

    /// Whether the connection is gone.
    public var isClosed: Bool { socket.isClosed }

    // MARK: - Calls

    /// Makes a unary call and waits for its response.
    ///
    /// - Throws: ``RPCError`` with the server's status, or `CONNECTION_LOST`.
    ///   Cancelling the task cancels the call.
    public func unary<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request, descriptors: [OwnedFD] = []
    ) async throws -> Response {
        let call = try startCall(method.name, request: try request.serializedBytes(), descriptors: descriptors)
        var response: Response?
        for try await message in ResponseStream<Response>.responses(call.responses, method: method.name) where response == nil {
            response = message
        }
        guard let response else {
            if Task.isCancelled { throw RPCError.cancelled }
            throw RPCError(.internal, "\(method.name) ended without a response; a camerad bug")
        }
        return response
    }

    /// Starts a server-streaming call. The call ends when the server ends it, or
    /// when the iteration of the returned stream stops early.
    public func serverStreaming<Request, Response>(
        _ method: Method<Request, Response>, _ request: Request
    ) throws -> ResponseStream<Response> {
        let call = try startCall(method.name, request: try request.serializedBytes(), descriptors: [])
        return .responses(call.responses, method: method.name)
    }

    /// Starts a bidirectional call.
    public func bidirectional<Request, Response>(
        _ method: Method<Request, Response>
    ) throws -> BidirectionalCall<Request, Response> {
        BidirectionalCall(client: self, call: try startCall(method.name, request: [], descriptors: []))
    }

    /// Starts a bidirectional call whose responses go to `handler`, called on
    /// the event loop's thread as each arrives — no task, no hop — then once
    /// with the end. The handler must not block: every call of this connection
    /// waits behind it. A response that does not decode cancels the call and
    /// ends it with `INTERNAL`.
    public func bidirectional<Request, Response>(
        _ method: Method<Request, Response>, handler: @escaping @Sendable (CallEvent<Response>) -> Void
    ) throws -> BidirectionalCall<Request, Response> {
        try bidirectional(method) { (event: RawCallEvent) throws in
            switch event {
            case .message(let payload, let descriptors):
                handler(.message(Received(message: try Response(serializedBytes: payload), descriptors: descriptors)))
            case .end(let error):
                handler(.end(error))
            }
        }
    }

    /// ``bidirectional(_:handler:)`` with the responses' bytes, for a caller
    /// that decodes them itself (a stream's frames, with ``StreamWire``). An
    /// error `handler` throws for a message cancels the call and ends it with
    /// `INTERNAL`, naming the error.
    public func bidirectional<Request, Response>(
        _ method: Method<Request, Response>, handler: @escaping @Sendable (RawCallEvent) throws -> Void
    ) throws -> BidirectionalCall<Request, Response> {
        let started = OrderedMutex<ClientCall?>(.rpcClient, nil)
        let raw = ClientCall.RawHandler(
            message: { [weak self] raw in
                do {
                    try handler(.message(payload: raw.payload, descriptors: raw.descriptors))
                } catch {
                    guard let self, let call = started.withLock({ $0 }) else { return }
                    self.cancel(call, endingWith: RPCError.undecodableResponse(method.name, "\(error)"))
                }
            },
            end: { try? handler(.end($0)) })
        let call = try startCall(method.name, request: [], descriptors: [], handler: raw)
        started.withLock { $0 = call }
        return BidirectionalCall(client: self, call: call)
    }

    private func startCall(_ method: String, request: [UInt8], descriptors: [OwnedFD],
                           handler: ClientCall.RawHandler? = nil) throws -> ClientCall {
        let call = try state.withLock { state throws -> ClientCall in
            if let error = state.closedBecause { throw error }
            defer { state.nextCallID += 1 }
            let callID = state.nextCallID
            let call = ClientCall(callID: callID, method: method, handler: handler) { [weak self] in
                guard let self, let call = self.state.withLock({ $0.calls[callID] }) else { return }
                self.cancel(call)
            }
            state.calls[callID] = call
            return call
        }
        do {
            try send(EnvelopeCodec.start(callID: call.callID, method: method, request: request), descriptors: descriptors)
        } catch let error as RPCError {
            finish(call, with: error)
            throw error
        }
        return call
    }

    func send(_ envelope: Camerad_V1_Envelope, descriptors: [OwnedFD] = []) throws {
        try send(EnvelopeCodec.encode(envelope, descriptorCount: descriptors.count), descriptors: descriptors)
    }

    /// Sends an envelope already encoded.
    func send(_ bytes: [UInt8], descriptors: [OwnedFD]) throws {
        guard bytes.count <= RequestLimits.requestLength else {
            throw RPCError(.invalidArgument, "message of \(bytes.count) bytes is over camerad's \(RequestLimits.requestLength)-byte limit for requests")
        }
        switch socket.send(bytes, descriptors: descriptors) {
        case .written, .queued:
            return
        case .dropped, .closed:
            // Closed before: say why. Closing now (camerad refused the
            // connection, say): the close ends every open call, this one too,
            // with camerad's reason once it is read.
            if let reason = state.withLock({ $0.closedBecause }) { throw reason }
        case .tooLarge:
            throw RPCError(.invalidArgument, "message with \(descriptors.count) descriptors is too large to send")
        }
    }

    /// Cancels a call here and at the server; it ends with `error`.
    func cancel(_ call: ClientCall, endingWith error: RPCError = .cancelled) {
        guard !call.hasEnded else { return }
        try? send(EnvelopeCodec.cancel(callID: call.callID))
        finish(call, with: error)
    }

    private func finish(_ call: ClientCall, with error: RPCError?) {
        _ = state.withLock { $0.calls.removeValue(forKey: call.callID) }
        call.end(with: error)
    }

    // MARK: - SocketConnectionDelegate

    public func connection(
        _ connection: SocketConnection, didReceive frame: [UInt8], descriptors: inout DescriptorQueue
    ) throws {
        if let (callID, message) = try EnvelopeCodec.decodeMessage(frame, descriptors: &descriptors) {
            // A response (a frame, most often): envelopes for calls that ended here are dropped.
            state.withLock { $0.calls[callID] }?.receive(message)
            return
        }
        let (envelope, claimed) = try EnvelopeCodec.decode(frame, descriptors: &descriptors)
        if envelope.endsConnection, case .end(let end)? = envelope.kind {
            let reason = RPCError(status: end.status) ?? RPCError(.connectionLost, "camerad ended the connection")
            state.withLock { $0.closedBecause = reason }
            connection.close()
            return
        }
        // Envelopes for calls that ended here (cancelled) are dropped.
        guard let call = state.withLock({ $0.calls[envelope.callID] }) else { return }
        switch envelope.kind! {
        case .message(let message):
            call.receive(RawMessage(payload: Array(message.payload), descriptors: claimed))
        case .end(let end):
            finish(call, with: RPCError(status: end.status))
        case .start, .cancel:
            throw EnvelopeCodec.MalformedEnvelope(reason: "the server sent a client-only envelope")
        }
    }

    public func connectionDidClose(_ connection: SocketConnection, error: (any Error)?) {
        let detail = error.map { " (\($0))" } ?? ""
        let (reason, calls) = state.withLock { state in
            // camerad may have said why it ended the connection.
            let reason = state.closedBecause
                ?? RPCError(.connectionLost, "lost the connection to camerad\(detail); is the daemon still running?")
            state.closedBecause = reason
            defer { state.calls.removeAll() }
            return (reason, Array(state.calls.values))
        }
        for call in calls { call.end(with: reason) }
    }
}
