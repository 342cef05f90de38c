import Foundation

/// The descriptors this process has open now.
public func openFileDescriptors() -> Set<Int32> {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return Set(names.compactMap(Int32.init))
}

/// What descriptor `fd` points at: "socket:[123]", "/memfd:pool (deleted)".
public func descriptorTarget(_ fd: Int32) -> String? {
    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
}

/// The descriptors of this process that still point at any of `targets`,
/// waiting up to `settle` for them to go. Precise where a before/after diff is
/// not: other tests running at the same time do not disturb it.
public func descriptorsStillOpen(to targets: Set<String>, settle: Duration = .seconds(1)) async -> [Int32] {
    let deadline = ContinuousClock.now + settle
    while true {
        let open = openFileDescriptors().filter { descriptorTarget($0).map(targets.contains) ?? false }
        if open.isEmpty || ContinuousClock.now >= deadline { return open.sorted() }
        try? await Task.sleep(for: .milliseconds(10))
    }
}
