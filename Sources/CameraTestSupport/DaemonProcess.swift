import CameraIPC
import Foundation

/// A real camerad process on its own socket, for end-to-end tests.
///
/// ```
/// try await withRunningDaemon(virtualCameras: 2) { daemon in
///     let result = try await camctl(["list"], socket: daemon.socketPath)
/// }
/// ```
public final class DaemonProcess: @unchecked Sendable {
    public let socketPath: String
    public let process: Process
    private let log: TemporaryFile

    /// Starts camerad and waits until it accepts connections.
    ///
    /// - Throws: when it exits or does not listen within `timeout`; the error holds its log.
    ///
    /// - Parameters:
    ///   - passSocket: false to leave `--socket` off, for tests of the default
    ///     path; `socketPath` is then where camerad is expected to listen.
    ///   - environment: added to this process's environment.
    ///   - launcher: a command that runs camerad, such as `["/usr/bin/prlimit", "--nofile=40"]`
    ///     (it must exec camerad, so that ``pid`` is camerad's).
    public init(
        socketPath: String, arguments: [String] = [], environment: [String: String] = [:], passSocket: Bool = true,
        launcher: [String] = [], timeout: Duration = .seconds(20)
    ) async throws {
        self.socketPath = socketPath
        log = try TemporaryFile()
        process = Process()
        process.executableURL = URL(fileURLWithPath: launcher.first ?? Binaries.camerad)
        // Stored defaults stay beside the socket unless the test says where.
        let state = arguments.contains("--state-dir") ? [] : ["--state-dir", (socketPath as NSString).deletingLastPathComponent + "/state"]
        process.arguments = (launcher.isEmpty ? [] : Array(launcher.dropFirst()) + [Binaries.camerad])
            + (passSocket ? ["--socket", socketPath] : []) + ["--log-level", "debug"] + state + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = log.handle
        process.standardError = log.handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while !UnixSocket.isServed(socketPath) {
            guard process.isRunning else {
                throw DaemonFailure("camerad exited with status \(process.terminationStatus) before listening:\n\(logText)")
            }
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                throw DaemonFailure("camerad did not listen on \(socketPath) within \(timeout):\n\(logText)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    public var pid: Int32 { process.processIdentifier }

    /// Everything camerad logged so far.
    public var logText: String { log.contents() }

    /// Sends `signal` and waits for the process to end; returns its exit status
    /// (for a process killed by a signal, the signal's number).
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(10)) async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            while process.isRunning { try? await Task.sleep(for: .milliseconds(5)) }
        }
        return process.terminationStatus
    }

    /// Whether the process has ended.
    public var hasExited: Bool { !process.isRunning }

    /// The number of file descriptors the daemon has open.
    public var openDescriptorCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

public struct DaemonFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs `body` with a camerad on a temporary socket, and stops it afterwards.
///
/// - Parameter virtualCameras: nil leaves camerad to its default (one only when
///   it finds no real camera).
public func withRunningDaemon<T>(
    virtualCameras: Int? = 1, arguments: [String] = [], environment: [String: String] = [:],
    timeout: Duration = .seconds(20), _ body: (DaemonProcess) async throws -> T
) async throws -> T {
    try await withTemporarySocketPath { path in
        let cameras = virtualCameras.map { ["--virtual-cameras", "\($0)"] } ?? []
        let daemon = try await DaemonProcess(
            socketPath: path, arguments: cameras + arguments, environment: environment, timeout: timeout)
        do {
            let result = try await body(daemon)
            await daemon.stop()
            return result
        } catch {
            await daemon.stop()
            throw error
        }
    }
}
