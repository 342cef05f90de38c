import CameraIPC
import CameraProtocol
import CameraTestSupport
import Foundation
import Glibc
import SwiftProtobuf
import Testing

/// Issue 46: no number a client sends can kill camerad. The .proto files (read
/// through protoc, so a field added tomorrow is fuzzed tomorrow) list every
/// numeric field of every request and of the messages inside them; each gets
/// its type's extremes, sent by hand on the wire to a real camerad beside its
/// virtual cameras and microphone. Every call must be answered, every value
/// outside its field's range (`RequestRanges.swift`) refused with
/// INVALID_ARGUMENT naming the field, and camerad must live through it all.
@Suite struct RequestExtremesTests {
    /// Every message field of every request whose type holds a number has a
    /// check, and every numeric field a range holding its default (0: unset).
    @Test func everyNumberOfEveryRequestHasARange() throws {
        let schema = try ProtoSchema.load()
        let checked = Dictionary(uniqueKeysWithValues: checkedMessageTypes.map { ($0.protoMessageName, $0) })
        var missing: [String] = []
        for name in schema.requestMessageNames() where schema.holdsNumbers(name) {
            guard let type = checked[name] else {
                missing.append("\(name): no CheckedMessage conformance")
                continue
            }
            let checks = Dictionary(uniqueKeysWithValues: type.fieldBounds.map { ($0.name, $0.bounds) })
            for field in schema.messages[name]!.field where schema.isNumeric(field) || (field.type == .message && schema.holdsNumbers(field.typeName)) {
                switch checks[field.name] {
                case nil: missing.append("\(name).\(field.name): no check")
                case .integer(let range)?: #expect(range.contains(0), "\(name).\(field.name)'s range holds its default")
                case .real(let range)?: #expect(range.contains(0), "\(name).\(field.name)'s range holds its default")
                case .enumeration(let values)?: #expect(values.contains(0), "\(name).\(field.name) knows its default")
                case .message?: break
                }
            }
        }
        #expect(missing.isEmpty, "\(missing)")
    }

    /// Each numeric field of each request, at each extreme of its type: an
    /// answer every time, INVALID_ARGUMENT naming the field outside its range,
    /// and a camerad that serves on.
    @Test(.timeLimit(.minutes(8)))
    func everyRequestFieldAtItsTypesExtremesIsAnsweredAndCameradLives() async throws {
        let schema = try ProtoSchema.load()
        try await Self.withFuzzedDaemon { daemon, send in
            var cases = 0, refusedByRange = 0
            for base in Self.bases {
                let method = try #require(schema.method(base.method))
                for path in schema.numericPaths(from: method.inputType) where path.name.hasPrefix(base.fuzzing) {
                    for extreme in ProtoWire.extremes(of: path.leaf) {
                        cases += 1
                        let label = "\(base.method) \(path.name) = \(extreme.value)"
                        let status = try await send(base, path.encode(extreme.bytes, wireType: extreme.wireType), label)
                        if !schema.accepts(path, extreme.value) {
                            refusedByRange += 1
                            #expect(status.code == .invalidArgument && status.message.contains(path.name),
                                    "\(label): \(status.code) \(status.message)")
                        }
                    }
                }
            }
            print("\(cases) requests at their fields' extremes, \(refusedByRange) outside their ranges; camerad serves on")
            #expect(cases > 500)
        }
    }

    /// The fuzzer: requests with two to five numeric fields at once, each a
    /// random value of its type (an extreme a third of the time), seeded so a
    /// failure repeats. Every one answered; camerad serves on.
    @Test(.timeLimit(.minutes(8)))
    func randomNumbersInEveryRequestAreAnsweredAndCameradLives() async throws {
        let schema = try ProtoSchema.load()
        var random = SeededRandom(state: 46)
        try await Self.withFuzzedDaemon { daemon, send in
            var cases = 0
            for base in Self.bases {
                let method = try #require(schema.method(base.method))
                let paths = schema.numericPaths(from: method.inputType).filter { $0.name.hasPrefix(base.fuzzing) }
                guard !paths.isEmpty else { continue }
                for _ in 0..<60 {
                    var fields: [UInt8] = [], label: [String] = []
                    for _ in 0..<Int.random(in: 2...5, using: &random) {
                        let path = paths.randomElement(using: &random)!
                        let value = ProtoWire.randomValue(of: path.leaf, using: &random)
                        fields += path.encode(value.bytes, wireType: value.wireType)
                        label.append("\(path.name) = \(value.value)")
                    }
                    cases += 1
                    _ = try await send(base, fields, "\(base.method) \(label.joined(separator: ", "))")
                }
            }
            print("\(cases) requests of random numbers; camerad serves on")
        }
    }

    /// Sends one request: `base` with `fields` after it; its status.
    typealias Send = (_ base: Base, _ fields: [UInt8], _ label: String) async throws -> Camerad_V1_Status

    /// A camerad with two virtual cameras and a microphone, a client holding
    /// virtual-0's configuration lock (ConfigureDevice needs it;
    /// LockForConfiguration by its holder counts up at once), and `body`
    /// sending requests through it; each must be answered and leave camerad
    /// alive, and camerad must serve at the end.
    static func withFuzzedDaemon(_ body: (DaemonProcess, Send) async throws -> Void) async throws {
        try await withRunningDaemon(virtualCameras: 2, arguments: ["--virtual-microphones", "1"]) { daemon in
            let movie = (daemon.socketPath as NSString).deletingLastPathComponent + "/movie.mp4"
            let client = try RawProtocolClient(path: daemon.socketPath)
            try await client.hello(name: "extremes")
            var lock = Camerad_V1_LockForConfigurationRequest()
            lock.uniqueID = "virtual-0"
            let (_, locked) = try await client.call(CameraService.lockForConfiguration.name, request: try lock.serializedBytes())
            try #require(locked.code == .ok, "\(locked.message)")
            let schema = try ProtoSchema.load()
            try await body(daemon) { base, fields, label in
                let method = try #require(schema.method(base.method))
                let payload = base.payload + fields
                let outcome: RawProtocolClient.CallOutcome
                if base.method == "Hello" {
                    let fresh = try RawProtocolClient(path: daemon.socketPath)
                    let callID = fresh.newCallID()
                    try await fresh.send(EnvelopeCodec.start(callID: callID, method: CameraService.hello.name, request: payload))
                    outcome = try await fresh.outcome(of: callID)
                } else {
                    outcome = try await Self.run(base, payload, on: client, kind: method.kind, movie: movie)
                }
                try #require(!daemon.hasExited, "camerad died at \(label):\n\(daemon.logText.suffix(3000))")
                let status = try #require(outcome.status, "\(label): the connection closed unanswered")
                if base.method == "AddVirtualCamera", status.code == .ok {
                    try await Self.removeAdded(by: client)
                }
                return status
            }
            try await expectServes(daemon, devices: 3)
            #expect(!daemon.logText.contains("Fatal error"))
        }
    }

    /// The envelope's own numbers (call id, descriptor count, an end's status):
    /// each is answered or closes its connection alone.
    @Test func everyNumberOfAnEnvelopeIsAnsweredOrClosesOnlyItsConnection() async throws {
        let schema = try ProtoSchema.load()
        try await withRunningDaemon { daemon in
            var list = Camerad_V1_Envelope()
            list.callID = 7
            list.start.method = CameraService.listDevices.name
            let base: [UInt8] = try list.serializedBytes()
            var cases = 0
            for path in schema.numericPaths(from: ".camerad.v1.Envelope") {
                for extreme in ProtoWire.extremes(of: path.leaf) {
                    cases += 1
                    let client = try RawProtocolClient(path: daemon.socketPath)
                    try await client.hello()
                    try await client.sendBytes(Frame.encode(base + path.encode(extreme.bytes, wireType: extreme.wireType)))
                    // Then a call of its own: answered, or the connection closed (by the envelope before it). Never a hang.
                    let ping = client.newCallID()
                    try? await client.send(EnvelopeCodec.start(callID: ping, method: CameraService.listDevices.name, request: []))
                    let outcome = try await client.outcome(of: ping, timeout: .seconds(60))
                    if outcome.status == nil { #expect(await client.waitForClose(timeout: .seconds(60)), "\(path.name) = \(extreme.value)") }
                    try #require(!daemon.hasExited, "camerad died at envelope \(path.name) = \(extreme.value)")
                }
            }
            #expect(cases > 20)
            try await expectServes(daemon)
        }
    }

    // MARK: - The calls

    /// A request to fuzz: its method, the fields fuzzed (a prefix of their
    /// path), a payload that reaches them, the messages before it.
    struct Base {
        let method: String
        var fuzzing = ""
        var payload: [UInt8] = []
        /// Messages of a bidirectional call sent before the fuzzed one.
        var before: [[UInt8]] = []
        /// Whether the fuzzed message (and a recording's start before it) brings a movie's descriptor.
        var bringsFile = false
    }

    static let bases: [Base] = {
        func bytes(_ message: some SwiftProtobuf.Message) -> [UInt8] { try! message.serializedBytes() }
        var camera = Camerad_V1_StreamRequest()
        camera.open.uniqueID = "virtual-1"
        var microphone = Camerad_V1_StreamRequest()
        microphone.open.uniqueID = "virtual-microphone-0"
        var release = Camerad_V1_StreamRequest()
        release.release = Camerad_V1_ReleaseFrames()
        var start = Camerad_V1_RecordRequest()
        start.start.uniqueID = "virtual-1"
        start.start.fileType = .mp4
        var nextFile = Camerad_V1_RecordRequest()
        nextFile.nextFile = Camerad_V1_NextFile()
        var device = Camerad_V1_GetDeviceRequest()
        device.uniqueID = "virtual-0"
        var photo = Camerad_V1_CapturePhotoRequest()
        photo.uniqueID = "virtual-1"
        return [
            Base(method: "Hello"),
            Base(method: "ListDevices"),
            Base(method: "AddVirtualCamera"),
            Base(method: "Ping"),
            Base(method: "Stream", fuzzing: "open.", payload: bytes(camera)),
            Base(method: "Stream", fuzzing: "open.", payload: bytes(microphone)),
            Base(method: "Stream", fuzzing: "release.", payload: bytes(release), before: [bytes(camera)]),
            Base(method: "LockForConfiguration", payload: bytes(device)),
            Base(method: "ConfigureDevice", payload: bytes(device)),
            Base(method: "CapturePhoto", payload: bytes(photo)),
            Base(method: "Record", fuzzing: "start.", payload: bytes(start), bringsFile: true),
            Base(method: "Record", fuzzing: "next_file.", payload: bytes(nextFile), before: [bytes(start)], bringsFile: true),
        ]
    }()

    /// One call with `payload`: a unary or watching call's request, else a
    /// bidirectional call's messages and then its half-close. What runs on
    /// (a stream, a watch) is cancelled once it answers.
    static func run(_ base: Base, _ payload: [UInt8], on client: RawProtocolClient, kind: MethodKind,
                    movie: String) async throws -> RawProtocolClient.CallOutcome {
        let callID = client.newCallID()
        let method = "/camerad.v1.Camera/\(base.method)"
        guard kind == .bidirectionalStreaming else {
            try await client.send(EnvelopeCodec.start(callID: callID, method: method, request: payload))
            return try await client.outcome(of: callID, cancelAfter: 1)
        }
        try await client.send(EnvelopeCodec.start(callID: callID, method: method, request: []))
        for message in base.before + [payload] {
            let file = base.bringsFile ? [try Self.writableDescriptor(movie)] : []
            try await client.send(EnvelopeCodec.message(callID: callID, payload: message), descriptors: file)
        }
        var halfClose = Camerad_V1_Envelope()
        halfClose.callID = callID
        halfClose.end = Camerad_V1_CallEnd()
        try await client.send(halfClose)
        // A recording stops at the half-close and says so; a stream is cancelled once it starts.
        return try await client.outcome(of: callID, cancelAfter: base.method == "Record" ? .max : 1)
    }

    /// A new descriptor of `path`, created empty, open for writing.
    static func writableDescriptor(_ path: String) throws -> OwnedFD {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError("open", errno: errno) }
        return OwnedFD(adopting: fd)
    }

    /// Removes the device an AddVirtualCamera just added (the newest virtual one).
    static func removeAdded(by client: RawProtocolClient) async throws {
        let (responses, _) = try await client.call(CameraService.listDevices.name, request: [])
        let list = try Camerad_V1_ListDevicesResponse(serializedBytes: try #require(responses.first))
        for device in list.devices where !["virtual-0", "virtual-1", "virtual-microphone-0"].contains(device.uniqueID) {
            var remove = Camerad_V1_RemoveVirtualCameraRequest()
            remove.uniqueID = device.uniqueID
            let (_, status) = try await client.call(CameraService.removeVirtualCamera.name, request: try remove.serializedBytes())
            #expect(status.code == .ok, "removing \(device.uniqueID): \(status.message)")
        }
    }
}


// MARK: - The schema, from protoc

/// The .proto files as protoc describes them: messages by full name, and the service's methods.
struct ProtoSchema {
    typealias Field = Google_Protobuf_FieldDescriptorProto
    let messages: [String: Google_Protobuf_DescriptorProto]
    let service: Google_Protobuf_ServiceDescriptorProto

    static func load() throws -> ProtoSchema {
        let protos = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Protos").standardizedFileURL
        let files = try FileManager.default.contentsOfDirectory(atPath: protos.path + "/camerad/v1").filter { $0.hasSuffix(".proto") }
        let protoc = Process()
        protoc.executableURL = URL(fileURLWithPath: "/usr/bin/protoc")
        protoc.arguments = ["--include_imports", "--descriptor_set_out=/dev/stdout", "-I", protos.path] + files.map { "camerad/v1/\($0)" }
        let output = Pipe()
        protoc.standardOutput = output
        try protoc.run()
        let described = output.fileHandleForReading.readDataToEndOfFile()
        protoc.waitUntilExit()
        guard protoc.terminationStatus == 0 else { throw DaemonFailure("protoc failed on \(protos.path)") }
        let set = try Google_Protobuf_FileDescriptorSet(serializedBytes: described)
        var messages: [String: Google_Protobuf_DescriptorProto] = [:]
        func add(_ message: Google_Protobuf_DescriptorProto, in scope: String) {
            messages["\(scope).\(message.name)"] = message
            for nested in message.nestedType { add(nested, in: "\(scope).\(message.name)") }
        }
        for file in set.file { for message in file.messageType { add(message, in: "." + file.package) } }
        let service = try #require(set.file.flatMap(\.service).first { $0.name == "Camera" })
        return ProtoSchema(messages: messages.mapKeys { String($0.dropFirst()) }, service: service)
    }

    /// A method's request type (with the leading dot protoc gives) and kind.
    func method(_ name: String) -> (inputType: String, kind: MethodKind)? {
        guard let method = service.method.first(where: { $0.name == name }) else { return nil }
        let kind: MethodKind = method.clientStreaming ? .bidirectionalStreaming : method.serverStreaming ? .serverStreaming : .unary
        return (method.inputType, kind)
    }

    func isNumeric(_ field: Field) -> Bool {
        ![.string, .bytes, .bool, .message, .group].contains(field.type)
    }

    /// Whether `name` (with or without the leading dot) holds a number, itself or in a message inside it.
    func holdsNumbers(_ name: String, seen: Set<String> = []) -> Bool {
        let name = name.hasPrefix(".") ? String(name.dropFirst()) : name
        guard !seen.contains(name), let message = messages[name] else { return false }
        return message.field.contains { isNumeric($0) || ($0.type == .message && holdsNumbers($0.typeName, seen: seen.union([name]))) }
    }

    /// Every message a request carries, requests included.
    func requestMessageNames() -> Set<String> {
        var names = Set<String>()
        func visit(_ name: String) {
            let name = name.hasPrefix(".") ? String(name.dropFirst()) : name
            guard names.insert(name).inserted, let message = messages[name] else { return }
            for field in message.field where field.type == .message { visit(field.typeName) }
        }
        for method in service.method { visit(method.inputType) }
        return names
    }

    /// A numeric field reached from a request: the fields on the way, each with the message it is in.
    struct Path {
        var steps: [(message: String, field: Field)]
        var leaf: Field { steps.last!.field }
        var name: String { steps.map(\.field.name).joined(separator: ".") }

        /// The field's bytes, wrapped in the messages on its way.
        func encode(_ value: [UInt8], wireType: UInt64) -> [UInt8] {
            var bytes = ProtoWire.varint(UInt64(leaf.number) << 3 | wireType) + value
            for step in steps.dropLast().reversed() {
                bytes = ProtoWire.varint(UInt64(step.field.number) << 3 | 2) + ProtoWire.varint(UInt64(bytes.count)) + bytes
            }
            return bytes
        }
    }

    func numericPaths(from type: String) -> [Path] {
        var paths: [Path] = []
        func walk(_ type: String, _ prefix: [(message: String, field: Field)]) {
            let name = String(type.dropFirst())
            guard prefix.count < 6, !prefix.contains(where: { $0.message == name }), let message = messages[name] else { return }
            for field in message.field {
                let steps = prefix + [(name, field)]
                if isNumeric(field) { paths.append(Path(steps: steps)) }
                if field.type == .message { walk(field.typeName, steps) }
            }
        }
        walk(type, [])
        return paths
    }

    /// Whether `path`'s range (`RequestRanges.swift`) takes `value`.
    func accepts(_ path: Path, _ value: ProtoWire.Number) -> Bool {
        let (message, field) = path.steps.last!
        guard let type = checkedMessageTypes.first(where: { $0.protoMessageName == message }),
              let bounds = type.fieldBounds.first(where: { $0.name == field.name })?.bounds else { return true }
        switch (bounds, value) {
        case (.integer(let range), .integer(let number)): return range.contains(number)
        case (.enumeration(let known), .integer(let number)): return known.contains(Int(number))
        case (.real(let range), .real(let number)): return number.isFinite && range.contains(number)
        default: return true
        }
    }
}

extension Dictionary {
    func mapKeys<K: Hashable>(_ transform: (Key) -> K) -> [K: Value] {
        Dictionary<K, Value>(uniqueKeysWithValues: map { (transform($0.key), $0.value) })
    }
}

/// Protobuf's wire form, written by hand: what a client may send that no generated code would.
enum ProtoWire {
    enum Number: CustomStringConvertible {
        case integer(Int128)
        case real(Double)
        var description: String {
            switch self {
            case .integer(let value): "\(value)"
            case .real(let value): "\(value)"
            }
        }
    }

    struct Extreme {
        let bytes: [UInt8]
        let wireType: UInt64
        let value: Number
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value, bytes: [UInt8] = []
        repeat {
            bytes.append(UInt8(value & 0x7F) | (value > 0x7F ? 0x80 : 0))
            value >>= 7
        } while value != 0
        return bytes
    }

    static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian, Array.init)
    }

    /// A value of `field`'s type: one of its extremes a third of the time, else any bit pattern.
    static func randomValue(of field: ProtoSchema.Field, using random: inout some RandomNumberGenerator) -> Extreme {
        let extremes = extremes(of: field)
        if Int.random(in: 0..<3, using: &random) == 0 { return extremes.randomElement(using: &random)! }
        let bits = random.next()
        switch field.type {
        case .int32, .enum, .sint32, .sfixed32:
            let value = Int32(truncatingIfNeeded: bits)
            let bytes: [UInt8] = switch field.type {
            case .sint32: varint(UInt64(UInt32(bitPattern: value << 1 ^ value >> 31)))
            case .sfixed32: littleEndian(value)
            default: varint(UInt64(bitPattern: Int64(value)))
            }
            return Extreme(bytes: bytes, wireType: field.type == .sfixed32 ? 5 : 0, value: .integer(Int128(value)))
        case .uint32, .fixed32:
            let value = UInt32(truncatingIfNeeded: bits)
            return Extreme(bytes: field.type == .fixed32 ? littleEndian(value) : varint(UInt64(value)), wireType: field.type == .fixed32 ? 5 : 0,
                           value: .integer(Int128(value)))
        case .int64, .sint64, .sfixed64:
            let value = Int64(bitPattern: bits)
            let bytes: [UInt8] = switch field.type {
            case .sint64: varint(UInt64(bitPattern: value << 1 ^ value >> 63))
            case .sfixed64: littleEndian(value)
            default: varint(bits)
            }
            return Extreme(bytes: bytes, wireType: field.type == .sfixed64 ? 1 : 0, value: .integer(Int128(value)))
        case .uint64, .fixed64:
            return Extreme(bytes: field.type == .fixed64 ? littleEndian(bits) : varint(bits), wireType: field.type == .fixed64 ? 1 : 0,
                           value: .integer(Int128(bits)))
        case .float:
            let value = Float(bitPattern: UInt32(truncatingIfNeeded: bits))
            return Extreme(bytes: littleEndian(value.bitPattern), wireType: 5, value: .real(Double(value)))
        case .double:
            return Extreme(bytes: littleEndian(bits), wireType: 1, value: .real(Double(bitPattern: bits)))
        default:
            return extremes.randomElement(using: &random)!
        }
    }

    /// 0, 1, −1, the type's extremes, and each narrower type's largest + 1.
    static func extremes(of field: ProtoSchema.Field) -> [Extreme] {
        let int32s: [Int32] = [0, 1, -1, .max, .min, 32768, 65535, 99]
        let uint32s: [UInt32] = [0, 1, .max, UInt32(Int32.max), 1 << 31, 65536, 32768]
        let int64s: [Int64] = [0, 1, -1, .max, .min, 1 << 31, 1 << 32, (1 << 32) - 1]
        let uint64s: [UInt64] = [0, 1, .max, UInt64(Int64.max), 1 << 63, 1 << 32, 1 << 31]
        let floats: [Float] = [0, 1, -1, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, 1e30]
        let doubles: [Double] = [0, 1, -1, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, 1e300]
        func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: value << 1 ^ value >> 63) }
        switch field.type {
        case .int32, .enum: return int32s.map { Extreme(bytes: varint(UInt64(bitPattern: Int64($0))), wireType: 0, value: .integer(Int128($0))) }
        case .uint32: return uint32s.map { Extreme(bytes: varint(UInt64($0)), wireType: 0, value: .integer(Int128($0))) }
        case .int64: return int64s.map { Extreme(bytes: varint(UInt64(bitPattern: $0)), wireType: 0, value: .integer(Int128($0))) }
        case .uint64: return uint64s.map { Extreme(bytes: varint($0), wireType: 0, value: .integer(Int128($0))) }
        case .sint32: return int32s.map { Extreme(bytes: varint(zigzag(Int64($0))), wireType: 0, value: .integer(Int128($0))) }
        case .sint64: return int64s.map { Extreme(bytes: varint(zigzag($0)), wireType: 0, value: .integer(Int128($0))) }
        case .fixed32: return uint32s.map { Extreme(bytes: littleEndian($0), wireType: 5, value: .integer(Int128($0))) }
        case .sfixed32: return int32s.map { Extreme(bytes: littleEndian($0), wireType: 5, value: .integer(Int128($0))) }
        case .fixed64: return uint64s.map { Extreme(bytes: littleEndian($0), wireType: 1, value: .integer(Int128($0))) }
        case .sfixed64: return int64s.map { Extreme(bytes: littleEndian($0), wireType: 1, value: .integer(Int128($0))) }
        case .float: return floats.map { Extreme(bytes: littleEndian($0.bitPattern), wireType: 5, value: .real(Double($0))) }
        case .double: return doubles.map { Extreme(bytes: littleEndian($0.bitPattern), wireType: 1, value: .real($0)) }
        default: return []
        }
    }
}
