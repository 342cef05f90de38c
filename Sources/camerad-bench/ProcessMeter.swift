import Foundation
import Glibc

/// CPU time and memory of processes, from /proc and getrusage.
enum ProcessMeter {
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User plus system CPU seconds a live process has used, its exited
    /// threads' too: its CPU-time clock (nanoseconds), else /proc/PID/stat
    /// (in clock ticks, 10 ms: too coarse for a few hundred frames).
    static func cpuSeconds(_ pid: Int32) -> Double {
        var clock = clockid_t()
        var time = timespec()
        if clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &time) == 0 {
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticksPerSecond
    }

    /// A live process's peak resident memory, in MiB (VmHWM).
    static func peakResidentMiB(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Double(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        else { return 0 }
        return kilobytes / 1024
    }
}

/// A child process whose output goes to a file, read when it ends.
final class Child: @unchecked Sendable {
    let process = Process()
    private let outputPath: String

    init(_ executable: String, _ arguments: [String]) throws {
        outputPath = NSTemporaryDirectory() + "camerad-bench-output-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: outputPath, contents: nil),
              let handle = FileHandle(forWritingAtPath: outputPath)
        else { throw BenchError("cannot create \(outputPath)") }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try handle.close()
    }

    deinit { unlink(outputPath) }

    var pid: Int32 { process.processIdentifier }

    /// What the process has printed so far.
    var outputSoFar: String {
        (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }

    /// Waits for the process to end and returns what it printed.
    func finish() -> String {
        process.waitUntilExit()
        return outputSoFar
    }

    func signal(_ number: Int32) {
        kill(pid, number)
    }

    /// Interrupts the process and waits for it; past `seconds` it is killed.
    func stop(within seconds: Double = 5) -> String {
        signal(SIGINT)
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { signal(SIGKILL) }
        return finish()
    }
}

/// Runs a command to completion and returns its output.
@discardableResult
func run(_ executable: String, _ arguments: [String]) throws -> String {
    let child = try Child(executable, arguments)
    let output = child.finish()
    guard child.process.terminationStatus == 0 else {
        throw BenchError("\(executable) \(arguments.joined(separator: " ")) failed: \(output)")
    }
    return output
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A file's size in bytes; 0 when it is not there (yet).
func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
}
