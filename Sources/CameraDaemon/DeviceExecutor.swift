import CameraIPC
import Dispatch

/// The serial executor of one device: all of its blocking work — opening the
/// node, setting formats, buffers, starting and stopping its capture, controls,
/// looking for another program holding it — runs here, one job at a time, in
/// the order asked. Handlers `await` it; nothing of it runs on the cooperative
/// pool (two threads on a two-core machine) or on a capture thread.
///
/// Order is what makes a device's lifecycle safe: a start asked for after a
/// stop runs after that stop has let go of the node.
final class DeviceExecutor: Sendable {
    private let queue: DispatchQueue

    /// - Parameter label: names the executor's thread in a debugger ("camerad-device virtual-0").
    init(label: String) {
        queue = DispatchQueue(label: "camerad-device \(label)")
    }

    /// Runs `work` after every job asked for before it, and gives its result.
    /// A caller that is cancelled still waits: blocking work is not interrupted.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.wake(with: Result(catching: work)) }
        }
    }

    /// ``run(_:)`` for work that cannot fail.
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.wake(returning: work()) }
        }
    }

    /// Queues `work` after every job asked for before it, without waiting for it.
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }
}
