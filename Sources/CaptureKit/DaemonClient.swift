import Foundation
import CameraIPC
import CameraProtocol
import Synchronization

/// The connection CaptureKit shares across the process: opened on first use,
/// opened again on the next use after it breaks.
final class DaemonClient: Sendable {
    static let shared = DaemonClient()

    private struct State {
        var socketPath: String?
        var clientName: String?
        var client: RPCClient?
        var connecting: Task<RPCClient, any Error>?
    }
    private let state = Mutex(State())

    /// The thread every connection's messages are read on, for the life of the
    /// process; also the executor frames reach a ``CaptureDataOutput/sampleBufferExecutor`` user on.
    let loop: EventLoop = {
        do {
            return try EventLoop(name: "CaptureKit")
        } catch {
            fatalError("CaptureKit cannot start its connection thread: \(error)")
        }
    }()

    /// Where to connect; nil means `SocketPath.resolve()`. A change takes effect
    /// at the next connection, and closes the current one.
    var socketPath: String {
        get { state.withLock { $0.socketPath } ?? SocketPath.resolve() }
        set {
            let old = state.withLock { state -> RPCClient? in
                state.socketPath = newValue
                defer { state.client = nil }
                return state.client
            }
            old?.close()
        }
    }

    var clientName: String {
        get { state.withLock { $0.clientName } ?? Self.processName }
        set { state.withLock { $0.clientName = newValue } }
    }

    /// The open connection, connecting first if there is none. Concurrent
    /// callers share one connection attempt.
    func connection() async throws(CaptureError) -> RPCClient {
        enum Next {
            case ready(RPCClient)
            case connecting(Task<RPCClient, any Error>)
        }
        let next = state.withLock { state -> Next in
            if let client = state.client, !client.isClosed { return .ready(client) }
            if let connecting = state.connecting { return .connecting(connecting) }
            let (loop, path, name) = (self.loop, state.socketPath ?? SocketPath.resolve(), state.clientName ?? Self.processName)
            let connecting = Task { try await RPCClient.connect(to: path, clientName: name, loop: loop) }
            state.connecting = connecting
            return .connecting(connecting)
        }
        guard case .connecting(let task) = next else {
            guard case .ready(let client) = next else { preconditionFailure() }
            return client
        }
        let result = await task.result
        state.withLock { state in
            guard state.connecting == task else { return }
            state.connecting = nil
            if case .success(let client) = result { state.client = client }
        }
        return try await CaptureError.converting { try result.get() }
    }

    /// A unary call on the shared connection.
    func unary<Request, Response>(_ method: Method<Request, Response>, _ request: Request) async throws(CaptureError) -> Response {
        let client = try await connection()
        return try await CaptureError.converting { try await client.unary(method, request) }
    }

    /// Closes the shared connection; the next call opens a new one.
    func disconnect() {
        state.withLock { state -> RPCClient? in
            defer { state.client = nil }
            return state.client
        }?.close()
    }

    private static var processName: String {
        (try? String(contentsOfFile: "/proc/self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "CaptureKit"
    }
}
