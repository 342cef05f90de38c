import Glibc
internal import CCameraShims

/// Closes the descriptors one connection's peer sent, one after another, on a
/// thread of camerad's own drawn from its user's (uid's) pool — never the event
/// loop's or a task's: closing a file may wait on whoever serves it (a FUSE
/// file's FLUSH), for good if its server hangs, and the kernel lets no signal
/// end that wait.
///
/// So a close that hangs holds one thread and its own connection's later
/// closes; a user's at most ``threadsPerUser`` threads (its other clients'
/// closes wait only once that many of its connections each have a close
/// hung); and no other user's close ever waits on it. The threads end when
/// there is nothing to close.
public final class DescriptorCloser: Sendable, CustomStringConvertible {
    /// Closing threads one user's connections may hold at once.
    public static let threadsPerUser = 4
    /// Descriptors a user's clients may have waiting to be closed: a
    /// connection that sends one more is closed (``FramingError/closesBehind(count:limit:)``),
    /// so hung closes cannot take camerad's descriptors.
    public static let backlogPerUser = 256

    public let user: UInt32
    /// This connection's closes, in order; its state is the pools' lock's.
    private let lane: Lane

    /// A closer for a connection of `user`.
    public init(user: UInt32) {
        self.user = user
        lane = Lane(user: user)
    }

    public var description: String { "descriptor closer of uid \(user)" }

    /// Closes `descriptor` after this connection's earlier ones, on a thread of its user's pool.
    public func close(_ descriptor: Int32) {
        let start = Self.pools.withLock { pools -> Bool in
            lane.queue.append(descriptor)
            guard !lane.isServed, !lane.isReady else { return false }
            lane.isReady = true
            pools[user, default: Pool()].ready.append(lane)
            guard pools[user]!.threads < Self.threadsPerUser else { return false }
            pools[user]!.threads += 1
            return true
        }
        if start { Self.startThread(for: user) }
    }

    /// Descriptors this connection's user has waiting for their close.
    public var userBacklog: Int { Self.backlog(of: user).descriptors }

    /// Descriptors waiting for their close, and threads closing, for `user`: what its hung files hold.
    public static func backlog(of user: UInt32) -> (descriptors: Int, threads: Int) {
        pools.withLock { pools in
            guard let pool = pools[user] else { return (0, 0) }
            return (pool.ready.reduce(0) { $0 + $1.queue.count } + pool.serving.reduce(0) { $0 + $1.queue.count }, pool.threads)
        }
    }

    // MARK: - The pools

    /// One connection's queue of descriptors; served by one thread at a time.
    private final class Lane: @unchecked Sendable {
        // Unchecked: every field is the pools' lock's.
        let user: UInt32
        var queue: [Int32] = []
        /// In its pool's ready list.
        var isReady = false
        /// A thread is closing its descriptors.
        var isServed = false

        init(user: UInt32) { self.user = user }
    }

    private struct Pool {
        /// Lanes with descriptors to close and no thread on them, oldest first.
        var ready: [Lane] = []
        /// Lanes a thread is on (for ``backlog(of:)``).
        var serving: [Lane] = []
        var threads = 0
    }

    private static let pools = OrderedMutex<[UInt32: Pool]>(.descriptorClosers, [:])

    private static func startThread(for user: UInt32) {
        let context = Unmanaged.passRetained(Box(user)).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            let user = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().user
            _ = CCameraShims_set_thread_name("camerad-closer")
            DescriptorCloser.serve(user)
            return nil
        }, context)
        guard started == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            // No thread to be had now: the lanes stay ready for the next close's thread.
            pools.withLock { $0[user]?.threads -= 1 }
            return
        }
        pthread_detach(thread)
    }

    private final class Box {
        let user: UInt32
        init(_ user: UInt32) { self.user = user }
    }

    /// A pool thread: takes the oldest ready lane and closes its descriptors
    /// in order until it has none, then the next; ends when none is ready.
    private static func serve(_ user: UInt32) {
        var current: Lane?
        while true {
            let next = pools.withLock { pools -> (Lane, Int32)? in
                if let lane = current, !lane.queue.isEmpty { return (lane, lane.queue.removeFirst()) }
                if let lane = current {
                    lane.isServed = false
                    pools[user]!.serving.removeAll { $0 === lane }
                }
                guard !pools[user]!.ready.isEmpty else {
                    pools[user]!.threads -= 1
                    if pools[user]!.threads == 0 { pools[user] = nil }
                    return nil
                }
                let lane = pools[user]!.ready.removeFirst()
                lane.isReady = false
                lane.isServed = true
                pools[user]!.serving.append(lane)
                return (lane, lane.queue.removeFirst())
            }
            guard let (lane, descriptor) = next else { return }
            current = lane
            Syscall.close(descriptor)
        }
    }
}
