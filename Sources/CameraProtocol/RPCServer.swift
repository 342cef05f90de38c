import CameraIPC
import Logging
import Synchronization

/// Accepts connections on a listening socket and serves each with a router.
///
/// Everything about sockets and envelopes lives below this; everything about
/// cameras lives in the handlers registered in the router.
public final class RPCServer: EventHandler, @unchecked Sendable {
    public typealias ConnectionObserver = @Sendable (RPCServerConnection) -> Void

    private let listener: OwnedFD
    private let loop: EventLoop
    private let router: RPCRouter
    private let hello: RPCServerConnection.HelloResponder
    private let logger: Logger
    private let backlogLimit: Int
    private let onConnectionClosed: ConnectionObserver

    private struct State {
        var registration: EventLoop.Registration?
        var connections: [UInt64: RPCServerConnection] = [:]
        var nextID: UInt64 = 1
        var accepting = true
    }
    private let state = Mutex(State())

    /// - Parameters:
    ///   - listener: a listening, non-blocking socket.
    ///   - backlogLimit: bytes queued to one client past which it is disconnected.
    ///   - onConnectionClosed: told on the loop after a connection's calls have ended.
    public init(
        listener: OwnedFD, loop: EventLoop, router: RPCRouter, logger: Logger,
        backlogLimit: Int = SocketConnection.defaultBacklogLimit,
        hello: @escaping RPCServerConnection.HelloResponder,
        onConnectionClosed: @escaping ConnectionObserver = { _ in }
    ) {
        self.listener = listener
        self.loop = loop
        self.router = router
        self.hello = hello
        self.logger = logger
        self.backlogLimit = backlogLimit
        self.onConnectionClosed = onConnectionClosed
    }

    /// Starts accepting connections.
    public func start() throws {
        let registration = try loop.register(listener.rawValue, events: [.readable], handler: self)
        state.withLock { $0.registration = registration }
    }

    /// Connections open now.
    public var connections: [RPCServerConnection] {
        state.withLock { Array($0.connections.values) }
    }

    /// Stops accepting, ends every open call with `error` and closes every
    /// connection once what it was sent is written, waiting up to `timeout`.
    public func shutDown(with error: RPCError, timeout: Duration = .seconds(2)) async {
        let (registration, open) = state.withLock { state in
            state.accepting = false
            return (state.registration, Array(state.connections.values))
        }
        if let registration { loop.deregister(registration) }
        for connection in open { connection.shutDown(with: error) }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !state.withLock({ $0.connections.isEmpty }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for connection in connections { connection.socket.close() }
    }

    public func handleEvents(_ events: EventLoop.Events) {
        while state.withLock({ $0.accepting }) {
            let socket: OwnedFD
            do {
                guard let accepted = try UnixSocket.accept(listener) else { return }
                socket = accepted
            } catch {
                // EMFILE and friends: the pending connection stays queued; try again on the next event.
                logger.error("accept failed: \(error)")
                return
            }
            do {
                try serve(socket)
            } catch {
                logger.warning("could not set up a connection: \(error)")
            }
        }
    }

    private func serve(_ socket: OwnedFD) throws {
        let connection = try SocketConnection(socket: socket, loop: loop, backlogLimit: backlogLimit,
                                              maxFrameLength: RequestLimits.requestLength)
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let server = RPCServerConnection(
            id: id, socket: connection, router: router, hello: hello, logger: logger
        ) { [weak self] closed, error in
            self?.connectionDidClose(closed, error: error)
        }
        state.withLock { $0.connections[id] = server }
        logger.debug("connection \(id) from \(connection.peer)")
        try connection.start(delegate: server)
    }

    private func connectionDidClose(_ connection: RPCServerConnection, error: (any Error)?) {
        _ = state.withLock { $0.connections.removeValue(forKey: connection.id) }
        let name = connection.clientName?.echoed ?? "(no Hello)"
        if let error {
            logger.info("connection \(connection.id) '\(name)' closed: \(error)")
        } else {
            logger.debug("connection \(connection.id) '\(name)' closed")
        }
        onConnectionClosed(connection)
    }
}
