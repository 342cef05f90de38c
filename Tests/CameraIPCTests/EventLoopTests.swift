import CameraIPC
import Dispatch
import Testing

/// The event loop as a task executor: what CaptureKit's sampleBufferExecutor
/// stands on.
@Suite(.timeLimit(.minutes(1))) struct EventLoopExecutorTests {
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
