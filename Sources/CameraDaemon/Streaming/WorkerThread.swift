import CameraIPC

/// A thread of its own that runs jobs one at a time, in the order given: a
/// variant's worker. Unlike a dispatch queue it never waits for a pool thread,
/// so a frame's conversion starts as soon as the frame is handed over, even
/// while another variant's conversion keeps a core busy. The thread ends once
/// ``finish()`` is called and every job before it has run.
///
/// A video variant's runs in SCHED_IDLE: on what the machine has to spare,
/// and any other thread that wakes takes its core at once. A costly conversion
/// then never delays a native frame's delivery, camerad's event loop or any
/// client; when the machine is short, the conversion's own streams lose frames
/// (FRAME_WAS_LATE), as they would anyway. Audio's work (a period resampled,
/// a level measured) costs microseconds and cannot wait: its workers run at
/// the normal priority (`idle` false), or a busy machine would starve them.
final class WorkerThread: Sendable {
    private let jobs = OrderedMutex<(queue: [@Sendable () -> Void], finishing: Bool)>(.workerJobs, ([], false))
    private let thread: PollingThread

    /// - Parameters:
    ///   - name: the thread's name, as `top -H` shows it (15 bytes at most).
    ///   - idle: SCHED_IDLE (the default), or the normal priority.
    ///   - claim: what the thread costs its client, given back when the thread
    ///     ends — not before, however long a job waits on a client's file.
    /// - Throws: when no thread (or its wake-up) can be made.
    init(name: String, idle: Bool = true, holding claim: ClientBudget.Claim? = nil) throws(SystemError) {
        thread = try PollingThread(name: name)
        try thread.start(idle: idle, detached: true) { [self] thread in
            while let job = next(on: thread) { job() }
            withExtendedLifetime(claim) {}
        }
    }

    /// Runs `job` after every job given before it; once ``finish()`` was
    /// called, lets it go unrun, with what it holds. (Kept, it would stay in
    /// the queue of a thread that has ended: a frame handed to a derived node
    /// as it stops holds its subscription, whose sink holds this worker — a
    /// cycle that kept one audio variant in six, its pool and wake-up, for
    /// good.) Who finishes a worker gives back what later jobs would have
    /// (a subscription ended lets go of everything its sink held).
    func async(_ job: @escaping @Sendable () -> Void) {
        _ = asyncUnlessFinished(job)
    }

    /// Runs `job` after every job given before it, surely — or, once
    /// ``finish()`` was called (the thread may be gone), never: false.
    func asyncUnlessFinished(_ job: @escaping @Sendable () -> Void) -> Bool {
        guard jobs.withLock({ jobs -> Bool in
            guard !jobs.finishing else { return false }
            jobs.queue.append(job)
            return true
        }) else { return false }
        thread.wake()
        return true
    }

    /// Ends the thread once the jobs given so far have run.
    func finish() {
        jobs.withLock { $0.finishing = true }
        thread.wake()
    }

    /// The next job, waiting for one; nil when finished and none is left.
    private func next(on thread: PollingThread) -> (@Sendable () -> Void)? {
        while true {
            let job = jobs.withLock { jobs -> (@Sendable () -> Void)?? in
                if !jobs.queue.isEmpty { return .some(jobs.queue.removeFirst()) }
                return jobs.finishing ? .some(nil) : nil
            }
            if let job { return job }
            _ = thread.wait()
        }
    }
}
