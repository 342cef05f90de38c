import CameraIPC
import Foundation
import Glibc

/// What the kernel charges camerad for waking its clients, measured apart:
/// one `FrameSignal` raise (a write of camerad's own eventfd, which the epoll
/// instance clients get watches) to N processes that wait on it as camerad's
/// clients do (epoll, edge-triggered, never reading it), 30 times a second, and
/// the writer's own CPU for each raise.
/// camerad wakes a user's clients with exactly such a raise per frame, so what
/// waking 16 costs over waking one is a floor under camerad's own CPU per
/// source frame at 16 clients over its figure at 1, whatever else camerad does.
enum WakeFloor {
    /// The writer's CPU per write, in µs, waking 1 and waking `many` processes,
    /// measured in `rounds` turns of each (every other round backwards).
    static func measure(many: Int, rounds: Int, writes: Int) throws -> (one: Double, many: Double) {
        var total = (one: 0.0, many: 0.0)
        for round in 0..<rounds {
            for waiters in round % 2 == 0 ? [1, many] : [many, 1] {
                let cost = try writerCPU(waiters: waiters, writes: writes)
                if waiters == 1 { total.one += cost } else { total.many += cost }
            }
        }
        return (total.one / Double(rounds) * 1e6, total.many / Double(rounds) * 1e6)
    }

    /// Seconds of the writer thread's CPU per write, `waiters` processes waiting.
    private static func writerCPU(waiters: Int, writes: Int) throws -> Double {
        let signal = try FrameSignal()
        let children = try (0..<waiters).map { _ in try Waiter(signal: signal.clientEnd.rawValue) }
        defer { children.forEach { $0.stop() } }
        var spent = 0.0
        for _ in 0..<writes {
            // A frame's interval: every waiter back asleep, the cores idle, as between camerad's frames.
            usleep(33_333)
            let before = threadCPU()
            signal.raise()
            spent += threadCPU() - before
        }
        return spent / Double(writes)
    }

    private static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// A process of camerad-bench's own (`--wake-waiter`) waiting on the signal
    /// as its descriptor 3; it says it waits with a byte on its standard
    /// output and ends when its standard input closes.
    private final class Waiter {
        let pid: pid_t
        private let input: Int32

        init(signal: Int32) throws {
            var toChild: [Int32] = [0, 0]
            var fromChild: [Int32] = [0, 0]
            guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else {
                throw BenchError("pipe: \(String(cString: strerror(errno)))")
            }
            // Only the ends dup2 gives it reach a waiter: another's stdin left
            // open in a sibling would keep that one from ever seeing it close.
            for end in toChild + fromChild { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
            posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
            posix_spawn_file_actions_adddup2(&actions, signal, 3)
            let executable = "/proc/self/exe"
            let arguments: [UnsafeMutablePointer<CChar>?] = [strdup(executable), strdup("--wake-waiter"), nil]
            defer { arguments.forEach { free($0) } }
            var pid = pid_t()
            let failed = posix_spawn(&pid, executable, &actions, nil, arguments, environ)
            close(toChild[0])
            close(fromChild[1])
            defer { close(fromChild[0]) }
            guard failed == 0 else {
                close(toChild[1])
                throw BenchError("cannot start \(executable) --wake-waiter: \(String(cString: strerror(failed)))")
            }
            var ready: UInt8 = 0
            guard read(fromChild[0], &ready, 1) == 1 else {
                close(toChild[1])
                waitpid(pid, nil, 0)
                throw BenchError("\(executable) --wake-waiter ended before it waited")
            }
            self.pid = pid
            input = toChild[1]
        }

        func stop() {
            close(input)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    /// `camerad-bench --wake-waiter`: waits on descriptor 3 as a CaptureKit
    /// client waits on its frame signal (an ``EventLoop``, edge-triggered,
    /// never read), until standard input closes.
    static func waitAsAClient() -> Never {
        final class Handler: EventHandler {
            let onEvents: @Sendable () -> Void
            init(_ onEvents: @escaping @Sendable () -> Void) { self.onEvents = onEvents }
            func handleEvents(_ events: EventLoop.Events) { onEvents() }
        }
        do {
            let loop = try EventLoop(name: "wake-waiter")
            _ = try loop.register(3, events: [.readable, .edgeTriggered], handler: Handler {})
            _ = try loop.register(0, events: [.readable, .hangup], handler: Handler { exit(0) })
        } catch {
            exit(1)
        }
        var ready: UInt8 = 1
        _ = write(1, &ready, 1)
        while true { pause() }
    }
}
