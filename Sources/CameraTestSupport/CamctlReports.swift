import CaptureKit
import Foundation

// What camctl prints as JSON, as the tests read it.

/// What `camctl stream --json` (or `camctl listen --json`: frames are periods) printed.
public struct StreamReport: Decodable, Sendable, CustomStringConvertible {
    public struct Check: Decodable, Sendable {
        public let intact: Int
        public let torn: Int
        public let mismatched: Int
        public let unreadable: Int
    }
    public struct Accounting: Decodable, Sendable {
        public let span: Int
        public let dropped: Int
        public let unaccounted: Int
        public let overcounted: Int
        public let misplaced: Int
        public let outOfOrder: Int
        /// Drops reported before the first frame or after the last.
        public let reportedOutside: Int
    }
    public let frames: Int
    /// The frames' CoreVideo pixel format type and size, as "BGRA 2160x3840" or "420v 640x480".
    public let format: String
    public let framesPerSecond: Double
    public let deviceFramesPerSecond: Double
    public let firstSequence: UInt64?
    public let lastSequence: UInt64?
    public let drops: [String: Int]
    public let accounting: Accounting
    public let latencyMilliseconds: [String: Double]
    /// [a 10 µs bucket's lower bound in µs, frames], ascending.
    public let latencyHistogram: [[Int64]]
    public let check: Check?
    /// `camctl listen`'s: samples received, in a period, and dropped; the audio stamp's check.
    public let samples: Int?
    public let framesPerPeriod: Int?
    public let samplesDropped: Int?
    public let audioCheck: AudioCheck?

    public struct AudioCheck: Decodable, Sendable {
        public let blocks: Int
        public let outOfOrder: Int
        public let missing: Int
        public let misplaced: Int
        public let runs: Int
        public let placementSpread: Double
        /// The first few blocks out of place or order.
        public let strays: [String]
        /// The first period of each unbroken run (the first few).
        public let runStarts: [UInt64]
    }

    /// The report camctl printed as its last line; throws when it failed.
    public init(_ result: ProcessResult) throws {
        guard result.status == 0, let line = result.lines.last else {
            throw DaemonFailure("camctl failed (\(result.status)): \(result.standardError)")
        }
        self = try JSONDecoder().decode(StreamReport.self, from: Data(line.utf8))
    }

    public var totalDrops: Int { drops.values.reduce(0, +) }

    /// Every sequence number from the first frame to the last was delivered or
    /// reported dropped with a reason, none twice, in order; every report is
    /// in the account, inside the span or outside it.
    public var accountsForEveryFrame: Bool {
        accounting.unaccounted == 0 && accounting.overcounted == 0 && accounting.misplaced == 0
            && accounting.outOfOrder == 0 && frames + accounting.dropped == accounting.span
            && totalDrops == accounting.dropped + accounting.reportedOutside
    }

    public var description: String {
        "\(frames) frames + \(accounting.dropped) dropped (\(drops); \(accounting.reportedOutside) outside the span) of \(accounting.span); \(accounting.unaccounted) unaccounted, "
            + "\(accounting.overcounted) overcounted, \(accounting.misplaced) misplaced, \(accounting.outOfOrder) out of order; "
            + "\(String(format: "%.2f", deviceFramesPerSecond)) fps from the stamps"
    }
}

/// What `camctl stats --json` prints: CaptureKit's statistics.
public typealias StatsReport = CaptureDaemon.DeviceStatistics

extension CaptureDaemon.DeviceStatistics {
    public static func of(_ device: String, _ daemon: DaemonProcess) async throws -> StatsReport {
        let result = try await camctl(["stats", device, "--json"], socket: daemon.socketPath)
        guard result.status == 0 else { throw DaemonFailure("camctl stats failed (\(result.status)): \(result.standardError)") }
        return try JSONDecoder().decode(StatsReport.self, from: Data(result.standardOutput.utf8))
    }
}

/// How many threads a process has.
public func threadCount(_ pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
}

/// A process's resident memory (VmRSS), in KiB.
public func residentKilobytes(_ pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return -1 }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
}
