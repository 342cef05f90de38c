import CameraIPC
import Foundation
import Logging
import Synchronization

/// The server's side of one client connection: turns envelopes into calls,
/// enforces Hello-first, and ends every call when the connection goes.
public final class RPCServerConnection: SocketConnectionDelegate, @unchecked Sendable {
    /// Calls one connection may have open at once.
    public static let maxOpenCalls = 256

    /// Answers Hello; throws to refuse the client.
    public typealias HelloResponder = @Sendable (Camerad_V1_HelloRequest, PeerCredentials) throws -> Camerad_V1_HelloResponse

    public let id: UInt64
    public let socket: SocketConnection
    private let router: RPCRouter
    private let hello: HelloResponder
    private let logger: Logger
    private let onClose: @Sendable (RPCServerConnection, (any Error)?) -> Void

    private struct State {
        var clientName: String?
        var calls: [UInt64: ServerCall] = [:]
    }
    private let state = OrderedMutex(.rpcConnection, State())

    init(
        id: UInt64, socket: SocketConnection, router: RPCRouter, hello: @escaping HelloResponder, logger: Logger,
        onClose: @escaping @Sendable (RPCServerConnection, (any Error)?) -> Void
    ) {
        self.id = id
        self.socket = socket
        self.router = router
        self.hello = hello
        self.logger = logger
        self.onClose = onClose
    }

    /// The client's name from Hello, once it has said Hello.
    public var clientName: String? { state.withLock { $0.clientName } }

    /// Calls open now.
    public var openCallCount: Int { state.withLock { $0.calls.count } }

    /// Ends every open call with `error`, then closes once the ends are written.
    public func shutDown(with error: RPCError) {
        for call in state.withLock({ Array($0.calls.values) }) {
            call.end(with: error)
            call.cancelHandler()
        }
        socket.closeAfterFlushing()
    }

    // MARK: - SocketConnectionDelegate

    public func connection(
        _ connection: SocketConnection, didReceive frame: [UInt8], descriptors: inout DescriptorQueue
    ) throws {
        if let (callID, message) = try EnvelopeCodec.decodeMessage(frame, descriptors: &descriptors) {
            // A request (a release, most often). A message for a call that has
            // ended is dropped, descriptors and all.
            call(callID)?.receive(message)
            return
        }
        let (envelope, claimed) = try EnvelopeCodec.decode(frame, descriptors: &descriptors)
        guard !envelope.endsConnection else { throw EnvelopeCodec.MalformedEnvelope(reason: "call id 0 from a client") }
        let callID = envelope.callID
        switch envelope.kind! {
        case .start(let start):
            try startCall(callID, start, descriptors: claimed)
        case .message(let message):
            // A message for a call that has ended is dropped, descriptors and all.
            call(callID)?.receive(RawMessage(payload: Array(message.payload), descriptors: claimed))
        case .end:
            call(callID)?.finishRequests()
        case .cancel:
            if let call = call(callID) {
                call.end(with: .cancelled)
                call.cancelHandler()
            }
        }
    }

    public func connectionDidClose(_ connection: SocketConnection, error: (any Error)?) {
        let calls = state.withLock { state in
            defer { state.calls.removeAll() }
            return Array(state.calls.values)
        }
        for call in calls {
            call.end(with: nil, notify: false)
            call.cancelHandler()
        }
        onClose(self, error)
    }

    // MARK: - Calls

    private func call(_ callID: UInt64) -> ServerCall? {
        state.withLock { $0.calls[callID] }
    }

    func callDidEnd(_ callID: UInt64) {
        _ = state.withLock { $0.calls.removeValue(forKey: callID) }
    }

    private func startCall(_ callID: UInt64, _ start: Camerad_V1_CallStart, descriptors: [OwnedFD]) throws {
        enum Decision {
            case refuse(RPCError)
            case hello
            case run(ServerCall, RPCRouter.Handler, RPCContext)
        }
        let decision = try state.withLock { state throws -> Decision in
            guard state.calls[callID] == nil else {
                throw EnvelopeCodec.MalformedEnvelope(reason: "call id \(callID) is already in use")
            }
            do throws(RPCError) {
                try RequestLimits.check(name: start.method, "method name")
            } catch {
                return .refuse(error)
            }
            if start.method == CameraService.hello.name { return .hello }
            guard let clientName = state.clientName else { return .refuse(.helloRequired(start.method)) }
            guard let handler = router.handlers[start.method] else { return .refuse(.unimplemented(start.method)) }
            guard state.calls.count < Self.maxOpenCalls else {
                return .refuse(RPCError(.resourceExhausted,
                                        "more than \(Self.maxOpenCalls) calls open on one connection; end some first"))
            }
            let call = ServerCall(callID: callID, method: start.method, connection: self)
            state.calls[callID] = call
            let context = RPCContext(
                connectionID: id, peer: socket.peer, clientName: clientName, callID: callID, descriptors: descriptors)
            return .run(call, handler, context)
        }
        switch decision {
        case .refuse(let error):
            logger.debug("refused \(start.method.echoed) from \(socket.peer): \(error.message)")
            send(callID, response: nil, status: error.status)
        case .hello:
            answerHello(callID, start.request)
        case .run(let call, let handler, let context):
            call.run(handler, request: Array(start.request), context: context)
        }
    }

    /// Hello is answered here, on the loop, so that the calls that follow it on
    /// the connection already see it done.
    private func answerHello(_ callID: UInt64, _ bytes: Data) {
        do {
            let request: Camerad_V1_HelloRequest
            do {
                request = try Camerad_V1_HelloRequest(serializedBytes: bytes)
            } catch {
                throw RPCError.undecodableRequest(CameraService.hello.name, "\(error)")
            }
            try request.checkFields()
            try RequestLimits.check(name: request.clientName, "client name")
            let response = try hello(request, socket.peer)
            state.withLock { $0.clientName = request.clientName }
            logger.info("client '\(request.clientName.echoed)' connected (\(socket.peer))")
            send(callID, response: try response.serializedBytes(), status: Camerad_V1_Status())
        } catch let error as RPCError {
            send(callID, response: nil, status: error.status)
        } catch {
            send(callID, response: nil, status: RPCError(.internal, "Hello failed: \(error)").status)
        }
    }

    private func send(_ callID: UInt64, response: [UInt8]?, status: Camerad_V1_Status) {
        if let response {
            _ = socket.send(EnvelopeCodec.encode(EnvelopeCodec.message(callID: callID, payload: response)))
        }
        _ = socket.send(EnvelopeCodec.encode(EnvelopeCodec.end(callID: callID, status: status)))
    }
}
