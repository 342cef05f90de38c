import Foundation
import Testing

/// Every client's conformance suite holds every scenario of Clients/CONFORMANCE.md.
@Suite struct ConformanceListTests {
    /// The ids in the scenarios table: rows that start with a backquoted id.
    static func scenarios() throws -> [String] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("Clients/CONFORMANCE.md"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).split(separator: "`").first.map(String.init)
        }
    }

    /// Each client's suite and how it names a scenario's test.
    static let suites: [(path: String, name: @Sendable (String) -> String)] = [
        ("Tests/CaptureKitTests/ConformanceTests.swift", { "@Test(\"conformance: \($0)\")" }),
        ("Clients/c/tests/conformance.c", { "conformance_\($0)(void **state)" }),
        ("Clients/python/tests/test_conformance.py", { "def test_\($0)(" }),
    ]

    @Test func theListHasTheScenarios() throws {
        let ids = try Self.scenarios()
        #expect(ids.count >= 10, "\(ids)")
        #expect(Set(ids).count == ids.count, "no scenario twice")
    }

    @Test(arguments: suites.map(\.path))
    func everyClientProvesEveryScenario(path: String) throws {
        let suite = try #require(Self.suites.first { $0.path == path })
        let source = try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
        let missing = try Self.scenarios().filter { !source.contains(suite.name($0)) }
        #expect(missing.isEmpty, "\(path) lacks \(missing)")
    }
}
