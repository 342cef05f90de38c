import Glibc
import Synchronization

/// One descriptor held in reserve (`/dev/null`), so that a process that runs
/// out of descriptors can still accept a pending connection — to refuse it
/// with a word instead of leaving it waiting (and its listener readable
/// forever). libuv and nginx do the same.
public final class ReserveDescriptor: Sendable {
    private let held = OrderedMutex<OwnedFD?>(.reserveDescriptor, nil)

    public init() {
        take()
    }

    /// Whether the reserve is held now (it is not when even one descriptor could not be had).
    public var isHeld: Bool { held.withLock { $0 != nil } }

    /// Runs `body` with the reserve let go (one descriptor free), then takes it
    /// again: whatever `body` opens it must close before it returns.
    public func whileReleased<T>(_ body: () throws -> T) rethrows -> T {
        held.withLock { $0 = nil }
        defer { take() }
        return try body()
    }

    private func take() {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        held.withLock { $0 = fd >= 0 ? OwnedFD(adopting: fd) : nil }
    }
}
