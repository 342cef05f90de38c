import CameraIPC
import Logging
import Synchronization

/// Logs a recurring condition at most once per interval, saying how many
/// more times it came meanwhile: a flood of refusals costs a line a second,
/// not the disk.
final class RateLimitedLog: Sendable {
    private let intervalNanoseconds: Int64
    private let state = OrderedMutex<(last: Int64?, suppressed: Int)>(.rateLimitedLog, (nil, 0))

    init(interval: Duration = .seconds(1)) {
        intervalNanoseconds = interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000
    }

    func log(_ logger: Logger, _ level: Logger.Level, _ message: @autoclosure () -> String) {
        let nanoseconds = monotonicNanoseconds()
        let suppressed = state.withLock { state -> Int? in
            if let last = state.last, nanoseconds - last < intervalNanoseconds {
                state.suppressed += 1
                return nil
            }
            defer { state = (nanoseconds, 0) }
            return state.suppressed
        }
        guard let suppressed else { return }
        logger.log(level: level, "\(message())\(suppressed > 0 ? " (and \(suppressed) more since the last such message)" : "")")
    }
}
