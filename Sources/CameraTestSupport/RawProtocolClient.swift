import CameraIPC
import CameraProtocol
import Foundation
import SwiftProtobuf

/// A deliberately simple, blocking client that speaks the wire protocol by hand,
/// so tests can send what a real client never would: garbage, oversize
/// lengths, calls before Hello, undecodable requests.
public final class RawProtocolClient: @unchecked Sendable {
    public let socket: OwnedFD
    private var decoder = FrameDecoder()
    private var nextCallID: UInt64 = 100

    public struct Timeout: Error, CustomStringConvertible {
        public var description: String { "no answer from camerad in time" }
    }

    public init(path: String) throws {
        socket = try UnixSocket.connect(to: path)
        try socket.setNonBlocking(false)
    }

    /// Writes bytes as they are.
    public func sendBytes(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(socket.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw SystemError("send", errno: errno) }
            offset += written
        }
    }

    /// Writes one framed envelope.
    public func send(_ envelope: Camerad_V1_Envelope) throws {
        try sendBytes(Frame.encode(EnvelopeCodec.encode(envelope)))
    }

    /// The next envelope; nil when the server closed the connection.
    public func receive(timeout: Duration = .seconds(5)) throws -> Camerad_V1_Envelope? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let frame = try decoder.nextFrame() {
                return try Camerad_V1_Envelope(serializedBytes: frame)
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw Timeout() }
            var poller = pollfd(fd: socket.rawValue, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
            guard poll(&poller, 1, max(1, milliseconds)) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = recv(socket.rawValue, &buffer, buffer.count, 0)
            if count == 0 { return nil }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == ECONNRESET { return nil }
                throw SystemError("recv", errno: errno)
            }
            decoder.append(buffer[..<count])
        }
    }

    /// Reads until the server closes the connection; false if it stays open past `timeout`.
    public func waitForClose(timeout: Duration = .seconds(5)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            do {
                if try receive(timeout: deadline - ContinuousClock.now) == nil { return true }
            } catch is Timeout {
                return false
            } catch {
                return true
            }
        }
        return false
    }

    /// Starts a call with raw request bytes and collects its responses and status.
    public func call(_ method: String, request: [UInt8]) throws -> (responses: [[UInt8]], status: Camerad_V1_Status) {
        nextCallID += 1
        let callID = nextCallID
        try send(EnvelopeCodec.start(callID: callID, method: method, request: request))
        var responses: [[UInt8]] = []
        while let envelope = try receive() {
            guard envelope.callID == callID else { continue }
            switch envelope.kind {
            case .message(let message): responses.append(Array(message.payload))
            case .end(let end): return (responses, end.status)
            default: continue
            }
        }
        throw DaemonFailure("connection closed during \(method)")
    }

    /// Says Hello; returns the server's answer.
    @discardableResult
    public func hello(name: String = "raw-test-client") throws -> Camerad_V1_HelloResponse {
        var request = Camerad_V1_HelloRequest()
        request.protocolVersion = CameraService.protocolVersion
        request.clientName = name
        let (responses, status) = try call(CameraService.hello.name, request: try request.serializedBytes())
        guard status.code == .ok, let first = responses.first else {
            throw DaemonFailure("Hello failed: \(status.message)")
        }
        return try Camerad_V1_HelloResponse(serializedBytes: first)
    }
}
