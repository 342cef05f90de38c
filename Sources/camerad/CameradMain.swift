import Dispatch
import Glibc

/// camerad's entry point. It blocks SIGINT, SIGTERM and SIGHUP before any thread
/// exists, so every thread inherits the mask: a signal that arrives at any moment,
/// even while the socket is being set up, waits for ``DaemonSignals`` instead of
/// killing the process or being lost.
///
/// The main thread then waits for the command. (`dispatchMain()` would not do:
/// libdispatch makes the main thread its signal thread and unblocks every signal.)
@main
enum CameradMain {
    static func main() {
        DaemonSignals.block()
        let finished = DispatchSemaphore(value: 0)
        // Not `Camerad.main()`: it runs on the main actor, which this thread, waiting, would never serve.
        Task.detached {
            do {
                let command = try Camerad.parse()
                try await command.run()
            } catch {
                Camerad.exit(withError: error)
            }
            finished.signal()
        }
        finished.wait()
        exit(0)
    }
}
