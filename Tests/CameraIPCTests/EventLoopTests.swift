import CameraIPC
import CameraTestSupport
import Dispatch
import Synchronization
import Testing

/// The event loop as a task executor: what CaptureKit's sampleBufferExecutor
/// stands on.
@Suite(.timeLimit(.minutes(4))) struct EventLoopExecutorTests {
    @Test func aTaskThatPrefersTheLoopRunsOnItsThreadAcrossSuspensions() async throws {
        let loop = try EventLoop(name: "test")
        defer { loop.stop() }
        let threads = await withTaskExecutorPreference(loop) {
            var onLoop = [loop.inEventLoop]
            // Resumed from another thread: the task still continues on the loop.
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume() }
            }
            onLoop.append(loop.inEventLoop)
            try? await Task.sleep(for: .milliseconds(1))
            onLoop.append(loop.inEventLoop)
            return onLoop
        }
        #expect(threads == [true, true, true])
        #expect(!loop.inEventLoop)
    }

    /// Elements yielded on the loop's thread (as a frame is, by the socket's
    /// handler) reach a reader that prefers the loop on that thread, in order —
    /// and none is left waiting while the loop sleeps (work the loop submits to
    /// itself wakes nothing: it runs before the loop waits again).
    @Test func elementsYieldedOnTheLoopAreReadThereInOrder() async throws {
        let loop = try EventLoop(name: "test")
        defer { loop.stop() }
        let (elements, continuation) = AsyncStream.makeStream(of: Int.self)
        let count = 2000
        // One element per loop round, as frames come one per wake-up.
        @Sendable func yield(_ value: Int) {
            continuation.yield(value)
            if value + 1 < count { loop.execute { yield(value + 1) } } else { continuation.finish() }
        }
        let (read, offLoop) = await withTaskExecutorPreference(loop) {
            loop.execute { yield(0) }
            var read: [Int] = []
            var offLoop = 0
            for await value in elements {
                read.append(value)
                if !loop.inEventLoop { offLoop += 1 }
            }
            return (read, offLoop)
        }
        #expect(read == Array(0..<count))
        #expect(offLoop == 0)
    }
}

/// Timers on the loop (camerad's only timers): each runs on the loop's thread,
/// never before its deadline, in deadline order; a cancelled one never runs.
@Suite(.timeLimit(.minutes(4))) struct EventLoopTimerTests {
    @Test func timersRunOnTheLoopAfterTheirDeadlinesInOrder() async throws {
        let loop = try EventLoop(name: "test")
        defer { loop.stop() }
        let (ran, continuation) = AsyncStream.makeStream(of: (name: String, onLoop: Bool, early: Bool).self)
        let scheduled = monotonicNanoseconds()
        for (name, milliseconds) in [("third", 60), ("first", 20), ("second", 40)] {
            let deadline = scheduled + Int64(milliseconds) * 1_000_000
            loop.schedule(after: .milliseconds(milliseconds)) {
                continuation.yield((name, loop.inEventLoop, monotonicNanoseconds() < deadline))
            }
        }
        let cancelled = loop.schedule(after: .milliseconds(30)) { continuation.yield(("cancelled", true, false)) }
        cancelled.stop()
        // A timer scheduled on the loop's own thread is counted in its next wait.
        loop.execute {
            loop.schedule(after: .milliseconds(80)) {
                continuation.yield(("from the loop", loop.inEventLoop, false))
                continuation.finish()
            }
        }
        var order: [String] = []
        for await timer in ran {
            order.append(timer.name)
            #expect(timer.onLoop && !timer.early, "\(timer.name)")
        }
        #expect(order == ["first", "second", "third", "from the loop"])
    }

    /// A repeating timer (a recording's progress) runs on the loop again and
    /// again; once stopped, no run starts — though a timer due after several
    /// of its periods has run.
    @Test func aRepeatingTimerRunsOnTheLoopUntilStopped() async throws {
        let loop = try EventLoop(name: "test")
        defer { loop.stop() }
        let runs = Atomic(0), offLoop = Atomic(0)
        let timer = loop.repeating(every: .milliseconds(5)) {
            runs.add(1, ordering: .relaxed)
            if !loop.inEventLoop { offLoop.add(1, ordering: .relaxed) }
        }
        #expect(await waitUntil { runs.load(ordering: .relaxed) >= 5 }, "it repeats")
        timer.stop()
        let stopped = runs.load(ordering: .relaxed)
        // Four of its periods later, by the loop's own clock.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.schedule(after: .milliseconds(20)) { done.resume() }
        }
        #expect(runs.load(ordering: .relaxed) <= stopped + 1, "none started after the stop (one under way may end)")
        #expect(offLoop.load(ordering: .relaxed) == 0)
    }
}
