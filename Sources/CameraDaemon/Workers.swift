import CameraIPC
import Dispatch

/// Where CPU-heavy work of a call runs — encoding a photo, say: threads of
/// their own, never the cooperative pool (two threads on a two-core machine,
/// shared by every handler) and never a capture thread.
enum Workers {
    private static let queue = DispatchQueue(label: "camerad-workers", qos: .userInitiated, attributes: .concurrent)

    /// Runs `work` on a worker, not waiting for it.
    static func async(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` on a worker and gives its result.
    static func run<T>(_ work: @escaping @Sendable () throws -> sending T) async throws -> sending T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.wake(with: Result(catching: work)) }
        }
    }
}
