import CameraIPC
import CameraProtocol
import Synchronization

/// What clients may take of camerad, so that no client — and no user — costs
/// the others: per connection, its streams and the shared memory they may
/// hold; per user (the client's uid), a share of camerad's file descriptors
/// and of the frame pools' shared memory; in all, the descriptors camerad may
/// hold for clients and the pools' memory. Each bound is refused with
/// RESOURCE_EXHAUSTED and what to do.
///
/// Who is charged for what camerad holds:
///
/// | what | descriptors | shared memory | charged to |
/// |---|---|---|---|
/// | a connection: its socket | 1 | | connection, user |
/// | descriptors a client sent (Record's movie files): 4 waiting at most a connection, each held while its recording runs (a ``Resource``, below), the rest closed on its user's closing threads (`DescriptorCloser`) | not charged | | bounded per connection and by recordings |
/// | a stream's release ring and frame ring | 1 each | (a few KiB) | connection, user |
/// | a stream's frames: what it may hold, in flight and queued | | frames × frame size | connection, user |
/// | a user's frame signal on a device (``FrameSignal``: an eventfd and an epoll instance, kept while camerad runs) | 2, once | | user |
/// | a frame pool, shared by its variant's streams | 1 | its size | camerad |
/// | camerad's own subscription (a node several connections share, ``Owner/daemon``) | | frames × frame size | camerad |
/// | an encoder, an audio variant or meter, a recording, a file check (``Resource``: a thread each) | counted per distinct one | | connection, user, in all |
///
/// A user may take a quarter (``Limits/userShare``) of the descriptors and of
/// the pools' memory: however many connections one user opens, three quarters
/// stay for the others. What a device holds for itself (its node, its buffers
/// exported as dma-bufs) and camerad's own descriptors are in the reserve the
/// limit leaves (``Limits/init(openFiles:)``). The lock is a leaf: nothing is
/// called while it is held.
final class ClientBudget: Sendable {
    struct Limits: Sendable {
        var streamsPerConnection = 16
        var bytesPerConnection = 512 << 20
        /// The shared memory of every frame pool together.
        var poolBytes = 4 << 30
        /// The descriptors camerad may hold for clients together.
        var descriptors = 65536
        /// The part of ``poolBytes`` and of ``descriptors`` one user may take: 1 / userShare.
        var userShare = 4
        /// What a connection, a user and all clients may have of what costs camerad a thread (``Resource``).
        var shares = ClientBudget.defaultShares

        var bytesPerUser: Int { poolBytes / userShare }
        var descriptorsPerUser: Int { descriptors / userShare }

        init(streamsPerConnection: Int = 16, bytesPerConnection: Int = 512 << 20, poolBytes: Int = 4 << 30,
             descriptors: Int = 65536, userShare: Int = 4) {
            self.streamsPerConnection = streamsPerConnection
            self.bytesPerConnection = bytesPerConnection
            self.poolBytes = poolBytes
            self.descriptors = descriptors
            self.userShare = userShare
        }

        /// The limits of a process that may have `openFiles` descriptors open:
        /// all but an eighth (at least 64) for clients, the rest kept for the
        /// devices (a V4L2 node and up to 32 buffers each) and camerad itself.
        init(openFiles: Int) {
            self.init(descriptors: max(0, openFiles - max(64, openFiles / 8)))
        }
    }

    /// Descriptors a connection costs before it opens anything: its socket.
    static let connectionDescriptors = 1

    /// Who a subscription is charged to: its client's connection and user
    /// (uid), or camerad itself — a node several connections share (an
    /// encoder, a detector) subscribes once, charged to no client: each
    /// connection pays for its own subscription to that node instead.
    enum Owner: Hashable, Sendable {
        case client(connection: UInt64, user: UInt32)
        case daemon

        init(connection: UInt64, user: UInt32) {
            self = .client(connection: connection, user: user)
        }

        /// The client's uid; nil for camerad's own.
        var user: UInt32? {
            if case .client(_, let user) = self { return user }
            return nil
        }
    }

    /// What a stream was charged, to give back when it goes.
    struct StreamCharge: Sendable {
        let owner: Owner
        let bytes: Int
        let descriptors: Int
    }

    let limits: Limits
    private struct Usage {
        var streams = 0
        var bytes = 0
        var descriptors = 0
        var isEmpty: Bool { streams == 0 && bytes == 0 && descriptors == 0 }
    }
    private struct State {
        var connections: [UInt64: Usage] = [:]
        /// Each open connection's user (``admit(connection:user:)``).
        var users: [UInt64: UInt32] = [:]
        var perUser: [UInt32: Usage] = [:]
        /// camerad's own subscriptions (``Owner/daemon``): bounded by the pools' memory in all.
        var daemon = Usage()
        var descriptors = 0
        var poolBytes = 0
        /// What clients have of each ``Resource`` (`ClientBudget+Claims.swift`).
        var uses: [Resource: Uses] = [:]
    }
    private let state = OrderedMutex(.clientBudget, State())

    /// Runs `body` on the uses of `resource`, under the lock.
    func withUses<T, Failure: Error>(_ resource: Resource, _ body: (inout Uses) throws(Failure) -> T) throws(Failure) -> T {
        try state.withLock { state throws(Failure) in try body(&state.uses[resource, default: Uses()]) }
    }

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    // MARK: - Connections

    /// Charges a new connection of `user` its descriptors.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when the user, or all clients, hold as many
    ///   descriptors as they may.
    func admit(connection: UInt64, user: UInt32) throws(CameraError) {
        try state.withLock { state throws(CameraError) in
            try chargeDescriptors(Self.connectionDescriptors, user: user, "a connection", &state)
            state.connections[connection, default: Usage()].descriptors += Self.connectionDescriptors
            state.users[connection] = user
        }
    }

    /// Gives back what a connection cost by itself (its streams give back their own).
    func dismiss(connection: UInt64) {
        state.withLock { state in
            guard let user = state.users.removeValue(forKey: connection) else { return }
            refundDescriptors(Self.connectionDescriptors, user: user, &state)
            state.connections[connection]?.descriptors -= Self.connectionDescriptors
            if state.connections[connection]?.isEmpty == true { state.connections[connection] = nil }
        }
    }

    // MARK: - Streams

    /// Charges a stream that may hold `bytes` of frames and makes camerad hold
    /// `descriptors` (its rings) to its connection and its user.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when the connection has as many streams as
    ///   it may, or its streams, or its user's, would hold more memory or
    ///   descriptors than they may.
    func chargeStream(
        _ owner: Owner, bytes: Int, descriptors: Int = 0, _ what: String
    ) throws(CameraError) -> StreamCharge {
        guard case .client(let connection, let user) = owner else {
            return try state.withLock { state throws(CameraError) in
                guard descriptors == 0, state.daemon.bytes + bytes <= limits.poolBytes else {
                    throw CameraError(.resourceExhausted,
                                      "camerad's own \(what) would hold more than its \(Self.mebibytes(limits.poolBytes)) of frames; try again when others end")
                }
                state.daemon.streams += 1
                state.daemon.bytes += bytes
                return StreamCharge(owner: owner, bytes: bytes, descriptors: 0)
            }
        }
        return try state.withLock { state throws(CameraError) in
            let usage = state.connections[connection] ?? Usage()
            guard usage.streams < limits.streamsPerConnection else {
                throw CameraError(.resourceExhausted,
                                  "this connection has \(usage.streams) streams, the most camerad allows one; close one first")
            }
            guard usage.bytes + bytes <= limits.bytesPerConnection else {
                throw CameraError(.resourceExhausted,
                                  "\(what) may hold \(Self.mebibytes(bytes)) of frames, and this connection's streams already "
                                   + "\(Self.mebibytes(usage.bytes)) of the \(Self.mebibytes(limits.bytesPerConnection)) one may; "
                                   + "ask for fewer frames in flight or a smaller size")
            }
            let userBytes = state.perUser[user]?.bytes ?? 0
            guard userBytes + bytes <= limits.bytesPerUser else {
                throw CameraError(.resourceExhausted,
                                  "\(what) may hold \(Self.mebibytes(bytes)) of frames, and uid \(user)'s streams already "
                                   + "\(Self.mebibytes(userBytes)) of the \(Self.mebibytes(limits.bytesPerUser)) one user may; "
                                   + "close some of them, or ask for fewer frames in flight or a smaller size")
            }
            try chargeDescriptors(descriptors, user: user, what, &state)
            state.connections[connection, default: Usage()].streams += 1
            state.connections[connection]!.bytes += bytes
            state.connections[connection]!.descriptors += descriptors
            state.perUser[user, default: Usage()].streams += 1
            state.perUser[user]!.bytes += bytes
            return StreamCharge(owner: owner, bytes: bytes, descriptors: descriptors)
        }
    }

    func refund(_ charge: StreamCharge) {
        state.withLock { state in
            guard case .client(let connection, let user) = charge.owner else {
                state.daemon.streams -= 1
                state.daemon.bytes -= charge.bytes
                return
            }
            refundDescriptors(charge.descriptors, user: user, &state)
            if var usage = state.connections[connection] {
                usage.streams -= 1
                usage.bytes -= charge.bytes
                usage.descriptors -= charge.descriptors
                state.connections[connection] = usage.isEmpty ? nil : usage
            }
            if var usage = state.perUser[user] {
                usage.streams -= 1
                usage.bytes -= charge.bytes
                state.perUser[user] = usage.isEmpty ? nil : usage
            }
        }
    }

    // MARK: - What a user holds apart from its connections

    /// Charges `user` descriptors camerad holds for all its clients (a frame signal).
    ///
    /// - Throws: RESOURCE_EXHAUSTED past the user's share, or past all clients'.
    func chargeUser(_ user: UInt32, descriptors: Int, _ what: String) throws(CameraError) {
        try state.withLock { state throws(CameraError) in try chargeDescriptors(descriptors, user: user, what, &state) }
    }

    func refundUser(_ user: UInt32, descriptors: Int) {
        state.withLock { state in refundDescriptors(descriptors, user: user, &state) }
    }

    // MARK: - Pools

    /// Charges a frame pool of `bytes` (and its memfd) to camerad as a whole.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when the pools would take more than camerad allows in all.
    func chargePool(bytes: Int, _ what: String) throws(CameraError) {
        try state.withLock { state throws(CameraError) in
            guard state.poolBytes + bytes <= limits.poolBytes else {
                throw CameraError(.resourceExhausted,
                                  "a pool for \(what) needs \(Self.mebibytes(bytes)), and camerad's frame pools already take "
                                   + "\(Self.mebibytes(state.poolBytes)) of \(Self.mebibytes(limits.poolBytes)); try again when other streams end")
            }
            guard state.descriptors < limits.descriptors else { throw outOfDescriptors(state, for: "a pool for \(what)") }
            state.poolBytes += bytes
            state.descriptors += 1
        }
    }

    func refundPool(bytes: Int) {
        state.withLock { state in
            state.poolBytes -= bytes
            state.descriptors -= 1
        }
    }

    // MARK: - Figures, for tests

    /// Streams charged now: to clients, or to camerad itself.
    func streamCount(of owner: Owner? = nil) -> Int {
        state.withLock { state in
            switch owner {
            case .daemon: state.daemon.streams
            case .client(let connection, _): state.connections[connection]?.streams ?? 0
            case nil: state.connections.values.reduce(0) { $0 + $1.streams }
            }
        }
    }

    /// Descriptors charged now: to `user`, or in all.
    func descriptors(of user: UInt32? = nil) -> Int {
        state.withLock { state in user.map { state.perUser[$0]?.descriptors ?? 0 } ?? state.descriptors }
    }

    // MARK: -

    private func chargeDescriptors(_ count: Int, user: UInt32, _ what: String, _ state: inout State) throws(CameraError) {
        guard count > 0 else { return }
        let held = state.perUser[user]?.descriptors ?? 0
        guard held + count <= limits.descriptorsPerUser else {
            throw CameraError(.resourceExhausted,
                              "uid \(user)'s clients hold \(held) of camerad's descriptors, the most one user may "
                               + "(\(limits.descriptorsPerUser), a share of \(limits.descriptors)); close some of its streams or connections first")
        }
        guard state.descriptors + count <= limits.descriptors else { throw outOfDescriptors(state, for: what) }
        state.perUser[user, default: Usage()].descriptors += count
        state.descriptors += count
    }

    private func refundDescriptors(_ count: Int, user: UInt32, _ state: inout State) {
        guard count > 0 else { return }
        state.descriptors -= count
        guard var usage = state.perUser[user] else { return }
        usage.descriptors -= count
        state.perUser[user] = usage.isEmpty ? nil : usage
    }

    private func outOfDescriptors(_ state: State, for what: String) -> CameraError {
        CameraError(.resourceExhausted,
                    "\(what) needs descriptors, and camerad holds \(state.descriptors) for clients, the most it may "
                     + "(\(limits.descriptors)); try again when other clients close streams, or raise camerad's limit (LimitNOFILE)")
    }

    private static func mebibytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB"
    }
}
