import CameraIPC
import Dispatch
import Logging
import Synchronization
internal import Glibc

/// Decides whether a new connection is served, from its peer's credentials,
/// and hears when a connection it admitted ends (camerad charges each
/// connection its descriptors to its user).
public protocol ConnectionAdmission: Sendable {
    /// - Throws: why the connection is not served (RESOURCE_EXHAUSTED, and what to do).
    func admit(_ connectionID: UInt64, _ peer: PeerCredentials) throws(RPCError)
    /// A connection `admit` let in has ended.
    func dismiss(_ connectionID: UInt64)
}

/// Accepts connections on a listening socket and serves each with a router.
///
/// Everything about sockets and envelopes lives below this; everything about
/// cameras lives in the handlers registered in the router.
///
/// At ``maxConnections``, refused by its admission (``ConnectionAdmission``),
/// or out of file descriptors, a new connection is accepted and refused at
/// once with a status that says why (a CallEnd for call 0), using a descriptor
/// held in reserve when none is left; if even that fails, accepting pauses and
/// resumes after a back-off. Either way the listener never spins and the log
/// gets a line a second at most.
public final class RPCServer: EventHandler, @unchecked Sendable {
    public typealias ConnectionObserver = @Sendable (RPCServerConnection) -> Void

    private let listener: OwnedFD
    private let loop: EventLoop
    private let router: RPCRouter
    private let hello: RPCServerConnection.HelloResponder
    private let logger: Logger
    private let backlogLimit: Int
    private let onConnectionClosed: ConnectionObserver
    private let admission: (any ConnectionAdmission)?
    /// The most descriptors a client's messages may bring: 0 takes none.
    private let clientDescriptors: Int
    /// Connections served at once; more are refused.
    public let maxConnections: Int
    private let reserve = ReserveDescriptor()
    private let refusalLog = RateLimitedLog()
    private let acceptFailureLog = RateLimitedLog()

    private struct State {
        var registration: EventLoop.Registration?
        var connections: [UInt64: RPCServerConnection] = [:]
        var nextID: UInt64 = 1
        var accepting = true
        /// Waiting in ``shutDown(with:timeout:)`` for the last connection to close.
        var closingWaiters: [CheckedContinuation<Void, Never>] = []
        /// While accepting is paused: how long the next pause lasts.
        var backOff: Duration = RPCServer.firstBackOff
    }
    private let state = OrderedMutex(.rpcServer, State())

    static let firstBackOff = Duration.milliseconds(50)
    static let longestBackOff = Duration.seconds(1)

    /// The connections a process may serve with `descriptors` file descriptors:
    /// each takes one (and a descriptor its message brings while it is used), and 64
    /// stay for devices, pools and the daemon itself.
    public static func connectionLimit(descriptors: Int) -> Int {
        min(4096, max(1, descriptors - 64))
    }

    /// - Parameters:
    ///   - listener: a listening, non-blocking socket.
    ///   - backlogLimit: bytes queued to one client past which it is disconnected.
    ///   - maxConnections: connections served at once (see ``connectionLimit(descriptors:)``).
    ///   - admission: asked about each new connection, told when it ends.
    ///   - clientDescriptors: the most descriptors a client's message may bring
    ///     (``RPCContext/descriptors``); 0, camerad's, takes none (``start()``).
    ///   - onConnectionClosed: told on the loop after a connection's calls have ended.
    public init(
        listener: OwnedFD, loop: EventLoop, router: RPCRouter, logger: Logger,
        backlogLimit: Int = SocketConnection.defaultBacklogLimit, maxConnections: Int = 1024,
        admission: (any ConnectionAdmission)? = nil, clientDescriptors: Int = 0,
        hello: @escaping RPCServerConnection.HelloResponder,
        onConnectionClosed: @escaping ConnectionObserver = { _ in }
    ) {
        self.listener = listener
        self.loop = loop
        self.router = router
        self.hello = hello
        self.logger = logger
        self.backlogLimit = backlogLimit
        self.maxConnections = maxConnections
        self.admission = admission
        self.clientDescriptors = clientDescriptors
        self.onConnectionClosed = onConnectionClosed
    }

    /// Starts accepting connections.
    ///
    /// Unless it takes descriptors from clients, clients cannot send any: the
    /// kernel refuses them at their `sendmsg` where it can
    /// (``UnixSocket/refuseDescriptors(_:)``), and drops them unopened where it
    /// cannot (connections take none). Those it takes (camerad's: a movie's
    /// file, one per message) close on a thread of their own, never on the
    /// loop: closing a file may wait on whoever serves it (closing a FUSE file
    /// waits for its server's answer).
    public func start() throws {
        if clientDescriptors == 0 { UnixSocket.refuseDescriptors(listener) }
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
        // Woken by the last connection's close, or by the loop's timer at the deadline: no poll on the pool.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = state.withLock { state in
                guard !state.connections.isEmpty else { return false }
                state.closingWaiters.append(continuation)
                return true
            }
            guard waiting else { return continuation.wake() }
            loop.schedule(after: timeout) { [self] in wakeClosingWaiters() }
        }
        for connection in connections { connection.socket.close() }
    }

    public func handleEvents(_ events: EventLoop.Events) {
        while state.withLock({ $0.accepting && $0.registration != nil }) {
            let socket: OwnedFD
            do {
                guard let accepted = try UnixSocket.accept(listener) else { return }
                socket = accepted
            } catch where error.errno == EMFILE || error.errno == ENFILE {
                // (accept says EMFILE before it looks for a pending connection.)
                let outcome = reserve.whileReleased { () -> Result<Bool, SystemError> in
                    Result { () throws(SystemError) in
                        guard let socket = try UnixSocket.accept(listener) else { return false }
                        refuse(socket, RPCError(.resourceExhausted,
                                                "camerad is out of file descriptors; close other clients, or raise its limit (LimitNOFILE)"))
                        return true
                    }
                }
                switch outcome {
                case .success(true):
                    continue
                case .success(false):
                    return  // none pending
                case .failure(let error):
                    pauseAccepting(because: error)
                    return
                }
            } catch {
                pauseAccepting(because: error)
                return
            }
            state.withLock { $0.backOff = Self.firstBackOff }
            guard state.withLock({ $0.connections.count }) < maxConnections else {
                refuse(socket, RPCError(.resourceExhausted,
                                        "camerad serves at most \(maxConnections) connections at once; close another client first"))
                continue
            }
            do {
                try serve(socket)
            } catch {
                logger.warning("could not set up a connection: \(error)")
            }
        }
    }

    /// Tells a connection why it is not served, and closes it.
    private func refuse(_ socket: OwnedFD, _ error: RPCError) {
        let peer = (try? PeerCredentials(of: socket)).map { "\($0)" } ?? "a client"
        UnixSocket.sendWithoutWaiting(EnvelopeCodec.encode(EnvelopeCodec.connectionEnd(error)), on: socket)
        refusalLog.log(logger, .warning, "refused a connection from \(peer): \(error.message)")
    }

    /// Stops accepting for a while (doubling each time, up to a second), when
    /// accept fails even with the reserve descriptor let go.
    private func pauseAccepting(because error: SystemError) {
        let pause = state.withLock { state -> Duration? in
            guard let registration = state.registration else { return nil }
            loop.deregister(registration)
            state.registration = nil
            defer { state.backOff = min(Self.longestBackOff, state.backOff * 2) }
            return state.backOff
        }
        guard let pause else { return }
        acceptFailureLog.log(logger, .error, "accept failed (\(error)); accepting again in \(pause)")
        loop.schedule(after: pause) { [weak self] in self?.resumeAccepting() }
    }

    private func resumeAccepting() {
        state.withLock { state in
            guard state.accepting, state.registration == nil else { return }
            state.registration = try? loop.register(listener.rawValue, events: [.readable], handler: self)
        }
    }

    private func serve(_ socket: OwnedFD) throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let peer = try PeerCredentials(of: socket)
        do throws(RPCError) {
            try admission?.admit(id, peer)
        } catch {
            refuse(socket, error)
            return
        }
        let connection: SocketConnection
        do {
            if clientDescriptors == 0 { UnixSocket.refuseDescriptors(socket) }
            connection = try SocketConnection(socket: socket, loop: loop, backlogLimit: backlogLimit,
                                              maxFrameLength: RequestLimits.requestLength, maxDescriptors: clientDescriptors,
                                              closesDescriptorsAside: true)
        } catch {
            admission?.dismiss(id)
            throw error
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

    /// Wakes whoever waits for the connections to close (once each: taken under the lock).
    private func wakeClosingWaiters() {
        for waiter in state.withLock({ state in defer { state.closingWaiters = [] }; return state.closingWaiters }) { waiter.wake() }
    }

    private func connectionDidClose(_ connection: RPCServerConnection, error: (any Error)?) {
        // The connection removed is let go after the lock (its deinit is not the server's to run under it).
        let (_, lastClosed) = state.withLock { state in
            (state.connections.removeValue(forKey: connection.id), state.connections.isEmpty)
        }
        if lastClosed { wakeClosingWaiters() }
        admission?.dismiss(connection.id)
        let name = connection.clientName?.echoed ?? "(no Hello)"
        if let error {
            logger.info("connection \(connection.id) '\(name)' closed: \(error)")
        } else {
            logger.debug("connection \(connection.id) '\(name)' closed")
        }
        onConnectionClosed(connection)
    }
}
