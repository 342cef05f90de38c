import Foundation

/// The executables built beside the test bundle.
public enum Binaries {
    /// The build's bin directory: where the test runner itself lives.
    public static let directory: String = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // The XCTest runner lives inside a .xctest bundle directory on some layouts.
        while url.pathComponents.count > 1 && url.lastPathComponent.hasSuffix(".xctest") {
            url.deleteLastPathComponent()
        }
        return url.path
    }()

    public static var camerad: String { directory + "/camerad" }
    public static var camctl: String { directory + "/camctl" }
}

/// What a finished process printed and how it ended.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String

    /// Standard output split into lines, without the empty last one.
    public var lines: [String] { standardOutput.split(separator: "\n", omittingEmptySubsequences: false).dropLastIfEmpty() }
}

extension Array where Element == Substring {
    fileprivate func dropLastIfEmpty() -> [String] {
        var lines = map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }
}

/// Runs `executable` to completion with `arguments`, capturing its output.
///
/// - Parameters:
///   - environment: added to (and overriding) this process's environment.
///   - timeout: the process is killed after this long, and the result says so (status 137).
public func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Duration = .seconds(30)
) async throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = try TemporaryFile()
    let error = try TemporaryFile()
    process.standardOutput = output.handle
    process.standardError = error.handle
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning {
        if ContinuousClock.now > deadline {
            kill(process.processIdentifier, SIGKILL)
        }
        try await Task.sleep(for: .milliseconds(5))
    }
    return ProcessResult(status: process.terminationStatus, standardOutput: output.contents(),
                         standardError: error.contents())
}

/// Runs the camctl binary against `socket`.
public func camctl(
    _ arguments: [String], socket: String?, environment: [String: String] = [:], timeout: Duration = .seconds(30)
) async throws -> ProcessResult {
    try await runProcess(Binaries.camctl, (socket.map { ["--socket", $0] } ?? []) + arguments, environment: environment,
                         timeout: timeout)
}

/// A file that collects a child's output; removed when released.
final class TemporaryFile: @unchecked Sendable {
    let path: String
    let handle: FileHandle

    init() throws {
        var template = Array("\(temporaryFolder)/camerad-output.XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    func contents() -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    deinit { unlink(path) }
}
