import Foundation

/// A fresh directory under /tmp, removed when `body` returns.
public func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async rethrows -> T {
    let path = makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// A socket path in a fresh directory (short enough for sockaddr_un), removed afterwards.
public func withTemporarySocketPath<T>(_ body: (String) async throws -> T) async rethrows -> T {
    try await withTemporaryDirectory { directory in try await body(directory + "/camerad.sock") }
}

/// A fresh directory under /tmp; the caller removes it.
public func makeTemporaryDirectory() -> String {
    var template = Array("/tmp/camerad-test.XXXXXX".utf8CString)
    let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(result != nil, "mkdtemp failed: \(errno)")
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
