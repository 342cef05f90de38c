/// What a camerad holds of the machine: its threads, descriptors and resident
/// memory, to tell whether what a client made went with it.
public struct DaemonFootprint: CustomStringConvertible, Sendable {
    public let threads: Int
    public let descriptors: Int
    public let kilobytes: Int

    /// `daemon`'s now.
    public init(_ daemon: DaemonProcess) {
        threads = threadCount(daemon.pid)
        descriptors = daemon.openDescriptorCount
        kilobytes = residentKilobytes(daemon.pid)
    }

    /// Within 10 % of `baseline` (a thread or descriptor more at least).
    public func isBack(to baseline: DaemonFootprint) -> Bool {
        threads <= max(baseline.threads + 1, baseline.threads * 11 / 10)
            && descriptors <= max(baseline.descriptors + 1, baseline.descriptors * 11 / 10)
            && kilobytes <= baseline.kilobytes * 11 / 10
    }

    public var description: String { "\(threads) threads, \(descriptors) descriptors, \(kilobytes >> 10) MiB" }

    /// Waits (60 s at most) for `daemon` to be back to `baseline`; what it is then.
    public static func settling(_ daemon: DaemonProcess, to baseline: DaemonFootprint) async -> DaemonFootprint {
        _ = await waitUntil(timeout: .seconds(60)) { DaemonFootprint(daemon).isBack(to: baseline) }
        return DaemonFootprint(daemon)
    }

    /// `daemon`'s once it has no more threads than `idle` (a thread more at
    /// most) — what its clients made has ended — waiting 60 s at most.
    public static func quiet(_ daemon: DaemonProcess, threadsOf idle: DaemonFootprint) async -> DaemonFootprint {
        var now = DaemonFootprint(daemon)
        _ = await waitUntil(timeout: .seconds(60)) {
            now = DaemonFootprint(daemon)
            return now.threads <= idle.threads + 1
        }
        return now
    }

    /// glibc's caches off for a daemon whose memory should tell a leak: the
    /// stacks of ended threads (kept up to 40 MiB) and freed frame-sized blocks
    /// in per-thread arenas (`StreamingTests`).
    public static let allocatorWithoutCaches = [
        "GLIBC_TUNABLES": "glibc.pthread.stack_cache_size=0:glibc.malloc.mmap_threshold=131072",
    ]
}
