import Foundation

/// A greedy client of another user: the system's own Python with nothing but
/// its standard library (as an attacker needs nothing else), run as `nobody`
/// with setpriv(1). It opens connections, each with streams of one size that
/// ask for both rings, until camerad refuses one, then prints what it got as
/// one JSON line and holds everything until it is stopped.
public final class GreedyClient: @unchecked Sendable {
    /// What it got before camerad refused it.
    public struct Report: Decodable, Sendable, CustomStringConvertible {
        public let connections: Int
        public let streams: Int
        /// The refusal's status code (8: RESOURCE_EXHAUSTED), 0 when none came.
        public let code: Int
        public let message: String

        public var description: String { "\(connections) connections, \(streams) streams, then \(code): \(message)" }
    }

    public static let python = "/usr/bin/python3"
    public static let setpriv = "/usr/bin/setpriv"
    /// Whether this machine can run one: root, setpriv(1) and the system's Python.
    public static var isAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv)
            && FileManager.default.isExecutableFile(atPath: python)
    }

    public let process: RunningProcess

    /// Starts it against `socket` (which `nobody` must be able to reach).
    public init(socket: String, device: String, width: Int, height: Int, streamsPerConnection: Int,
                protocolVersion: UInt32) throws {
        process = try RunningProcess(Self.setpriv, [
            "--reuid=65534", "--regid=65534", "--clear-groups", Self.python, "-I", "-c", Self.script,
            socket, "\(protocolVersion)", device, "\(width)", "\(height)", "\(streamsPerConnection)",
        ])
    }

    /// Waits for its report (it may take a while: it opens until refused).
    public func report(timeout: Duration = .seconds(120)) async throws -> Report {
        guard await process.wait(timeout: timeout, until: { $0.lines.count >= 1 || !$0.process.isRunning }),
              let line = process.lines.first else {
            throw DaemonFailure("the greedy client printed nothing: \(process.standardError)")
        }
        return try JSONDecoder().decode(Report.self, from: Data(line.utf8))
    }

    /// Ends it: every connection it held closes.
    public func stop() async { _ = await process.stop(signal: SIGKILL) }

    /// The client, in the protocol's bytes by hand (Protos/README.md).
    static let script = #"""
        import json, os, signal, socket, struct, sys

        path, version, device = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
        width, height, per_connection = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])

        def varint(n):
            out = bytearray()
            while n > 0x7F:
                out.append(n & 0x7F | 0x80)
                n >>= 7
            return bytes(out + bytes([n]))

        def field(number, value):
            if isinstance(value, int):
                return varint(number << 3) + varint(value)
            return varint(number << 3 | 2) + varint(len(value)) + value

        def varint_at(data, i):
            value, shift = 0, 0
            while True:
                value |= (data[i] & 0x7F) << shift
                shift, i = shift + 7, i + 1
                if data[i - 1] < 0x80:
                    return value, i

        def fields(data):
            out, i = {}, 0
            while i < len(data):
                key, i = varint_at(data, i)
                if key & 7 == 0:
                    value, i = varint_at(data, i)
                elif key & 7 == 2:
                    length, i = varint_at(data, i)
                    value, i = data[i:i + length], i + length
                else:
                    size = 8 if key & 7 == 1 else 4
                    value, i = data[i:i + size], i + size
                out[key >> 3] = value
            return out

        class Connection:
            def __init__(self):
                self.socket = socket.socket(socket.AF_UNIX)
                self.socket.connect(path)
                self.buffer = b""

            def send(self, call, kind, payload):
                envelope = field(1, call) + field(kind, payload)
                try:
                    self.socket.sendall(struct.pack(">I", len(envelope)) + envelope)
                except OSError:
                    pass  # refused: the reason waits to be read

            def next(self, call):
                """The next envelope of `call` (or one that ends the connection): (ended, status fields)."""
                while True:
                    while len(self.buffer) < 4 or len(self.buffer) < 4 + struct.unpack(">I", self.buffer[:4])[0]:
                        data, fds, _, _ = socket.recv_fds(self.socket, 65536, 64)
                        for fd in fds:
                            os.close(fd)  # camerad holds its own: those are what count
                        if not data:
                            return True, {1: -1, 2: b"closed without a word"}
                        self.buffer += data
                    length = struct.unpack(">I", self.buffer[:4])[0]
                    envelope = fields(self.buffer[4:4 + length])
                    self.buffer = self.buffer[4 + length:]
                    if envelope.get(1, 0) not in (call, 0):
                        continue
                    if 5 in envelope:
                        return True, fields(fields(envelope[5]).get(1, b""))
                    return False, {}

        connections, streams, refusal = [], 0, None
        while refusal is None and len(connections) < 4000:
            connection = Connection()
            hello = field(1, version) + field(2, b"greedy")
            connection.send(1, 3, field(1, b"/camerad.v1.Camera/Hello") + field(2, hello))
            ended, status = connection.next(1)
            while not ended:
                ended, status = connection.next(1)
            if status.get(1, 0) != 0:
                refusal = status
                break
            connections.append(connection)
            for call in range(10, 10 + per_connection):
                connection.send(call, 3, field(1, b"/camerad.v1.Camera/Stream"))
                settings = field(1, 1) + field(2, width) + field(3, height) + field(10, 1) + field(11, 1)
                connection.send(call, 4, field(1, field(1, field(1, device) + field(2, settings))))
                ended, status = connection.next(call)
                if ended:
                    refusal = status
                    break
                streams += 1
        refusal = refusal or {}
        print(json.dumps({"connections": len(connections), "streams": streams, "code": refusal.get(1, 0),
                          "message": refusal.get(2, b"").decode(errors="replace")}), flush=True)
        signal.pause()
        """#
}
