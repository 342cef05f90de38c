import CameraIPC
import Foundation
import Glibc

/// SIGINT, SIGTERM and SIGHUP, taken with `sigwait` on a thread of their own.
///
/// ``block()`` must run before any other thread starts; signals then stay
/// pending until ``next()`` takes them.
final class DaemonSignals: Sendable {
    /// What a signal asks of the daemon.
    enum Request: Sendable {
        /// SIGINT or SIGTERM: end every call, remove the socket, exit 0.
        case shutDown(signal: String)
        /// SIGHUP: read the stored defaults again, and serve on.
        case reload
    }

    private static let numbers = [SIGINT, SIGTERM, SIGHUP]
    private let requests: AsyncStream<Request>

    /// Blocks the signals in this thread and every thread it starts.
    static func block() {
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Starts taking the blocked signals.
    static func start() -> DaemonSignals {
        let (requests, continuation) = AsyncStream.makeStream(of: Request.self)
        let thread = Thread {
            var set = signalSet()
            while true {
                var number: Int32 = 0
                guard sigwait(&set, &number) == 0 else { continue }
                continuation.wake(with: number == SIGHUP ? .reload : .shutDown(signal: number == SIGINT ? "SIGINT" : "SIGTERM"))
            }
        }
        thread.name = "camerad-signals"
        thread.start()
        return DaemonSignals(requests: requests)
    }

    private init(requests: AsyncStream<Request>) {
        self.requests = requests
    }

    /// The next request; one to shut down if the signal thread is gone.
    func next() async -> Request {
        for await request in requests { return request }
        return .shutDown(signal: "end of signals")
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in numbers { sigaddset(&set, number) }
        return set
    }
}
