import Foundation

/// Where temporary files go: $TMPDIR, else /tmp. (In the vivid VM the host's
/// /tmp is read-only and TMPDIR points into the guest's /run.)
public let temporaryFolder: String = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"

/// A fresh directory under ``temporaryFolder``, removed when `body` returns.
public func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async rethrows -> T {
    let path = makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// A socket path in a fresh directory (short enough for sockaddr_un), removed afterwards.
public func withTemporarySocketPath<T>(_ body: (String) async throws -> T) async rethrows -> T {
    try await withTemporaryDirectory { directory in try await body(directory + "/camerad.sock") }
}

/// A fresh directory under ``temporaryFolder``; the caller removes it.
func makeTemporaryDirectory() -> String {
    var template = Array("\(temporaryFolder)/camerad-test.XXXXXX".utf8CString)
    let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(result != nil, "mkdtemp failed: \(errno)")
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Leaves a socket file at `path` that nothing will ever serve, as a daemon that
/// died would: bound, never listening. (A listener closed in this process could
/// briefly live on in a child another test is spawning.)
public func makeStaleSocketFile(at path: String) {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    precondition(fd >= 0, "socket failed: \(errno)")
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    precondition(bytes.count < MemoryLayout.size(ofValue: address.sun_path), "path too long")
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    precondition(result == 0, "bind \(path) failed: \(errno)")
}
