@testable import CameraDaemon
import CameraProtocol
import Testing

/// Every pair of state and event of ``CaptureLifecycle``.
@Suite struct CaptureLifecycleTests {
    static let vga = mode(640, 480)
    static let hd = mode(1280, 720)
    static let busy = CameraError(.deviceBusy, "in use by another program")

    static func mode(_ width: UInt32, _ height: UInt32) -> CaptureMode {
        let format = DeviceFormat(pixelFormat: .yuyv, width: width, height: height, name: "YUYV", isCompressed: false,
                                  frameRateRanges: [])
        return CaptureMode(formatIndex: 0, format: format, frameDuration: .thirtieth)
    }

    /// A lifecycle driven to `state` by legal events.
    static func lifecycle(_ state: String) -> CaptureLifecycle {
        var lifecycle = CaptureLifecycle()
        switch state {
        case "idle": break
        case "starting": _ = lifecycle.handle(.start(vga))
        case "running": _ = lifecycle.handle(.start(vga)); _ = lifecycle.handle(.started(generation: 1))
        case "stopping":
            _ = lifecycle.handle(.start(vga)); _ = lifecycle.handle(.started(generation: 1)); _ = lifecycle.handle(.stop)
        case "failed": _ = lifecycle.handle(.start(vga)); _ = lifecycle.handle(.startFailed(generation: 1, busy))
        default: Issue.record("no state \(state)")
        }
        return lifecycle
    }

    @Test func aStartRunsThenAStopStopsAndEachHasAJob() {
        var lifecycle = CaptureLifecycle()
        #expect(lifecycle.handle(.start(Self.vga)) == .jobs([.start(Self.vga, generation: 1)]))
        #expect(lifecycle.state == .starting(Self.vga, generation: 1, stopWhenStarted: false) && lifecycle.mode == Self.vga)
        #expect(lifecycle.handle(.start(Self.hd)) == .ignored, "a second user joins the capture starting")
        #expect(lifecycle.handle(.started(generation: 1)) == .jobs([]))
        #expect(lifecycle.state == .running(Self.vga, generation: 1) && lifecycle.isRunning)
        #expect(lifecycle.handle(.start(Self.hd)) == .ignored, "and the one running")
        #expect(lifecycle.handle(.stop) == .jobs([.stop(generation: 1)]))
        #expect(lifecycle.state == .stopping(generation: 1) && lifecycle.mode == nil)
        #expect(lifecycle.handle(.stop) == .ignored)
        #expect(lifecycle.handle(.stopped(generation: 1)) == .jobs([]))
        #expect(lifecycle.state == .idle)
    }

    /// The bug this lifecycle fixes: a start asked for while a stop is under way
    /// is queued behind the stop, never run beside it.
    @Test func aStartWhileStoppingIsQueuedBehindTheStop() {
        var lifecycle = Self.lifecycle("stopping")
        #expect(lifecycle.handle(.start(Self.hd)) == .jobs([.start(Self.hd, generation: 2)]), "only a start: the stop job is queued already")
        #expect(lifecycle.state == .starting(Self.hd, generation: 2, stopWhenStarted: false))
        #expect(lifecycle.handle(.stopped(generation: 1)) == .ignored, "the older stop ending changes nothing")
        #expect(lifecycle.handle(.started(generation: 2)) == .jobs([]))
        #expect(lifecycle.state == .running(Self.hd, generation: 2))
    }

    @Test func aStopWhileStartingStopsOnceStartedUnlessSomeoneStartsAgain() {
        var lifecycle = Self.lifecycle("starting")
        #expect(lifecycle.handle(.stop) == .jobs([]))
        #expect(lifecycle.state == .starting(Self.vga, generation: 1, stopWhenStarted: true))
        #expect(lifecycle.handle(.started(generation: 1)) == .jobs([.stop(generation: 1)]))
        #expect(lifecycle.state == .stopping(generation: 1))

        var wantedAgain = Self.lifecycle("starting")
        _ = wantedAgain.handle(.stop)
        #expect(wantedAgain.handle(.start(Self.vga)) == .ignored)
        #expect(wantedAgain.handle(.started(generation: 1)) == .jobs([]))
        #expect(wantedAgain.isRunning)
    }

    /// A failed start keeps its reason (for whoever waited on it) until the
    /// next start, which clears it.
    @Test func aFailedStartKeepsItsReasonUntilTheNextStart() {
        var lifecycle = Self.lifecycle("starting")
        #expect(lifecycle.handle(.startFailed(generation: 1, Self.busy)) == .jobs([]))
        #expect(lifecycle.state == .failed(Self.busy) && lifecycle.mode == nil && lifecycle.currentGeneration == nil)
        #expect(lifecycle.handle(.stop) == .ignored && lifecycle.state == .failed(Self.busy), "nothing runs to stop")
        #expect(lifecycle.handle(.failed(generation: 1)) == .ignored)
        #expect(lifecycle.handle(.restart(Self.hd)) == .ignored)
        #expect(lifecycle.handle(.start(Self.vga)) == .jobs([.start(Self.vga, generation: 2)]), "a later start tries again")
        #expect(lifecycle.state == .starting(Self.vga, generation: 2, stopWhenStarted: false), "and the reason is gone")
    }

    @Test func aCaptureThatFailsIsStoppedEvenWhileStarting() {
        var running = Self.lifecycle("running")
        #expect(running.handle(.failed(generation: 1)) == .jobs([.stop(generation: 1)]))
        #expect(running.state == .stopping(generation: 1))
        #expect(running.handle(.failed(generation: 1)) == .ignored, "reported twice")

        var starting = Self.lifecycle("starting")
        #expect(starting.handle(.failed(generation: 1)) == .jobs([]))
        #expect(starting.handle(.started(generation: 1)) == .jobs([.stop(generation: 1)]))
    }

    @Test func aRestartStopsThenStartsAndOlderResultsAreStale() {
        var lifecycle = Self.lifecycle("running")
        #expect(lifecycle.handle(.restart(Self.hd)) == .jobs([.stop(generation: 1), .start(Self.hd, generation: 2)]))
        #expect(lifecycle.state == .starting(Self.hd, generation: 2, stopWhenStarted: false))
        #expect(lifecycle.handle(.failed(generation: 1)) == .ignored)
        #expect(lifecycle.handle(.stopped(generation: 1)) == .ignored)
        #expect(lifecycle.handle(.started(generation: 2)) == .jobs([]))
        #expect(lifecycle.state == .running(Self.hd, generation: 2))

        var starting = Self.lifecycle("starting")
        #expect(starting.handle(.restart(Self.hd)) == .jobs([.stop(generation: 1), .start(Self.hd, generation: 2)]),
                "a restart while starting queues behind the start")
        #expect(starting.handle(.started(generation: 1)) == .ignored, "the superseded start is stopped by the queued stop")
        #expect(starting.handle(.startFailed(generation: 1, Self.busy)) == .ignored)

        for state in ["idle", "stopping"] {
            var lifecycle = Self.lifecycle(state)
            #expect(lifecycle.handle(.restart(Self.hd)) == .ignored, "\(state): nothing runs; the next start takes the new mode")
        }
    }

    /// Results of jobs that were never asked for are the caller's bug.
    @Test(arguments: [
        ("idle", CaptureLifecycle.Event.started(generation: 1)),
        ("idle", .startFailed(generation: 1, busy)),
        ("idle", .stopped(generation: 1)),
        ("running", .started(generation: 1)),
        ("running", .startFailed(generation: 1, busy)),
        ("running", .stopped(generation: 1)),
        ("stopping", .started(generation: 1)),
        ("stopping", .startFailed(generation: 1, busy)),
        ("starting", .stopped(generation: 1)),
        ("failed", .started(generation: 1)),
        ("failed", .startFailed(generation: 1, busy)),
        ("failed", .stopped(generation: 1)),
    ])
    func impossiblePairsAreIllegalWithAReason(state: String, event: CaptureLifecycle.Event) {
        var lifecycle = Self.lifecycle(state)
        let before = lifecycle.state
        guard case .illegal(let reason) = lifecycle.handle(event) else {
            Issue.record("\(state) + \(event) was not illegal")
            return
        }
        #expect(!reason.isEmpty)
        #expect(lifecycle.state == before, "an illegal event changes nothing")
    }

    @Test func eventsThatChangeNothingAreIgnored() {
        var idle = Self.lifecycle("idle")
        #expect(idle.handle(.stop) == .ignored)
        #expect(idle.handle(.failed(generation: 1)) == .ignored)
        var stopping = Self.lifecycle("stopping")
        #expect(stopping.handle(.failed(generation: 1)) == .ignored)
    }
}
