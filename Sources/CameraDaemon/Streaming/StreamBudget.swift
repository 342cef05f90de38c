import Synchronization

/// The bounds on what streams take, so that no client's outputs cost the
/// others: streams and shared memory per connection, and the shared memory of
/// every frame pool together. Each is refused with RESOURCE_EXHAUSTED and what
/// to do. (Output sizes and variants per device are bounded where they are
/// made: ``StreamOptions``, ``DeviceStreamer``.)
///
/// A stream is charged the most shared memory it may hold (its frames in
/// flight and queued, times its frame size); a pool is charged its whole size
/// while it exists. The lock is a leaf: nothing is called while it is held.
final class StreamBudget: Sendable {
    struct Limits: Sendable {
        var streamsPerConnection = 16
        var bytesPerConnection = 512 << 20
        var poolBytes = 4 << 30
    }

    let limits: Limits
    private struct State {
        var connections: [UInt64: (streams: Int, bytes: Int)] = [:]
        var poolBytes = 0
    }
    private let state = Mutex(State())

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Charges a stream that may hold `bytes` of frames to its connection.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when the connection has as many streams as
    ///   it may, or its streams would hold more than it may.
    func chargeStream(connection: UInt64, bytes: Int, _ what: String) throws(CameraError) {
        try state.withLock { state throws(CameraError) in
            let usage = state.connections[connection] ?? (0, 0)
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
            state.connections[connection] = (usage.streams + 1, usage.bytes + bytes)
        }
    }

    func refundStream(connection: UInt64, bytes: Int) {
        state.withLock { state in
            guard let usage = state.connections[connection] else { return }
            state.connections[connection] = usage.streams <= 1 ? nil : (usage.streams - 1, usage.bytes - bytes)
        }
    }

    /// Charges a frame pool of `bytes`.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when the pools would take more than camerad allows in all.
    func chargePool(bytes: Int, _ what: String) throws(CameraError) {
        try state.withLock { state throws(CameraError) in
            guard state.poolBytes + bytes <= limits.poolBytes else {
                throw CameraError(.resourceExhausted,
                                  "a pool for \(what) needs \(Self.mebibytes(bytes)), and camerad's frame pools already take "
                                   + "\(Self.mebibytes(state.poolBytes)) of \(Self.mebibytes(limits.poolBytes)); try again when other streams end")
            }
            state.poolBytes += bytes
        }
    }

    func refundPool(bytes: Int) {
        state.withLock { $0.poolBytes -= bytes }
    }

    /// Streams charged now, for tests.
    var streamCount: Int { state.withLock { $0.connections.values.reduce(0) { $0 + $1.streams } } }

    private static func mebibytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB"
    }
}
