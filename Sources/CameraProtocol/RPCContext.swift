import CameraIPC

/// What a handler knows of the call it serves and of its caller.
public struct RPCContext: Sendable {
    /// Identifies the connection for as long as the daemon runs; state a client
    /// owns (locks, streams) is keyed by it and released when it closes.
    public let connectionID: UInt64
    /// The calling process, from SO_PEERCRED.
    public let peer: PeerCredentials
    /// What the client called itself in Hello.
    public let clientName: String
    public let callID: UInt64
    /// Descriptors that came with the call's start envelope. Those a handler does
    /// not keep are closed when the context goes.
    public let descriptors: [OwnedFD]
}
