import Foundation
import Glibc

/// SIGINT and SIGTERM, taken with `sigwait` on a thread of their own.
///
/// ``block()`` must run before any other thread starts; signals then stay
/// pending until ``next()`` takes them.
final class TerminationSignals: Sendable {
    private static let numbers = [SIGINT, SIGTERM]
    private let names: AsyncStream<String>

    /// Blocks SIGINT and SIGTERM in this thread and every thread it starts.
    static func block() {
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Starts taking the blocked signals.
    static func start() -> TerminationSignals {
        let (names, continuation) = AsyncStream.makeStream(of: String.self)
        let thread = Thread {
            var set = signalSet()
            while true {
                var number: Int32 = 0
                guard sigwait(&set, &number) == 0 else { continue }
                continuation.yield(number == SIGINT ? "SIGINT" : "SIGTERM")
            }
        }
        thread.name = "camerad-signals"
        thread.start()
        return TerminationSignals(names: names)
    }

    private init(names: AsyncStream<String>) {
        self.names = names
    }

    /// The next signal's name.
    func next() async -> String {
        for await name in names { return name }
        return "end of signals"
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in numbers { sigaddset(&set, number) }
        return set
    }
}
