import CameraIPC

/// A thread of its own that runs jobs one at a time, in the order given: a
/// variant's worker. Unlike a dispatch queue it never waits for a pool thread,
/// so a frame's conversion starts as soon as the frame is handed over, even
/// while another variant's conversion keeps a core busy. The thread ends once
/// ``finish()`` is called and every job before it has run.
///
/// Every worker runs at the normal priority, sharing the CPU fairly with the
/// machine's other threads, as a process of its own would: what it makes (a
/// converted frame, an encoded packet, a recording's bytes) cannot be had
/// again once lost. (They ran in SCHED_IDLE once, on what the machine had to
/// spare: beside one busy loop per core a 10 s recording then kept 2 frames of
/// 300 and took 201 s.) A native stream is protected by its own zero-copy path,
/// which runs on the capture thread, not by starving the others.
final class WorkerThread: Sendable {
    private let jobs = OrderedMutex<(queue: [@Sendable () -> Void], finishing: Bool)>(.workerJobs, ([], false))
    private let thread: PollingThread

    /// - Parameters:
    ///   - name: the thread's name, as `top -H` shows it (15 bytes at most).
    ///   - claim: what the thread costs its client, given back when the thread
    ///     ends — not before, however long a job waits on a client's file.
    ///   - priority: how it is scheduled.
    /// - Throws: when no thread (or its wake-up) can be made.
    init(name: String, holding claim: ClientBudget.Claim? = nil, priority: PollingThread.Priority = .normal) throws(SystemError) {
        thread = try PollingThread(name: name, priority: priority)
        try thread.start(detached: true) { [self] thread in
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
