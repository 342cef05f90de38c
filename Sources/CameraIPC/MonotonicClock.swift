import Glibc

/// CLOCK_MONOTONIC now, in nanoseconds: the clock of every frame timestamp and
/// event camerad sends, and of latencies measured against them.
public func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
