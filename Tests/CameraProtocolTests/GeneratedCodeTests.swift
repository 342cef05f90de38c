import CameraProtocol
import CameraTestSupport
import Foundation
import Testing

/// The repository, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// Where `make protos` puts each client's code.
enum GeneratedCode: String, CaseIterable, CustomStringConvertible {
    case swift = "Sources/CameraProtocol/Generated"
    case c = "Clients/c/generated"
    case python = "Clients/python/camerad/v1"

    var description: String {
        switch self {
        case .swift: "Swift"
        case .c: "C"
        case .python: "Python"
        }
    }

    /// The files made from `proto` ("camerad/v1/stream.proto").
    func files(for proto: String) -> [String] {
        let name = (proto as NSString).deletingPathExtension
        switch self {
        case .swift: return [rawValue + "/" + name.replacingOccurrences(of: "/", with: "_") + ".pb.swift"]
        case .c: return [".pb-c.c", ".pb-c.h"].map { rawValue + "/" + name + $0 }
        case .python: return ["_pb2.py", "_pb2.pyi"].map { rawValue + "/" + (name as NSString).lastPathComponent + $0 }
        }
    }
}

/// The .proto files, as paths under Protos/.
func protoFiles() throws -> [String] {
    try FileManager.default.subpathsOfDirectory(atPath: repositoryRoot.appending(path: "Protos").path)
        .filter { $0.hasSuffix(".proto") }.sorted()
}

/// The python3 on the PATH, as the Python client's users have it.
let python3 = ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":")
    .map { "\($0)/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }

@Suite struct GeneratedCodeTests {
    /// `make protos` records each .proto's SHA-256 beside the code it generates, for each client.
    @Test(arguments: GeneratedCode.allCases)
    func generatedCodeIsNewerThanEveryProtoFile(_ code: GeneratedCode) throws {
        let recorded = try String(contentsOf: repositoryRoot.appending(path: code.rawValue + "/proto-hashes.txt"), encoding: .utf8)
        var expected: [String: String] = [:]
        for line in recorded.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            expected[String(parts[1])] = String(parts[0])
        }
        let protos = try protoFiles()
        #expect(Set(protos) == Set(expected.keys), "a .proto was added or removed: run 'make protos'")
        for proto in protos {
            let actual = try sha256(repositoryRoot.appending(path: "Protos/\(proto)").path)
            #expect(actual == expected[proto], "\(proto) changed after the \(code) code was generated: run 'make protos'")
            for file in code.files(for: proto) {
                #expect(FileManager.default.fileExists(atPath: repositoryRoot.appending(path: file).path),
                        "\(file) is missing: run 'make protos'")
            }
        }
    }

    /// A field that may be unset is a one-field oneof (protoc-c 1.4.1 refuses
    /// proto3 `optional`), which is the same on the wire: unset, nothing;
    /// set, the field, even at zero.
    @Test func aOneFieldOneofTravelsAsAnOptionalField() throws {
        var settings = Camerad_V1_OutputSettings()
        let unset: [UInt8] = try settings.serializedBytes()
        #expect(unset.isEmpty)
        settings.alwaysDiscardsLateVideoFrames = false
        let bytes: [UInt8] = try settings.serializedBytes()
        #expect(bytes == [7 << 3, 0], "field 7, varint 0")
        let back = try Camerad_V1_OutputSettings(serializedBytes: bytes)
        #expect(back.optionalAlwaysDiscardsLateVideoFrames == .alwaysDiscardsLateVideoFrames(false))
    }

    /// The C code compiles, warnings as errors, against Debian's libprotobuf-c.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/include/protobuf-c/protobuf-c.h"),
                   "libprotobuf-c-dev is not installed (make deps installs it)"))
    func theCCodeCompiles() async throws {
        try await withTemporaryDirectory { directory in
            for proto in try protoFiles() {
                let source = GeneratedCode.c.files(for: proto)[0]
                let result = try await runProcess("/usr/bin/cc", [
                    "-std=c11", "-Wall", "-Wextra", "-Werror", "-c", repositoryRoot.appending(path: source).path,
                    "-I", repositoryRoot.appending(path: GeneratedCode.c.rawValue).path,
                    "-o", directory + "/" + (source as NSString).lastPathComponent + ".o",
                ], timeout: .seconds(120))
                #expect(result.status == 0, "\(source): \(result.standardError)")
            }
        }
    }

    /// Python decodes what Swift encodes and encodes it back byte for byte.
    @Test(.enabled(if: python3 != nil, "no python3 on the PATH"))
    func pythonReadsAndWritesTheSameBytes() async throws {
        var open = Camerad_V1_OpenStream()
        open.uniqueID = "virtual-0"
        open.settings.alwaysDiscardsLateVideoFrames = false
        open.settings.maxFramesInFlight = 2
        var request = Camerad_V1_StreamRequest()
        request.open = open
        let bytes: [UInt8] = try request.serializedBytes()
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let script = """
            import sys
            from camerad.v1 import stream_pb2
            request = stream_pb2.StreamRequest.FromString(bytes.fromhex(sys.argv[1]))
            assert request.open.unique_id == "virtual-0", request
            assert request.open.settings.HasField("always_discards_late_video_frames")
            assert not request.open.settings.always_discards_late_video_frames
            assert not stream_pb2.OutputSettings().HasField("always_discards_late_video_frames")
            print(request.SerializeToString().hex())
            """
        let result = try await runProcess(python3!, ["-c", script, hex],
                                          environment: ["PYTHONPATH": repositoryRoot.appending(path: "Clients/python").path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == hex)
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
