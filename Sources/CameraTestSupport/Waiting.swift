import Foundation

/// How tests wait: on a condition, with a generous deadline, never for a fixed
/// time. An emulated CPU stalls for hundreds of milliseconds, so a deadline is
/// only a bound on failure, not a measure of speed.

/// Checks `condition` until it holds or `timeout` passes.
///
/// - Returns: whether it held (the last check is made at the deadline).
public func waitUntil(
    timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}

/// Whether `operation` returns within `timeout`. If not, it is cancelled and
/// this waits for it to return (it must heed cancellation).
public func finishes(within timeout: Duration, _ operation: @escaping @Sendable () async -> Void) async -> Bool {
    let task = Task { await operation() }
    return await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            await task.value
            return true
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return false
        }
        let first = await group.next() ?? false
        if !first { task.cancel() }
        group.cancelAll()
        return first
    }
}
