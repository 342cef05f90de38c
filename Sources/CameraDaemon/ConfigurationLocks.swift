import CameraIPC
import CameraProtocol
import Synchronization

/// AVCaptureDevice's configuration lock, across processes: at most one
/// connection holds a device's lock; it may take it again (counted, like a
/// recursive lock); it loses it when it unlocks as often, or when its
/// connection ends for any reason, SIGKILL included.
///
/// Others asking get `DEVICE_LOCKED` naming the holder at once, or wait in
/// line up to the time they asked for.
final class ConfigurationLocks: Sendable {
    struct Holder: Sendable, Equatable {
        let connectionID: UInt64
        let pid: Int32
        let processName: String
        let clientName: String
        var count: Int

        /// "pid 4242 (obs)".
        var description: String { "pid \(pid) (\((processName.isEmpty ? clientName : processName).echoed))" }
    }

    private struct Waiter {
        let id: UInt64
        let holder: Holder
        let continuation: CheckedContinuation<Void, any Error>
        var timer: ScheduledWork?
    }

    private struct State {
        var holders: [String: Holder] = [:]
        var waiters: [String: [Waiter]] = [:]
        var cancelled: Set<UInt64> = []
        var nextWaiterID: UInt64 = 1
    }
    private let state = OrderedMutex(.configurationLocks, State())
    /// Where a waiter's deadline runs: the daemon's event loop.
    private let timers: EventLoop
    private let observer = OrderedMutex<@Sendable (_ uniqueID: String) -> Void>(.configurationObserver, { _ in })

    init(timers: EventLoop) {
        self.timers = timers
    }

    /// `handler` is told, outside the lock, when a device's holder changes
    /// (taken, or released).
    func observe(_ handler: @escaping @Sendable (_ uniqueID: String) -> Void) {
        observer.withLock { $0 = handler }
    }

    private func onChange(_ uniqueID: String) {
        observer.withLock { $0 }(uniqueID)
    }

    /// Who holds `uniqueID`'s lock; nil when nobody does.
    func holder(of uniqueID: String) -> Holder? {
        state.withLock { $0.holders[uniqueID] }
    }

    /// Takes the lock for the caller's connection, waiting up to `wait` for
    /// another holder to let go.
    ///
    /// - Returns: how many times the connection now holds it.
    /// - Throws: `DEVICE_LOCKED` naming the holder; `CancellationError` when the call goes.
    func lock(_ uniqueID: String, for context: RPCContext, wait: Duration = .zero) async throws -> Int {
        let caller = Holder(connectionID: context.connectionID, pid: context.peer.pid,
                            processName: context.peer.processName ?? "", clientName: context.clientName, count: 1)
        enum Outcome { case taken(Int), busy(Holder), queued(UInt64) }
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        let outcome = state.withLock { state -> Outcome in
            if var holder = state.holders[uniqueID] {
                guard holder.connectionID == caller.connectionID else {
                    return wait > .zero ? .queued(id) : .busy(holder)
                }
                holder.count += 1
                state.holders[uniqueID] = holder
                return .taken(holder.count)
            }
            state.holders[uniqueID] = caller
            return .taken(1)
        }
        switch outcome {
        case .taken(let count):
            if count == 1 { onChange(uniqueID) }
            return count
        case .busy(let holder):
            throw Self.lockedError(uniqueID, by: holder)
        case .queued(let id):
            // A cancellation that came after the wait ended leaves its mark: clear it.
            defer { _ = state.withLock { $0.cancelled.remove(id) } }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    enqueue(Waiter(id: id, holder: caller, continuation: continuation), on: uniqueID, wait: wait)
                }
            } onCancel: {
                cancelWaiter(id, on: uniqueID)
            }
            onChange(uniqueID)
            return 1
        }
    }

    /// Undoes one ``lock(_:for:wait:)``.
    ///
    /// - Returns: how many times the connection still holds it.
    /// - Throws: `NOT_LOCKED` when the connection does not hold it.
    func unlock(_ uniqueID: String, connectionID: UInt64) throws -> Int {
        let (remaining, wake) = try state.withLock { state -> (Int, Wake?) in
            guard var holder = state.holders[uniqueID], holder.connectionID == connectionID else {
                throw CameraError(.notLocked, "\(uniqueID) is not locked by this client; there is nothing to unlock")
            }
            holder.count -= 1
            if holder.count > 0 {
                state.holders[uniqueID] = holder
                return (holder.count, nil)
            }
            state.holders[uniqueID] = nil
            return (0, handOn(uniqueID, &state))
        }
        wake?.run()
        if remaining == 0 { onChange(uniqueID) }
        return remaining
    }

    /// Fails unless `connectionID` holds `uniqueID`'s lock.
    ///
    /// - Throws: `NOT_LOCKED`, naming the holder if another client has it.
    func requireHolder(_ uniqueID: String, connectionID: UInt64, toChange what: String) throws {
        let holder = holder(of: uniqueID)
        guard holder?.connectionID != connectionID else { return }
        let other = holder.map { "; \($0.description) holds it now" } ?? ""
        throw CameraError(.notLocked,
                          "changing \(what) of \(uniqueID) needs its configuration lock\(other); lock it first (lockForConfiguration, or 'camctl set', which locks for you)")
    }

    /// Releases every lock of a connection that has closed.
    func releaseAll(heldBy connectionID: UInt64) {
        let (released, wakes) = state.withLock { state -> ([String], [Wake]) in
            let devices = state.holders.filter { $0.value.connectionID == connectionID }.map(\.key)
            var wakes: [Wake] = []
            for uniqueID in devices {
                state.holders[uniqueID] = nil
                if let wake = handOn(uniqueID, &state) { wakes.append(wake) }
            }
            return (devices, wakes)
        }
        for wake in wakes { wake.run() }
        for uniqueID in released { onChange(uniqueID) }
    }

    static func lockedError(_ uniqueID: String, by holder: Holder) -> CameraError {
        CameraError(.deviceLocked,
                    "\(uniqueID) is locked for configuration by \(holder.description); retry when it unlocks or pass --wait")
    }

    // MARK: - Waiting in line
    //
    // A waiter is woken only after the state's lock is let go: resuming a task
    // takes that task's own lock, which a thread cancelling it holds while its
    // cancellation handler waits for the state's.

    /// A waiting call to resume, and its timer to stop.
    private struct Wake {
        let continuation: CheckedContinuation<Void, any Error>
        let result: Result<Void, any Error>
        let timer: ScheduledWork?

        func run() {
            timer?.stop()
            continuation.wake(with: result)
        }
    }

    private func enqueue(_ waiter: Waiter, on uniqueID: String, wait: Duration) {
        let id = waiter.id
        let timer = timers.schedule(after: wait) { [weak self] in self?.expire(id, on: uniqueID) }
        let wake = state.withLock { state -> Wake? in
            if state.cancelled.remove(waiter.id) != nil {
                return Wake(continuation: waiter.continuation, result: .failure(CancellationError()), timer: timer)
            }
            if state.holders[uniqueID] == nil {
                // Released between the first look and now.
                state.holders[uniqueID] = waiter.holder
                return Wake(continuation: waiter.continuation, result: .success(()), timer: timer)
            }
            var waiter = waiter
            waiter.timer = timer
            state.waiters[uniqueID, default: []].append(waiter)
            return nil
        }
        wake?.run()
    }

    /// The first in line takes a released lock; the caller wakes it.
    private func handOn(_ uniqueID: String, _ state: inout State) -> Wake? {
        guard var line = state.waiters[uniqueID], !line.isEmpty else { return nil }
        let next = line.removeFirst()
        state.waiters[uniqueID] = line.isEmpty ? nil : line
        state.holders[uniqueID] = next.holder
        return Wake(continuation: next.continuation, result: .success(()), timer: next.timer)
    }

    private func expire(_ id: UInt64, on uniqueID: String) {
        let wake = state.withLock { state -> Wake? in
            guard let index = state.waiters[uniqueID]?.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = state.waiters[uniqueID]!.remove(at: index)
            let error = state.holders[uniqueID].map { Self.lockedError(uniqueID, by: $0) }
                ?? CameraError(.timedOut, "waiting for the lock of \(uniqueID) timed out")
            return Wake(continuation: waiter.continuation, result: .failure(error), timer: nil)
        }
        wake?.run()
    }

    private func cancelWaiter(_ id: UInt64, on uniqueID: String) {
        let wake = state.withLock { state -> Wake? in
            guard let index = state.waiters[uniqueID]?.firstIndex(where: { $0.id == id }) else {
                state.cancelled.insert(id)
                return nil
            }
            let waiter = state.waiters[uniqueID]!.remove(at: index)
            return Wake(continuation: waiter.continuation, result: .failure(CancellationError()), timer: waiter.timer)
        }
        wake?.run()
    }
}
