import CameraIPC
import CameraProtocol

/// Where a stream's messages go: the client's Stream call (its
/// ``ResponseWriter``), or a recorder in tests. Every send returns at once.
protocol StreamResponder: Sendable {
    /// Sends one response; descriptors ride with it. False when the call is gone.
    @discardableResult
    func send(_ response: Camerad_V1_StreamResponse, descriptors: [OwnedFD]) -> Bool

    /// Sends one response unless the client is more than `threshold` bytes behind.
    @discardableResult
    func send(_ response: Camerad_V1_StreamResponse, descriptors: [OwnedFD], droppingAbove threshold: Int) -> Bool

    /// Sends a response serialized once for many streams.
    @discardableResult
    func send(serialized response: [UInt8], descriptors: [OwnedFD]) -> Bool

    /// Ends the stream's call with `error` (nil: OK).
    func end(with error: RPCError?)
}

extension StreamResponder {
    @discardableResult
    func send(_ response: Camerad_V1_StreamResponse) -> Bool { send(response, descriptors: []) }

    @discardableResult
    func send(_ response: Camerad_V1_StreamResponse, droppingAbove threshold: Int) -> Bool {
        send(response, descriptors: [], droppingAbove: threshold)
    }

    @discardableResult
    func send(serialized response: [UInt8]) -> Bool { send(serialized: response, descriptors: []) }
}

extension ResponseWriter: StreamResponder where Response == Camerad_V1_StreamResponse {}
