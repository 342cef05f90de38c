import CameraProtocol
import Foundation
import Testing

/// The repository, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite struct GeneratedCodeTests {
    /// `make protos` records each .proto's SHA-256 beside the code it generates.
    @Test func generatedCodeIsNewerThanEveryProtoFile() throws {
        let recorded = try String(contentsOf: repositoryRoot.appending(path: "Sources/CameraProtocol/Generated/proto-hashes.txt"), encoding: .utf8)
        var expected: [String: String] = [:]
        for line in recorded.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            expected[String(parts[1])] = String(parts[0])
        }
        let protos = try FileManager.default.subpathsOfDirectory(atPath: repositoryRoot.appending(path: "Protos").path)
            .filter { $0.hasSuffix(".proto") }
        #expect(Set(protos) == Set(expected.keys), "a .proto was added or removed: run 'make protos'")
        for proto in protos {
            let actual = try sha256(repositoryRoot.appending(path: "Protos/\(proto)").path)
            #expect(actual == expected[proto], "\(proto) changed after the code was generated: run 'make protos'")
        }
    }

    /// The hand-written method table agrees with `service Camera`.
    @Test func methodTableMatchesTheServiceDefinition() throws {
        let proto = try String(contentsOf: repositoryRoot.appending(path: "Protos/camerad/v1/camera.proto"), encoding: .utf8)
        let pattern = /rpc\s+(\w+)\s*\(\s*(stream\s+)?\w+\s*\)\s*returns\s*\(\s*(stream\s+)?\w+\s*\)/
        let declared = proto.matches(of: pattern).map { match -> (String, MethodKind) in
            let kind: MethodKind = match.2 != nil ? .bidirectionalStreaming : match.3 != nil ? .serverStreaming : .unary
            return ("/\(CameraService.name)/\(match.1)", kind)
        }
        #expect(declared.count == CameraService.all.count)
        for (name, kind) in declared {
            let entry = CameraService.all.first { $0.name == name }
            #expect(entry != nil, "\(name) has no descriptor in CameraService")
            #expect(entry?.kind == kind, "\(name) is declared \(kind)")
        }
    }

    private func sha256(_ path: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: output, as: UTF8.self).prefix(64))
    }
}

@Suite struct RPCErrorTests {
    @Test(arguments: Camerad_V1_ErrorReason.allCases)
    func everyReasonTravelsAsAStatusAndBack(reason: Camerad_V1_ErrorReason) throws {
        let error = RPCError(reason, "what to do")
        if reason == .unspecified {
            #expect(error.code == .unknown)
        } else {
            #expect(error.code != .ok, "\(reason) must not map to OK")
        }
        let back = try #require(RPCError(status: error.status))
        #expect(back == error)
    }

    @Test func anOKStatusIsNoError() {
        #expect(RPCError(status: Camerad_V1_Status()) == nil)
    }

    @Test func deviceReasonsHaveTheirCanonicalCodes() {
        #expect(RPCError(.deviceLocked, "").code == .failedPrecondition)
        #expect(RPCError(.notLocked, "").code == .failedPrecondition)
        #expect(RPCError(.deviceNotFound, "").code == .notFound)
        #expect(RPCError(.unsupportedFormat, "").code == .invalidArgument)
        #expect(RPCError(.unsupported, "").code == .invalidArgument)
        #expect(RPCError(.deviceDisconnected, "").code == .unavailable)
        #expect(RPCError(.helloRequired, "").code == .failedPrecondition)
        #expect(RPCError(.unimplemented, "").code == .unimplemented)
    }
}
