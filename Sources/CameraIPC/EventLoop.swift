import Glibc
import Synchronization
internal import CCameraShims

/// Something that waits on a descriptor registered with an ``EventLoop``.
public protocol EventHandler: AnyObject, Sendable {
    /// Called on the loop's thread when the descriptor is ready.
    func handleEvents(_ events: EventLoop.Events)
}

/// One thread that waits on many descriptors with epoll and runs submitted work.
///
/// Everything that reads sockets runs here; nothing here may block. Work from
/// other threads arrives through ``execute(_:)``, which wakes the loop through
/// an eventfd; work submitted on the loop's own thread runs once the events in
/// hand are handled, with no wake-up. Registration is thread-safe.
///
/// Timers run here too (``schedule(after:_:)``): the loop waits no longer than
/// the earliest deadline.
///
/// The loop is also a `TaskExecutor`: a task that prefers it
/// (`withTaskExecutorPreference(loop)`) runs its nonisolated code here, so a
/// continuation resumed by an event handler continues on this thread — the
/// frame a handler yields is read without another thread waking.
public final class EventLoop: TaskExecutor, @unchecked Sendable {
    /// The epoll readiness bits a handler cares about or is told of.
    public struct Events: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: EPOLLIN.rawValue)
        public static let writable = Events(rawValue: EPOLLOUT.rawValue)
        public static let hangup = Events(rawValue: EPOLLHUP.rawValue | EPOLLRDHUP.rawValue)
        public static let error = Events(rawValue: EPOLLERR.rawValue)
        /// Told once per change, not while it lasts (EPOLLET): for a descriptor
        /// that is never read, as a frame ring's signal.
        public static let edgeTriggered = Events(rawValue: EPOLLET.rawValue)
    }

    /// A registered descriptor, for ``modify(_:events:)`` and ``deregister(_:)``.
    public struct Registration: Hashable, Sendable {
        fileprivate let id: UInt64
        fileprivate let fd: Int32
    }

    /// Submitted work: a closure, or a job of a task that prefers this loop.
    private enum Work {
        case closure(@Sendable () -> Void)
        case job(UnownedJob)
    }

    /// A timer: its deadline on CLOCK_MONOTONIC, and what it runs then.
    private struct Timer {
        let deadline: Int64
        let work: @Sendable () -> Void
    }

    private struct State {
        var work: [Work] = []
        var timers: [UInt64: Timer] = [:]
        var wakeupPending = false
        var handlers: [UInt64: any EventHandler] = [:]
        var nextID: UInt64 = 1
        var stopping = false
        var thread: pthread_t?
    }

    public let name: String
    private let epoll: OwnedFD
    private let wakeup: OwnedFD
    private let state = OrderedMutex(.eventLoop, State())
    private var pthread: pthread_t?

    /// Starts the loop's thread.
    public init(name: String) throws(SystemError) {
        self.name = name
        epoll = OwnedFD(adopting: try Syscall.epollCreate())
        wakeup = OwnedFD(adopting: try Syscall.eventfd(Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK)))
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: 0))
        try Syscall.epollControl(epoll.rawValue, EPOLL_CTL_ADD, wakeup.rawValue, &event)

        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&thread, nil, { context in
            let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
            loop.run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<EventLoop>.fromOpaque(context).release()
            throw SystemError("pthread_create", errno: result)
        }
        pthread = thread
    }

    /// Whether the caller runs on this loop's thread.
    public var inEventLoop: Bool {
        guard let thread = state.withLock({ $0.thread }) else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Runs `task` on the loop's thread, after the events being handled now.
    /// Tasks run in the order they were submitted. After ``stop()`` they are
    /// dropped (and so are the jobs of tasks that prefer the loop: only a loop
    /// that runs for the life of the process should be a task's executor).
    public func execute(_ task: @escaping @Sendable () -> Void) {
        submit(.closure(task))
    }

    /// Runs `work` on the loop's thread once `delay` has passed (about: to the
    /// millisecond, after the events in hand), unless cancelled first. Dropped
    /// after ``stop()``.
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let (seconds, attoseconds) = delay.components
        let deadline = monotonicNanoseconds() + max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        let (id, wake) = state.withLock { state -> (UInt64, Bool) in
            let id = state.nextID
            state.nextID += 1
            guard !state.stopping else { return (id, false) }
            state.timers[id] = Timer(deadline: deadline, work: work)
            // The loop's own thread works out its next wait before it waits again.
            if let thread = state.thread, pthread_equal(thread, pthread_self()) != 0 { return (id, false) }
            defer { state.wakeupPending = true }
            return (id, !state.wakeupPending)
        }
        if wake { Syscall.eventfdWrite(wakeup.rawValue) }
        return ScheduledWork(loop: self, id: id)
    }

    /// Stops a timer that has not run yet; a timer that ran (or is running) is untouched.
    fileprivate func cancel(_ timer: UInt64) {
        _ = state.withLock { $0.timers.removeValue(forKey: timer) }
    }

    /// TaskExecutor: runs a job of a task that prefers this loop.
    public func enqueue(_ job: consuming ExecutorJob) {
        submit(.job(UnownedJob(job)))
    }

    private func submit(_ work: Work) {
        let wake = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.work.append(work)
            // The loop's own thread takes its work before it waits again.
            if let thread = state.thread, pthread_equal(thread, pthread_self()) != 0 { return false }
            defer { state.wakeupPending = true }
            return !state.wakeupPending
        }
        if wake { Syscall.eventfdWrite(wakeup.rawValue) }
    }

    /// Starts telling `handler` when `fd` is ready for `events`. The handler is
    /// kept until ``deregister(_:)``. `fd` must stay open until then.
    public func register(_ fd: Int32, events: Events, handler: any EventHandler) throws(SystemError) -> Registration {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.handlers[state.nextID] = handler
            return state.nextID
        }
        var event = epoll_event(events: events.rawValue, data: epoll_data_t(u64: id))
        do {
            try Syscall.epollControl(epoll.rawValue, EPOLL_CTL_ADD, fd, &event)
        } catch {
            _ = state.withLock { $0.handlers.removeValue(forKey: id) }
            throw error
        }
        return Registration(id: id, fd: fd)
    }

    /// Changes the events a registration waits for.
    public func modify(_ registration: Registration, events: Events) {
        var event = epoll_event(events: events.rawValue, data: epoll_data_t(u64: registration.id))
        // ENOENT: deregistered meanwhile, which is fine.
        try? Syscall.epollControl(epoll.rawValue, EPOLL_CTL_MOD, registration.fd, &event)
    }

    /// Stops waiting on a descriptor and lets go of its handler.
    public func deregister(_ registration: Registration) {
        var event = epoll_event()
        try? Syscall.epollControl(epoll.rawValue, EPOLL_CTL_DEL, registration.fd, &event)
        _ = state.withLock { $0.handlers.removeValue(forKey: registration.id) }
    }

    /// Ends the loop's thread once the work in hand is done, and waits for it
    /// unless called from the loop itself. Handlers still registered are released.
    public func stop() {
        state.withLock { $0.stopping = true }
        Syscall.eventfdWrite(wakeup.rawValue)
        guard let thread = pthread else { return }
        pthread = nil
        if inEventLoop {
            pthread_detach(thread)  // it ends when this task returns
        } else {
            pthread_join(thread, nil)
        }
    }

    private func run() {
        state.withLock { $0.thread = pthread_self() }
        // Named for ps -L, perf and debuggers (the kernel keeps 15 bytes).
        _ = CCameraShims_set_thread_name(String(decoding: name.utf8.prefix(15), as: UTF8.self))
        let capacity = 64
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        // The work of a round, swapped with the state's empty list: neither is
        // ever reallocated, however many rounds come.
        var batch: [Work] = []
        while true {
            let count: Int32
            do {
                count = try Syscall.epollWait(epoll.rawValue, events, Int32(capacity), nextTimeout())
            } catch {
                fatalError("epoll_wait failed on event loop \(name): \(error)")
            }
            for index in 0..<Int(count) {
                let id = events[index].data.u64
                if id == 0 {
                    Syscall.eventfdDrain(wakeup.rawValue)
                    continue
                }
                // A handler deregistered by an earlier event in this batch is skipped.
                guard let handler = state.withLock({ $0.handlers[id] }) else { continue }
                handler.handleEvents(Events(rawValue: events[index].events))
            }
            for timer in dueTimers() { timer() }
            // Work that work submits runs in this round too: nothing is left
            // waiting while the loop sleeps.
            var stopping = false
            while !stopping {
                stopping = state.withLock { state in
                    swap(&batch, &state.work)
                    state.wakeupPending = false
                    return state.stopping
                }
                if batch.isEmpty { break }
                for item in batch {
                    switch item {
                    case .closure(let task): task()
                    case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
                    }
                }
                batch.removeAll(keepingCapacity: true)
            }
            if stopping { break }
        }
        // Taken out under the lock, let go after it: what a dropped handler, job or timer holds may be the last
        // reference to something whose deinit takes a lock the order puts before the loop's (a recording's pools
        // give their memory back to the budget).
        let dropped = state.withLock { state in
            defer {
                state.handlers.removeAll()
                state.work.removeAll()
                state.timers.removeAll()
            }
            return (state.handlers, state.work, state.timers)
        }
        withExtendedLifetime(dropped) {}
    }

    /// Milliseconds until the earliest timer (rounded up), or -1: none.
    private func nextTimeout() -> Int32 {
        guard let deadline = state.withLock({ state in
            state.timers.isEmpty ? nil : state.timers.values.lazy.map { $0.deadline }.min()
        }) else { return -1 }
        let nanoseconds = max(0, deadline - monotonicNanoseconds())
        return Int32(clamping: (nanoseconds + 999_999) / 1_000_000)
    }

    /// The timers due now, earliest first, taken from the list.
    private func dueTimers() -> [@Sendable () -> Void] {
        let now = monotonicNanoseconds()
        return state.withLock { state -> [@Sendable () -> Void] in
            // Most rounds have none: nothing filtered, sorted or allocated.
            guard !state.timers.isEmpty else { return [] }
            let due = state.timers.filter { $0.value.deadline <= now }.sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
            for (id, _) in due { state.timers[id] = nil }
            return due.map(\.value.work)
        }
    }
}

extension EventLoop {
    /// Runs `work` on the loop's thread every `interval` (the first time
    /// `interval` from now) until the timer returned is stopped.
    public func repeating(every interval: Duration, _ work: @escaping @Sendable () -> Void) -> RepeatingWork {
        let repeating = RepeatingWork()
        repeating.next(on: self, every: interval, work)
        return repeating
    }
}

/// A timer on an ``EventLoop`` that runs again and again, until stopped.
public final class RepeatingWork: Sendable {
    private let stopped = Atomic(false)
    /// Its next run; never held while the loop's lock is taken (a leaf under a leaf).
    private let upcoming = OrderedMutex<ScheduledWork?>(.repeatingTimer, nil)

    fileprivate init() {}

    fileprivate func next(on loop: EventLoop, every interval: Duration, _ work: @escaping @Sendable () -> Void) {
        let scheduled = loop.schedule(after: interval) { [weak self, weak loop] in
            guard let self, let loop, !self.stopped.load(ordering: .acquiring) else { return }
            work()
            self.next(on: loop, every: interval, work)
        }
        upcoming.withLock { $0 = scheduled }
        // Stopped meanwhile: the run just scheduled is stopped too.
        if stopped.load(ordering: .acquiring) { scheduled.stop() }
    }

    /// Stops it: no run starts after this returns (one under way ends).
    public func stop() {
        stopped.store(true, ordering: .releasing)
        upcoming.withLock { $0 }?.stop()
    }
}

/// A timer on an ``EventLoop``: stop it before it runs, or let it run.
public struct ScheduledWork: Sendable {
    fileprivate weak var loop: EventLoop?
    fileprivate let id: UInt64

    /// Stops the timer, if it has not run yet. (Not `cancel()`: that is a
    /// task's, which must be cancelled with no lock held, `cancelUnlocked()`.)
    public func stop() {
        loop?.cancel(id)
    }
}
