import CameraIPC
import Foundation
import Synchronization

/// Where one stream's frames and news go: a client's Stream call
/// (``ClientStreamSink``, at the handler edge, which makes the protocol's
/// messages) or a consumer inside the daemon (a movie recorder, a detector, a
/// preview server: next). The streamer decides for every sink alike what it
/// gets — its in-flight limit, its late-frame policy, its drop accounting
/// (``StreamOptions``, ``DropTally``) — so a sink only receives. Every call
/// returns at once and never calls back into the streamer.
///
/// In order: ``started(_:)``; then frames, each preceded by the drops since
/// the one before (``dropped(_:)``), and ``formatChanged(_:)`` when the pool
/// changes; then ``interrupted(_:_:)`` if the stream ends by itself, and
/// ``end(with:)``. A frame stays the sink's until it releases it
/// (``FrameHandle/release()``, or its client by slot), unless the stream takes
/// copies (``StreamOptions/inline``).
protocol FrameSink: Sendable {
    /// The stream runs; its frames will be in `news.pool`.
    func started(_ news: StreamNews)
    /// A frame; false when the sink could not take it (a copying stream too far
    /// behind, or a sink that is gone).
    func frame(_ frame: FrameHandle) -> Bool
    /// Frames the stream did not get since its last one, by reason.
    func dropped(_ drops: DropTally)
    /// Frames come from another pool from now on (the device's mode changed, or
    /// its variant's pool grew); those held in the old one stay valid.
    func formatChanged(_ news: StreamNews)
    /// The stream ends by itself; ``end(with:)`` follows.
    func interrupted(_ reason: StreamInterruption, _ error: CameraError)
    /// The stream is over (nil: it ended as asked).
    func end(with error: CameraError?)

    // What a sink with a transport of its own has (a client's rings: ClientRings); none by default.

    /// Descriptors its transport holds, charged with its subscription.
    var descriptorsHeld: Int { get }
    /// Where its frames, drops and news are written under the node's lock, in
    /// the order decided, instead of (or besides) the calls above after it.
    var announcer: (any FrameAnnouncing)? { get }
    /// Reads what it gave back without a call to ``FrameHandle/release()``
    /// since the last look, under the node's lock as each frame comes:
    /// `release` is called for each slot.
    ///
    /// - Throws: `INVALID_ARGUMENT` when what it reads makes no sense (its
    ///   subscription ends), or for a slot `release` refuses.
    func readReleases(_ release: (_ poolID: UInt64, _ slot: Int) throws(CameraError) -> Void) throws(CameraError)
}

extension FrameSink {
    var descriptorsHeld: Int { 0 }
    var announcer: (any FrameAnnouncing)? { nil }
    func readReleases(_ release: (_ poolID: UInt64, _ slot: Int) throws(CameraError) -> Void) throws(CameraError) {}
}

/// A sink's way of hearing of frames under its node's lock (a client's frame
/// ring: ``FrameAnnouncer``): never waits, and says when it has no room.
/// Its ``signal`` is raised once the lock is let go.
protocol FrameAnnouncing: Sendable {
    var signal: FrameSignal { get }
    /// A frame's record; false when there is no room for it.
    func frame(_ frame: PooledFrame) -> Bool
    /// Drop reports, now or once there is room; true when written now.
    func dropped(_ drops: DropTally) -> Bool
    /// A record that news went as a message, now or once there is room (frames
    /// wait behind it); true when written now.
    func news() -> Bool
    /// The drops that never found room, to go as messages before the end.
    func takeWaiting() -> DropTally
}

/// What a sink learns as its stream starts or its pool changes.
struct StreamNews: Sendable {
    let pool: MediaPool
    /// The device's mode (nil only in the moment a capture stops).
    let mode: CaptureMode?
    /// Why the stream does not get what it asked for, or what changed.
    let note: String?
    /// The device as clients see it, when it is news.
    let device: DeviceDescription?
}

/// Why a stream ended by itself (AVCaptureSession.InterruptionReason).
enum StreamInterruption: Sendable {
    case deviceDisconnected
    case deviceFailed
    case shuttingDown
}

/// One buffer in a node's pool, as every sink of the node gets it: a video
/// frame, a PCM period, an encoded packet or a record (its pool's
/// ``MediaPool/media`` says which). Called a frame whatever the media, as
/// AVFoundation and ALSA both do.
final class PooledFrame: Sendable {
    let pool: MediaPool
    let slot: Int
    let sequence: UInt64
    /// CLOCK_MONOTONIC nanoseconds at capture (an encoded packet's presentation time).
    let timestampNanoseconds: Int64
    let durationNanoseconds: Int64
    let bytesUsed: Int
    /// An encoded packet's own numbers; nil for other media.
    let packet: PacketInfo?
    /// What a client sink made of it, made once for every client of the variant.
    let encoded = OrderedMutex<[UInt8]?>(.encodedFrame, nil)

    /// Its bytes copied out of the slot, for a stream that takes copies; nil: read them in the slot.
    let copied: Data?

    init(pool: MediaPool, slot: Int, sequence: UInt64, timestampNanoseconds: Int64, durationNanoseconds: Int64,
         bytesUsed: Int, packet: PacketInfo? = nil) {
        self.pool = pool
        self.slot = slot
        self.sequence = sequence
        self.timestampNanoseconds = timestampNanoseconds
        self.durationNanoseconds = durationNanoseconds
        self.bytesUsed = bytesUsed
        self.packet = packet
        copied = nil
    }

    /// A copy of `frame`'s bytes, made while its slot is held (under the
    /// node's lock): valid after the slot is written again.
    init(copying frame: PooledFrame) {
        pool = frame.pool
        slot = frame.slot
        sequence = frame.sequence
        timestampNanoseconds = frame.timestampNanoseconds
        durationNanoseconds = frame.durationNanoseconds
        bytesUsed = frame.bytesUsed
        packet = frame.packet
        copied = Data(frame.bytes)
    }

    /// Its bytes in the slot, valid while the slot is held.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: pool.slot(slot)[..<bytesUsed]) }
}

/// What an encoded packet carries besides its bytes (FFmpeg's AVPacket flags and dts).
struct PacketInfo: Sendable, Equatable {
    /// A decoder can start here (AV_PKT_FLAG_KEY).
    let isKeyframe: Bool
    /// When it is decoded, CLOCK_MONOTONIC nanoseconds: before its presentation
    /// time when frames are reordered (B-frames).
    let decodeTimestampNanoseconds: Int64
}
