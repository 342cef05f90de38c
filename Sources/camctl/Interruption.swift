import Dispatch
import Glibc

/// SIGINT or SIGTERM, caught so that camctl can end cleanly (an interrupted
/// stream still prints its statistics; a held lock is released).
final class Interruption: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let signals: AsyncStream<Void>

    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        signals = stream
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield() }
            source.resume()
            return source
        }
    }

    func wait() async {
        for await _ in signals { return }
    }

    deinit { sources.forEach { $0.cancel() } }
}
