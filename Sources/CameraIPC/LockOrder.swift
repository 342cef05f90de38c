import Glibc
import Synchronization
internal import CCameraShims

/// Every lock of camerad's (CameraIPC's, CameraProtocol's, CameraDaemon's), in
/// the order they may be taken: a thread holding one takes only locks further
/// down the list. The leaves, from ``eventLoop`` on, share a rank: nothing is
/// taken while one is held, not even another leaf — but for ``descriptorClosers``,
/// alone in the last rank: a descriptor a client sent may be let go (and handed
/// to its closer) under any lock.
/// docs/ARCHITECTURE.md's lock table is this list, with what each guards.
public enum LockLevel: Int32, CaseIterable, Sendable {
    /// `RPCServer`'s connections and listener registration (registers with the loop under it).
    case rpcServer
    /// `DeviceRegistry`'s devices, streamers and watchers (describes devices under it).
    case deviceRegistry
    /// `ConfigurationLocks`' holders and waiters.
    case configurationLocks
    /// A `DeviceStreamer`'s state: capture, pools, streams (charges budgets, takes buffer loans under it).
    case deviceStreamer
    /// A `MicrophoneStreamer`'s capture, variants, meter and listeners (starts and stops them under it).
    case microphoneStreamer
    /// A `MediaNode`'s state: its pool and subscriptions (charges budgets under it).
    case mediaNode
    /// `ClientRings.frameSignals`, every user's frame signal per device (charges the budget under it).
    case frameSignals
    /// A `ServerCall`'s output: whether its end went out (held across each response's write).
    case callOutput
    /// `SocketConnection`'s write state, held across its `sendmsg` (the loop's registration changed under it).
    case connectionWrites
    /// A recorder's file and its writer (its worker's, and a client's question; its figures published under it).
    case movieRecorder

    // Leaves: nothing is taken under them.

    /// `EventLoop`'s handlers and submitted work.
    case eventLoop
    /// A repeating timer's next run (`RepeatingWork`).
    case repeatingTimer
    /// A `ServerCall`'s state: its task, half-close, requests taken on the loop.
    case callState
    /// `RPCServerConnection`'s calls and client name.
    case rpcConnection
    /// `RPCClient`'s calls; a `ClientCall`'s end; a call being started.
    case rpcClient
    /// `ReserveDescriptor`'s spare descriptor.
    case reserveDescriptor
    /// `RateLimitedLog`'s last line and count.
    case rateLimitedLog
    /// `DeviceRegistry`'s ended subscriptions and its addition observer.
    case registryWatchers
    /// `ConfigurationLocks`' observer.
    case configurationObserver
    /// A stream's outbox queue (`StreamOutbox`).
    case streamOutbox
    /// A streamer's outboxes with messages and signals to raise (`UnsentOutboxes`).
    case unsentOutboxes
    /// A frame ring's announcer: the drops waiting for room (`FrameAnnouncer`).
    case frameAnnouncer
    /// A pooled frame's message, serialized once for every client.
    case encodedFrame
    /// `ClientBudget`'s charges.
    case clientBudget
    /// A device's buffer leases (`BufferLeases`).
    case bufferLeases
    /// A backend's own state: a camera's controls, modes, strobe and settings'
    /// values; a microphone's input gain as last set.
    case cameraState
    /// A photo's sink: its frame, waiter, failure.
    case photoSink
    /// `DefaultsStore`'s stored defaults (the file is written under it).
    case defaultsStore
    /// `ConfigurationClaims`: the torches and modes each client's configuration holds.
    case configurationClaims
    /// A `WorkerThread`'s job queue.
    case workerJobs
    /// An audio node's work on its worker: an `AudioVariant`'s resampler and
    /// periods being cut, an `AudioMeter`'s levels and last reading.
    case audioWork
    /// An encoder node's encoder (its worker's, and a recorder's keyframe request).
    case encoderWork
    /// A recorder's published figures (its worker's, and a client's question).
    case recorderFigures
    /// A recording's handles: its call's refusal, its limit's timer, its
    /// encoder subscriptions, its file check's waiting answer.
    case recordingHandles
    /// A recording's file syncs: counts and the files waiting (`FileSyncer`).
    case fileSync
    /// `DescriptorCloser`'s pools: each user's closing threads and the
    /// descriptors waiting for them. After the leaves: taken under any lock.
    case descriptorClosers

    /// Where it stands in the order: leaves share a rank, the descriptor closers have the last.
    public var rank: Int32 {
        self == .descriptorClosers ? LockLevel.eventLoop.rawValue + 1 : min(rawValue, LockLevel.eventLoop.rawValue)
    }
}

/// A `Mutex` that knows its place in ``LockLevel``'s order. In debug builds
/// (every `make test`) taking it checks the levels the thread already holds:
/// one of the same rank or further down is a violation (``LockOrder``).
/// Release builds take the mutex and nothing else.
public struct OrderedMutex<Value: ~Copyable>: ~Copyable {
    public let level: LockLevel
    // Inlinable, so each caller's module specializes the lock for its value:
    // unspecialized, every call looked up `Mutex<Value>`'s metadata at run time.
    @usableFromInline let mutex: Mutex<Value>

    @inlinable
    public init(_ level: LockLevel, _ value: consuming sending Value) {
        self.level = level
        mutex = Mutex(value)
    }

    @inlinable @inline(__always)
    public borrowing func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        #if DEBUG
        LockOrder.willTake(level)
        defer { LockOrder.didLetGo() }
        #endif
        return try mutex.withLock(body)
    }
}

extension OrderedMutex: @unchecked Sendable where Value: ~Copyable {}

/// The lock-order checker of debug builds: each thread's ordered locks, a
/// violation when one is taken out of ``LockLevel``'s order, and when a task
/// is woken (a continuation resumed, a stream yielded to or finished, a task
/// cancelled) while any is held — the woken task may need a lock the waker
/// holds, or the waker's thread. A violation traps, naming the locks; a test
/// of the checker itself records them instead (``recordingViolations(_:)``).
public enum LockOrder {
    /// The ordered locks the calling thread holds, outermost first.
    public static var held: [LockLevel] {
        (0..<CCameraShims_held_locks_count()).compactMap { LockLevel(rawValue: CCameraShims_held_locks_at($0)) }
    }

    /// Checks that no ordered lock is held before `action` (waking a task).
    @inline(__always)
    public static func checkNoneHeld(_ action: @autoclosure () -> String) {
        #if DEBUG
        if CCameraShims_held_locks_count() > 0 {
            violation("\(action()) while holding \(describe(held))")
        }
        #endif
    }

    @usableFromInline
    static func willTake(_ level: LockLevel) {
        let depth = CCameraShims_held_locks_push(level.rawValue)
        guard depth >= 0 else {
            violation("more than 32 ordered locks held taking \(level)")
            return
        }
        guard depth > 0, let inner = LockLevel(rawValue: CCameraShims_held_locks_at(depth - 1)) else { return }
        if inner.rank >= level.rank {
            violation("taking \(level) while holding \(describe(held.dropLast()))")
        }
    }

    @usableFromInline
    static func didLetGo() {
        CCameraShims_held_locks_pop()
    }

    private static func describe(_ levels: some Collection<LockLevel>) -> String {
        levels.map { "\($0)" }.joined(separator: " → ")
    }

    /// Violations seen on threads that record them (tests of the checker), else nil.
    private static let recorded = Mutex<[UInt: [String]]>([:])

    /// Runs `body` on the calling thread with violations on that thread
    /// recorded instead of trapping, and returns them.
    public static func recordingViolations(_ body: () -> Void) -> [String] {
        let thread = UInt(pthread_self())
        recorded.withLock { $0[thread] = [] }
        body()
        return recorded.withLock { $0.removeValue(forKey: thread) } ?? []
    }

    private static func violation(_ message: String) {
        let thread = UInt(pthread_self())
        let isRecorded = recorded.withLock { recorded -> Bool in
            guard recorded[thread] != nil else { return false }
            recorded[thread]!.append(message)
            return true
        }
        if !isRecorded { fatalError("lock order: \(message) (docs/ARCHITECTURE.md, Lock order)") }
    }
}

// The ways a task is woken, checked: each says what wakes it, for the
// violation's message.

extension CheckedContinuation {
    /// `resume(returning:)`, checked to run with no ordered lock held.
    public func wake(returning value: sending T) {
        LockOrder.checkNoneHeld("resuming a continuation")
        resume(returning: value)
    }

    /// `resume(throwing:)`, checked to run with no ordered lock held.
    public func wake(throwing error: E) {
        LockOrder.checkNoneHeld("resuming a continuation")
        resume(throwing: error)
    }

    /// `resume(with:)`, checked to run with no ordered lock held.
    public func wake(with result: sending Result<T, E>) {
        LockOrder.checkNoneHeld("resuming a continuation")
        resume(with: result)
    }
}

extension CheckedContinuation where E == any Error {
    /// `resume(with:)` for a result of a narrower error, checked to run with no ordered lock held.
    public func wake<Failure: Error>(with result: sending Result<T, Failure>) {
        LockOrder.checkNoneHeld("resuming a continuation")
        resume(with: result)
    }
}

extension CheckedContinuation where T == Void {
    /// `resume()`, checked to run with no ordered lock held.
    public func wake() {
        LockOrder.checkNoneHeld("resuming a continuation")
        resume()
    }
}

extension AsyncStream.Continuation {
    /// `yield(_:)`, checked to run with no ordered lock held.
    @discardableResult
    public func wake(with element: sending Element) -> YieldResult {
        LockOrder.checkNoneHeld("yielding to a stream")
        return yield(element)
    }

    /// `finish()`, checked to run with no ordered lock held.
    public func wakeFinished() {
        LockOrder.checkNoneHeld("finishing a stream")
        finish()
    }
}

extension AsyncThrowingStream.Continuation {
    /// `yield(_:)`, checked to run with no ordered lock held.
    @discardableResult
    public func wake(with element: sending Element) -> YieldResult {
        LockOrder.checkNoneHeld("yielding to a stream")
        return yield(element)
    }

    /// `finish(throwing:)`, checked to run with no ordered lock held.
    public func wakeFinished(throwing error: Failure? = nil) {
        LockOrder.checkNoneHeld("finishing a stream")
        finish(throwing: error)
    }
}

extension Task {
    /// `cancel()`, checked to run with no ordered lock held: its cancellation
    /// handlers run here and may wake waiters.
    public func cancelUnlocked() {
        LockOrder.checkNoneHeld("cancelling a task")
        cancel()
    }
}
