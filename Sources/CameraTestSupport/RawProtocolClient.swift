import CameraIPC
import CameraProtocol
import Foundation
import SwiftProtobuf

/// A deliberately simple client that speaks the wire protocol by hand, so tests
/// can send what a real client never would: garbage, oversize lengths, calls
/// before Hello, undecodable requests.
///
/// It waits by sleeping, never by blocking a thread: a blocked thread of the
/// cooperative pool (two on a two-core machine) could starve the very server
/// tasks it waits for.
public final class RawProtocolClient: @unchecked Sendable {
    public let socket: OwnedFD
    private var decoder = FrameDecoder()
    private var nextCallID: UInt64 = 100

    public struct Timeout: Error, CustomStringConvertible {
        public var description: String { "no answer from camerad in time" }
    }

    public init(path: String) throws {
        socket = try UnixSocket.connect(to: path)
    }

    /// Writes bytes as they are.
    public func sendBytes(_ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(socket.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && (errno == EAGAIN || errno == EINTR) {
                try await Task.sleep(for: .milliseconds(1))
                continue
            }
            guard written > 0 else { throw SystemError("send", errno: errno) }
            offset += written
        }
    }

    /// Writes one framed envelope.
    public func send(_ envelope: Camerad_V1_Envelope) async throws {
        try await sendBytes(Frame.encode(EnvelopeCodec.encode(envelope)))
    }

    /// The next envelope; nil when the server closed the connection.
    public func receive(timeout: Duration = .seconds(30)) async throws -> Camerad_V1_Envelope? {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let frame = try decoder.nextFrame() {
                return try Camerad_V1_Envelope(serializedBytes: frame)
            }
            let count = recv(socket.rawValue, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 { return nil }
            if count > 0 {
                decoder.append(buffer[..<count])
                continue
            }
            switch errno {
            case EAGAIN, EINTR:
                guard ContinuousClock.now < deadline else { throw Timeout() }
                try await Task.sleep(for: .milliseconds(1))
            case ECONNRESET:
                return nil
            default:
                throw SystemError("recv", errno: errno)
            }
        }
    }

    /// Reads until the server closes the connection; false if it stays open past `timeout`.
    public func waitForClose(timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            do {
                if try await receive(timeout: deadline - ContinuousClock.now) == nil { return true }
            } catch is Timeout {
                return false
            } catch {
                return true
            }
        }
        return false
    }

    /// Starts a call with raw request bytes and collects its responses and status.
    public func call(_ method: String, request: [UInt8]) async throws -> (responses: [[UInt8]], status: Camerad_V1_Status) {
        nextCallID += 1
        let callID = nextCallID
        try await send(EnvelopeCodec.start(callID: callID, method: method, request: request))
        var responses: [[UInt8]] = []
        while let envelope = try await receive() {
            guard envelope.callID == callID else { continue }
            switch envelope.kind {
            case .message(let message): responses.append(Array(message.payload))
            case .end(let end): return (responses, end.status)
            default: continue
            }
        }
        throw DaemonFailure("connection closed during \(method)")
    }

    /// A new call id on this connection.
    public func newCallID() -> UInt64 {
        nextCallID += 1
        return nextCallID
    }

    /// Writes one framed envelope with `descriptors` riding on its first byte.
    public func send(_ envelope: Camerad_V1_Envelope, descriptors: [OwnedFD]) async throws {
        let bytes = Frame.encode(EnvelopeCodec.encode(envelope, descriptorCount: descriptors.count))
        let written = descriptors.isEmpty ? 0 : try SCMRights.send(bytes, descriptors: descriptors, on: socket)
        try await sendBytes(Array(bytes[written...]))
    }

    /// How a call ended: its status, or nil when the connection closed first.
    /// `responses` counts the messages it sent before.
    public struct CallOutcome: Sendable {
        public var responses = 0
        public var status: Camerad_V1_Status?
    }

    /// Reads call `callID`'s envelopes until it ends. Once it has sent
    /// `cancelAfter` messages (a stream or a watch that would run on), it is
    /// cancelled, and its end read.
    ///
    /// - Throws: ``Timeout`` when it neither ends nor sends within `timeout`.
    public func outcome(of callID: UInt64, cancelAfter: Int = .max, timeout: Duration = .seconds(60)) async throws -> CallOutcome {
        var outcome = CallOutcome()
        var cancelled = false
        let deadline = ContinuousClock.now + timeout
        while let envelope = try await receive(timeout: deadline - ContinuousClock.now) {
            guard envelope.callID == callID else { continue }
            switch envelope.kind {
            case .message:
                outcome.responses += 1
                if outcome.responses >= cancelAfter, !cancelled {
                    cancelled = true
                    try await send(EnvelopeCodec.cancel(callID: callID))
                }
            case .end(let end):
                outcome.status = end.status
                return outcome
            default:
                continue
            }
        }
        return outcome
    }

    /// Says Hello; returns the server's answer.
    @discardableResult
    public func hello(name: String = "raw-test-client") async throws -> Camerad_V1_HelloResponse {
        var request = Camerad_V1_HelloRequest()
        request.protocolVersion = CameraService.protocolVersion
        request.clientName = name
        let (responses, status) = try await call(CameraService.hello.name, request: try request.serializedBytes())
        guard status.code == .ok, let first = responses.first else {
            throw DaemonFailure("Hello failed: \(status.message)")
        }
        return try Camerad_V1_HelloResponse(serializedBytes: first)
    }
}

/// A raw client's Stream call: start it, send requests, read its envelopes.
public struct RawStream: Sendable {
    public let client: RawProtocolClient
    public let callID: UInt64

    /// Starts a Stream call on `client`.
    public init(_ client: RawProtocolClient, callID: UInt64) async throws {
        self.client = client
        self.callID = callID
        try await client.send(EnvelopeCodec.start(callID: callID, method: CameraService.stream.name, request: []))
    }

    public func send(_ request: Camerad_V1_StreamRequest) async throws {
        try await client.send(EnvelopeCodec.message(callID: callID, payload: try request.serializedBytes()))
    }

    /// The next response of this call, or its end status.
    public func next() async throws -> Result<(Camerad_V1_StreamResponse, UInt32), RPCError> {
        while let envelope = try await client.receive() {
            guard envelope.callID == callID else { continue }
            switch envelope.kind {
            case .message(let message):
                return .success((try Camerad_V1_StreamResponse(serializedBytes: message.payload), envelope.fdCount))
            case .end(let end):
                return .failure(RPCError(status: end.status) ?? RPCError(.unspecified, "ended OK"))
            default:
                continue
            }
        }
        throw DaemonFailure("connection closed")
    }

    /// Reads until the call ends; its status.
    public func end() async throws -> RPCError {
        while true {
            if case .failure(let error) = try await next() { return error }
        }
    }
}
