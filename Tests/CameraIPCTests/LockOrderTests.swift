import CameraIPC
import CameraTestSupport
import Foundation
import Testing

/// The lock-order checker that every debug build (so every `make test`) runs:
/// a lock taken out of `LockLevel`'s order, or a task woken with a lock held,
/// is a violation. Here violations are recorded instead of trapping.
@Suite final class LockOrderTests: Sendable {
    let registry = OrderedMutex(.deviceRegistry, 0)
    let streamer = OrderedMutex(.deviceStreamer, 0)
    let budget = OrderedMutex(.clientBudget, 0)
    let outbox = OrderedMutex(.streamOutbox, 0)

    @Test func locksTakenInOrderAreNoViolation() {
        let violations = LockOrder.recordingViolations {
            registry.withLock { _ in
                streamer.withLock { _ in
                    budget.withLock { _ in #expect(LockOrder.held == [.deviceRegistry, .deviceStreamer, .clientBudget]) }
                }
            }
            // One after another, in any order: nothing held across.
            budget.withLock { _ in }
            registry.withLock { _ in }
        }
        #expect(violations.isEmpty)
        #expect(LockOrder.held.isEmpty)
    }

    @Test func anOuterLockTakenUnderAnInnerOneIsAViolation() {
        let violations = LockOrder.recordingViolations {
            streamer.withLock { _ in registry.withLock { _ in } }
        }
        #expect(violations == ["taking deviceRegistry while holding deviceStreamer"])
    }

    @Test func oneLeafTakenUnderAnotherIsAViolation() {
        let violations = LockOrder.recordingViolations {
            outbox.withLock { _ in budget.withLock { _ in } }
        }
        #expect(violations == ["taking clientBudget while holding streamOutbox"])
    }

    @Test func wakingATaskUnderALockIsAViolation() async {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let violations = LockOrder.recordingViolations {
            streamer.withLock { _ in _ = continuation.wake(with: 1) }
            // Let go first: fine.
            continuation.wake(with: 2)
            continuation.wakeFinished()
        }
        #expect(violations == ["yielding to a stream while holding deviceStreamer"])
        var received: [Int] = []
        for await value in stream { received.append(value) }
        #expect(received == [1, 2])
    }

    @Test func resumingAContinuationOrCancellingATaskUnderALockIsAViolation() async {
        let task = Task { try? await Task.sleep(for: .seconds(600)) }
        let value = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let violations = LockOrder.recordingViolations {
                budget.withLock { _ in
                    task.cancelUnlocked()
                    continuation.wake(returning: 7)
                }
            }
            #expect(violations == ["cancelling a task while holding clientBudget",
                                   "resuming a continuation while holding clientBudget"])
        }
        #expect(value == 7)
        await task.value
    }

    /// Every wake-up in camerad's own code goes through the checked forms
    /// (`wake`, `wakeFinished`, `cancelUnlocked`), so the checker sees it.
    @Test func cameradsCodeWakesTasksOnlyThroughTheCheckedForms() throws {
        let raw = try NSRegularExpression(pattern: #"\.(resume\(|yield\(|finish\((throwing:[^)]*)?\)|cancel\(\))"#)
        var found: [String] = []
        for source in try PackageFiles.swiftSources(of: ["CameraIPC", "CameraProtocol", "CameraDaemon", "camerad"])
        where source.name != "LockOrder.swift" {
            for (number, code) in source.codeLines
            where raw.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil
                && !code.contains("thread.finish()") && !code.contains("thread?.finish()") {
                found.append("\(source.target)/\(source.name):\(number): \(code)")
            }
        }
        #expect(found.isEmpty, "unchecked wake-ups:\n\(found.joined(separator: "\n"))")
    }

    /// No task is made under a lock in camerad's own code: a task made there
    /// may run at once on another thread and want that lock (or another the
    /// order puts first). The scan reads each `withLock { … }` and `locked { … }`
    /// closure, brace by brace, for `Task {`, `Task(` or `Task.detached`.
    @Test func cameradsCodeMakesNoTaskUnderALock() throws {
        #expect(Self.tasksUnderLocks(in: "state.withLock { state in\n    if x { Task { await y() } }\n}") == [2],
                "the scan finds a task made under a lock")
        #expect(Self.tasksUnderLocks(in: "let a = state.withLock { $0.a }\nTask { await a.b() }") == [], "after it is let go: none")
        let sources = try PackageFiles.swiftSources(of: ["CameraIPC", "CameraProtocol", "CameraDaemon", "camerad"])
        let found = sources.flatMap { source in Self.tasksUnderLocks(in: source.text).map { "\(source.target)/\(source.name):\($0)" } }
        #expect(sources.count > 100, "the sources were found: \(sources.count) files")
        #expect(found.isEmpty, "tasks made under a lock:\n\(found.joined(separator: "\n"))")
    }

    /// The lines of `source` where a task is made inside a lock's closure.
    static func tasksUnderLocks(in source: String) -> [Int] {
        let literal = try! NSRegularExpression(pattern: #""(?:[^"\\]|\\.)*""#)
        let task = try! NSRegularExpression(pattern: #"\bTask(\s*\{|\(|\.detached)"#)
        var found: [Int] = []
        // Per open brace: whether it opened a lock's closure.
        var braces: [Bool] = []
        for (number, raw) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = String(raw)
            line = literal.stringByReplacingMatches(in: line, range: NSRange(line.startIndex..., in: line), withTemplate: "\"\"")
            if let comment = line.range(of: "//") { line = String(line[..<comment.lowerBound]) }
            var reported = false
            for index in line.indices {
                let character = line[index]
                if character == "{" {
                    let before = line[..<index].trimmingCharacters(in: .whitespaces)
                    braces.append(["withLock", "withLock(", "locked", "locked("].contains { before.hasSuffix($0) })
                } else if character == "}" {
                    _ = braces.popLast()
                } else if character == "T", !reported, braces.contains(true),
                          task.firstMatch(in: line, range: NSRange(index..., in: line))?.range.location == line.utf16.distance(from: line.startIndex, to: index) {
                    found.append(number + 1)
                    reported = true
                }
            }
        }
        return found
    }

    /// Every lock in camerad's code (its modules, CameraMedia's and
    /// CameraEncoding's too) is an `OrderedMutex` with a level: a plain
    /// `Mutex`, `NSLock`, `os_unfair_lock` or pthread mutex would escape the checker.
    @Test func everyLockInCameradsCodeIsOrdered() throws {
        let plain = try NSRegularExpression(pattern: #"\bMutex\s*[<(]|\bNS(Recursive)?Lock\b|\bNSCondition|os_unfair_lock|pthread_(mutex|rwlock|spin)"#)
        let sources = try PackageFiles.swiftSources(of: ["CameraIPC", "CameraProtocol", "CameraDaemon", "CameraMedia", "CameraEncoding", "camerad"])
            .filter { $0.name != "LockOrder.swift" }
        var found: [String] = []
        for source in sources {
            for (number, code) in source.codeLines where plain.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                found.append("\(source.target)/\(source.name):\(number): \(code)")
            }
        }
        #expect(sources.count > 100, "the sources were found: \(sources.count) files")
        #expect(found.isEmpty, "locks the order does not check (make each an OrderedMutex with a LockLevel):\n\(found.joined(separator: "\n"))")
    }

    /// camerad's escapes from Sendable checking are the five ARCHITECTURE.md
    /// names, each guarded by its node's lock (or, for a captured frame, its
    /// device buffer's lease): a new `@unchecked Sendable` in CameraDaemon fails
    /// here until it is argued for there.
    @Test func cameradsUncheckedSendablesAreTheOnesArchitectureNames() throws {
        let declaration = try NSRegularExpression(pattern: #"^\s*(?:\w+\s+)*(?:class|struct|enum)\s+(\w+)[^{\n]*@unchecked\s+Sendable"#,
                                                  options: .anchorsMatchLines)
        let found = try PackageFiles.swiftSources(of: ["CameraDaemon"]).flatMap { source in
            declaration.matches(in: source.text, range: NSRange(source.text.startIndex..., in: source.text)).map {
                String(source.text[Range($0.range(at: 1), in: source.text)!])
            }
        }
        let architecture = try String(contentsOf: PackageFiles.root.appending(path: "docs/ARCHITECTURE.md"), encoding: .utf8)
        #expect(Set(found) == ["MediaPool", "VariantPool", "VariantNode", "Subscription", "CapturedFrame"],
                "CameraDaemon's @unchecked Sendable types: \(found.sorted())")
        for name in found {
            #expect(architecture.contains("`\(name)`"), "ARCHITECTURE.md does not name \(name)")
        }
    }

    /// Protocol messages and statuses stay at camerad's edge: `Camerad_V1_*`
    /// only in `Handlers/` (and the stored defaults' file, protobuf's JSON of
    /// `StoredDefaults`), `RPCError` only there and where the daemon assembles
    /// its server (`CameraDaemon.swift`); the core speaks its own types.
    @Test func protocolTypesStayAtCameradsEdge() throws {
        let sources = try PackageFiles.swiftSources(of: ["CameraDaemon"]).filter { !$0.file.path.contains("/Handlers/") }
        var found: [String] = []
        for source in sources {
            for (number, code) in source.codeLines
            where code.contains("Camerad_V1_") && source.name != "DefaultsStore.swift" || code.contains("RPCError") && source.name != "CameraDaemon.swift" {
                found.append("\(source.name):\(number): \(code)")
            }
        }
        #expect(sources.count > 50, "the sources were found: \(sources.count) files")
        #expect(found.isEmpty, "protocol types in camerad's core (map them in Handlers/):\n\(found.joined(separator: "\n"))")
    }
}
