import ArgumentParser
import CaptureKit

extension Camctl {
    struct Ping: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure round trips to camerad and print its version."
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .shortAndLong, help: "Pings to send.")
        var count = 10

        func validate() throws {
            guard (1...100_000).contains(count) else { throw ValidationError("--count must be 1 to 100000") }
        }

        func run() async throws {
            global.apply()
            let info = try await CaptureDaemon.info()
            let times = try await CaptureDaemon.ping(count: count).map { Double($0.components.attoseconds) / 1e12 + Double($0.components.seconds) * 1e6 }
            let sorted = times.sorted()
            let median = sorted[sorted.count / 2]
            Output.line("camerad \(info.version) (pid \(info.pid)) on \(CaptureDaemon.socketPath)")
            Output.line("\(count) pings: min \(Int(sorted.first!)) µs, median \(Int(median)) µs, max \(Int(sorted.last!)) µs")
        }
    }
}
