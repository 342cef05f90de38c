import SwiftProtobuf

/// Which handler serves each method: the dispatch table a server is built with.
public struct RPCRouter: Sendable {
    typealias Handler = @Sendable (ServerCall, _ request: [UInt8], RPCContext) async throws -> Void

    private(set) var handlers: [String: Handler] = [:]

    public init() {}

    /// Serves a unary method.
    public mutating func register<Request: CheckedMessage, Response>(
        _ method: Method<Request, Response>,
        unary body: @escaping @Sendable (Request, RPCContext) async throws -> Response
    ) {
        precondition(method.kind == .unary, "\(method.name) is not unary")
        handlers[method.name] = { call, bytes, context in
            let request = try Self.decode(Request.self, bytes, method.name)
            let response = try await body(request, context)
            ResponseWriter<Response>(call: call).send(response)
        }
    }

    /// Serves a server-streaming method. The call ends when `body` returns.
    public mutating func register<Request: CheckedMessage, Response>(
        _ method: Method<Request, Response>,
        serverStreaming body: @escaping @Sendable (Request, ResponseWriter<Response>, RPCContext) async throws -> Void
    ) {
        precondition(method.kind == .serverStreaming, "\(method.name) is not server-streaming")
        handlers[method.name] = { call, bytes, context in
            let request = try Self.decode(Request.self, bytes, method.name)
            try await body(request, ResponseWriter(call: call), context)
        }
    }

    /// Serves a bidirectional method. The call ends when `body` returns.
    public mutating func register<Request: CheckedMessage, Response>(
        _ method: Method<Request, Response>,
        bidirectional body: @escaping @Sendable (RequestStream<Request>, ResponseWriter<Response>, RPCContext) async throws -> Void
    ) {
        precondition(method.kind == .bidirectionalStreaming, "\(method.name) is not bidirectional")
        handlers[method.name] = { call, _, context in
            try await body(.requests(of: call), ResponseWriter(call: call), context)
        }
    }

    /// The request, its numbers checked against their ranges (``CheckedMessage``).
    private static func decode<M: CheckedMessage>(_ type: M.Type, _ bytes: [UInt8], _ method: String) throws -> M {
        let request: M
        do {
            request = try M(serializedBytes: bytes)
        } catch {
            throw RPCError.undecodableRequest(method, "\(error)")
        }
        try request.checkFields()
        return request
    }
}

extension MethodKind: Equatable {}
