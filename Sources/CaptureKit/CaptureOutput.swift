import CameraProtocol
import Synchronization

/// AVCaptureOutput: where a session sends media: ``CaptureVideoDataOutput``,
/// ``CapturePhotoOutput`` (a camera's), ``CaptureAudioDataOutput`` (a microphone's).
public class CaptureOutput: @unchecked Sendable {
    private let links = Mutex<[CaptureConnection]>([])

    init() {}

    /// The connections feeding this output, once it and device inputs are in
    /// a session: one for each media type it takes that an input gives (a
    /// movie output's camera first, then its microphone).
    public var connections: [CaptureConnection] { links.withLock { $0 } }

    /// The connection carrying `mediaType`, if any.
    public func connection(with mediaType: MediaType) -> CaptureConnection? {
        connections.first { $0.input.device.hasMediaType(mediaType) }
    }

    /// What it takes first, its stream's: a session connects it to the input whose device has it.
    var mediaType: MediaType { .video }

    /// Every media type it takes, ``mediaType`` first: a movie output takes a microphone's sound too.
    var mediaTypes: [MediaType] { [mediaType] }

    func setConnections(_ connections: [CaptureConnection]) {
        let dropped = links.withLock { links in
            defer { links = connections }
            return links.filter { old in !connections.contains { $0 === old } }
        }
        for connection in dropped { connection.stopFollowingLevels() }
    }

    // Hooks for the session, which subclasses fill in.

    /// What to ask the daemon for; nil when this output wants no stream.
    /// Throws when the settings ask for what no stream can give.
    func streamSettings(for connection: CaptureConnection) throws(CaptureError) -> Camerad_V1_OutputSettings? { nil }

    /// For an audio output, the periods to ask for (OpenStream.audio).
    func audioFormat() throws(CaptureError) -> Camerad_V1_AudioFormat { Camerad_V1_AudioFormat() }

    /// A stream event for this output, in order, on the connection's event-loop
    /// thread: hand it on, never block.
    func deliver(_ event: FrameStream.Event, from connection: CaptureConnection) {}

    /// The session starts a run (not a resumption after an interruption).
    func sessionWillStart() {}

    /// The session stopped feeding this output: asked to (`endedByItself`
    /// false), or because its device or daemon went away. Subclasses call it last.
    func sessionDidStop(endedByItself: Bool) {
        for connection in connections { connection.stopFollowingLevels() }
    }
}

/// Outputs, connections and inputs compare as objects, as AVFoundation's
/// (NSObject's `isEqual:`): seed code writes `if output == movieOutput`.
extension CaptureOutput: Hashable {
    public static func == (lhs: CaptureOutput, rhs: CaptureOutput) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension CaptureConnection: Hashable {
    public static func == (lhs: CaptureConnection, rhs: CaptureConnection) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension CaptureInput: Hashable {
    public static func == (lhs: CaptureInput, rhs: CaptureInput) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
