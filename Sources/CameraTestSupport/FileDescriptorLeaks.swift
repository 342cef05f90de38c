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
public func descriptorsStillOpen(to targets: Set<String>, settle: Duration = .seconds(10)) async -> [Int32] {
    func open() -> [Int32] { openFileDescriptors().filter { descriptorTarget($0).map(targets.contains) ?? false }.sorted() }
    _ = await waitUntil(timeout: settle) { open().isEmpty }
    return open()
}
