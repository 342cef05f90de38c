/// The lifecycle of a device's capture: at most one at a time, started and
/// stopped by jobs on the device's ``DeviceExecutor``, which run in the order
/// they were asked for.
///
/// ```
///            start                 started              stop
///   idle ───────────► starting ────────────► running ─────────► stopping
///    ▲                  │  │ stop: stops once started   │ failed:     │ stopped
///    │                  │  └──────────────┐             │ stopping    │
///    │                  │ startFailed     ▼             ▼             │
///    │                  ▼             (stopping) ◄──────┘             │
///    │               failed(why) ── start ──► starting                │
///    └────────────────────────────────────────────────────────────────┘
///
///   stopping ── start ──► starting: the start job is queued behind the stop
///   job, so the device is let go of before it is opened again. failed keeps
///   why the last start failed, for whoever waited on it, until the next start.
///   running or starting ── restart(mode) ──► starting: a stop job and a start
///   job, in that order, behind whatever is queued.
/// ```
///
/// Each start gets a new generation; frames and job results of an older one are
/// stale and ignored (the jobs queued with the newer start stop what the older
/// one made). ``handle(_:)`` lists every pair of state and event; a pair that
/// cannot happen is a bug in the caller, reported as ``Outcome/illegal(_:)``.
struct CaptureLifecycle: Sendable {
    enum State: Equatable, Sendable {
        case idle
        /// A start job is queued or running; `stopWhenStarted` when nobody wants
        /// the capture any more by the time it is up.
        case starting(CaptureMode, generation: UInt64, stopWhenStarted: Bool)
        case running(CaptureMode, generation: UInt64)
        /// A stop job is queued or running.
        case stopping(generation: UInt64)
        /// The last start failed, for this reason; nothing runs.
        case failed(CameraError)
    }

    enum Event: Sendable {
        /// Someone needs the capture (a stream, a photo), in `mode` if it starts now.
        case start(CaptureMode)
        /// The start job of `generation` has the capture running.
        case started(generation: UInt64)
        /// The start job of `generation` failed, for this reason.
        case startFailed(generation: UInt64, CameraError)
        /// Nobody needs the capture any more.
        case stop
        /// The stop job of `generation` is done: the device is let go of.
        case stopped(generation: UInt64)
        /// The capture of `generation` ended by itself (the device failed or went).
        case failed(generation: UInt64)
        /// The device's mode changed under a running capture: start again in `mode`.
        case restart(CaptureMode)
    }

    /// A job for the device's executor.
    enum Job: Equatable, Sendable {
        case start(CaptureMode, generation: UInt64)
        case stop(generation: UInt64)
    }

    enum Outcome: Equatable, Sendable {
        /// Queue these jobs, in this order (none: nothing to do).
        case jobs([Job])
        /// An event of an older generation, or a start already under way: nothing to do.
        case ignored
        /// A pair that cannot happen: the caller's bug, with why.
        case illegal(String)
    }

    private(set) var state = State.idle
    private var generation: UInt64 = 0

    /// The mode the device starts or runs in; nil when idle or stopping.
    var mode: CaptureMode? {
        switch state {
        case .starting(let mode, _, _), .running(let mode, _): mode
        case .idle, .stopping, .failed: nil
        }
    }

    /// The generation whose frames count now: the one starting or running.
    var currentGeneration: UInt64? {
        switch state {
        case .starting(_, let generation, _), .running(_, let generation): generation
        case .idle, .stopping, .failed: nil
        }
    }

    var isRunning: Bool {
        if case .running = state { return true }
        return false
    }

    mutating func handle(_ event: Event) -> Outcome {
        // Results of a superseded start (a restart, or a start after a stop, came
        // since) are stale: the jobs queued with the newer start deal with them.
        if let generation = Self.generation(of: event), generation < self.generation { return .ignored }
        switch (state, event) {
        // start
        case (.idle, .start(let mode)), (.stopping, .start(let mode)), (.failed, .start(let mode)):
            return begin(mode, stopping: nil)
        case (.starting(let mode, let current, _), .start):
            state = .starting(mode, generation: current, stopWhenStarted: false)
            return .ignored
        case (.running, .start):
            return .ignored

        // started
        case (.starting(let mode, let current, let stopWhenStarted), .started):
            if stopWhenStarted {
                state = .stopping(generation: current)
                return .jobs([.stop(generation: current)])
            }
            state = .running(mode, generation: current)
            return .jobs([])
        case (.idle, .started), (.running, .started), (.stopping, .started), (.failed, .started):
            return .illegal("the start job of generation \(generation) ended while \(state): only a capture starting is started")

        // startFailed
        case (.starting, .startFailed(_, let reason)):
            state = .failed(reason)
            return .jobs([])
        case (.idle, .startFailed), (.running, .startFailed), (.stopping, .startFailed), (.failed, .startFailed):
            return .illegal("the start job of generation \(generation) failed while \(state): only a capture starting fails to start")

        // stop
        case (.idle, .stop), (.stopping, .stop), (.failed, .stop):
            return .ignored
        case (.starting(let mode, let current, _), .stop):
            state = .starting(mode, generation: current, stopWhenStarted: true)
            return .jobs([])
        case (.running(_, let current), .stop):
            state = .stopping(generation: current)
            return .jobs([.stop(generation: current)])

        // stopped
        case (.stopping, .stopped):
            state = .idle
            return .jobs([])
        case (.idle, .stopped), (.starting, .stopped), (.running, .stopped), (.failed, .stopped):
            return .illegal("the stop job of generation \(generation) ended while \(state): a capture stops only from stopping")

        // failed
        case (.running(_, let current), .failed):
            state = .stopping(generation: current)
            return .jobs([.stop(generation: current)])
        case (.starting(let mode, let current, _), .failed):
            // It failed before its start job said it was up: stop it once it is.
            state = .starting(mode, generation: current, stopWhenStarted: true)
            return .jobs([])
        case (.stopping, .failed), (.idle, .failed), (.failed, .failed):
            return .ignored  // being stopped already, or stopped

        // restart
        case (.running(_, let current), .restart(let mode)), (.starting(_, let current, _), .restart(let mode)):
            return begin(mode, stopping: current)
        case (.idle, .restart), (.stopping, .restart), (.failed, .restart):
            return .ignored  // no capture to restart: the next start takes the new mode
        }
    }

    /// A new generation starting in `mode`, after stopping `stopping` if it runs.
    private mutating func begin(_ mode: CaptureMode, stopping: UInt64?) -> Outcome {
        generation += 1
        state = .starting(mode, generation: generation, stopWhenStarted: false)
        return .jobs((stopping.map { [Job.stop(generation: $0)] } ?? []) + [.start(mode, generation: generation)])
    }

    private static func generation(of event: Event) -> UInt64? {
        switch event {
        case .started(let generation), .startFailed(let generation, _), .stopped(let generation), .failed(let generation):
            generation
        case .start, .stop, .restart:
            nil
        }
    }
}
