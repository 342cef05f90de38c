import Foundation

/// A long-running child (such as `camctl watch`) whose output tests read as it comes.
public final class RunningProcess: @unchecked Sendable {
    public let process: Process
    private let output: TemporaryFile
    private let error: TemporaryFile

    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        output = try TemporaryFile()
        error = try TemporaryFile()
        process.standardOutput = output.handle
        process.standardError = error.handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    public var standardOutput: String { output.contents() }
    public var standardError: String { error.contents() }

    /// Lines printed on stdout so far.
    public var lines: [String] { standardOutput.split(separator: "\n").map(String.init) }

    /// Waits until `condition` holds for the process; false on timeout.
    public func wait(timeout: Duration = .seconds(30), until condition: (RunningProcess) async -> Bool) async -> Bool {
        await waitUntil(timeout: timeout) { await condition(self) }
    }

    /// Sends `signal` and waits for the end; returns how it ended.
    public func stop(signal: Int32 = SIGINT, timeout: Duration = .seconds(10)) async -> ProcessResult {
        if process.isRunning { kill(process.processIdentifier, signal) }
        _ = await wait(timeout: timeout) { !$0.process.isRunning }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = await wait { !$0.process.isRunning }
        }
        return ProcessResult(status: process.terminationStatus, standardOutput: standardOutput, standardError: standardError)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
