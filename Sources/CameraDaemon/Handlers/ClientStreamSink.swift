import CameraProtocol
import Foundation

/// A client's Stream call as a ``FrameSink``: each event becomes the protocol's
/// message (stream.proto), sent on the call's writer. A shared-memory stream
/// gets the pool's memory (its memfd, and the device's buffers it shares) with
/// StreamStarted and FormatChanged; an inline one gets each frame's bytes in
/// its FrameReady.
struct ClientStreamSink: FrameSink {
    let writer: any StreamResponder
    /// Frames travel in the messages (`Delivery.inline`), not in shared memory.
    let inline: Bool
    /// Its release and frame rings, when the client asked for them.
    var rings: ClientRings? = nil

    var descriptorsHeld: Int { rings?.descriptors ?? 0 }
    var announcer: (any FrameAnnouncing)? { rings?.announcer }

    func readReleases(_ release: (_ poolID: UInt64, _ slot: Int) throws(CameraError) -> Void) throws(CameraError) {
        try rings?.read(release)
    }

    func started(_ news: StreamNews) {
        var response = Camerad_V1_StreamResponse()
        response.started = message(news)
        var descriptors = inline ? [] : news.pool.descriptors
        if let ring = rings?.releaseRing {
            response.started.releaseRing.fdIndex = UInt32(descriptors.count)
            response.started.releaseRing.capacity = UInt32(ring.capacity)
            descriptors.append(ring.memory.descriptor)
        }
        if let announcer = rings?.announcer {
            response.started.frameRing.fdIndex = UInt32(descriptors.count)
            response.started.frameRing.capacity = UInt32(announcer.ring.capacity)
            response.started.frameRing.signalFdIndex = UInt32(descriptors.count + 1)
            descriptors += [announcer.ring.memory.descriptor, announcer.signal.clientEnd]
        }
        writer.send(response, descriptors: descriptors)
    }

    func frame(_ handle: FrameHandle) -> Bool {
        let frame = handle.frame
        if inline {
            var message = Self.message(frame)
            message.data = frame.copied ?? Data(frame.bytes)
            var response = Camerad_V1_StreamResponse()
            response.frame = message
            // Two frames behind in reading: this one is late.
            return writer.send(response, droppingAbove: 2 * frame.pool.media.capacity)
        }
        // Serialized once for every client of the variant.
        let serialized = frame.encoded.withLock { encoded in
            if let encoded { return encoded }
            let bytes = StreamWire.frameResponse(Self.message(frame))
            encoded = bytes
            return bytes
        }
        return writer.send(serialized: serialized)
    }

    /// Never refused for a slow reader: a report is small, comes at most once
    /// per reason ahead of each frame, and a frame must not overtake the drops
    /// before it.
    func dropped(_ drops: DropTally) {
        for report in drops.reports {
            var response = Camerad_V1_StreamResponse()
            response.dropped.reason = Camerad_V1_DropReason(report.reason)
            response.dropped.count = UInt32(clamping: report.count)
            response.dropped.lastSequence = report.lastSequence
            writer.send(response)
        }
    }

    func formatChanged(_ news: StreamNews) {
        var response = Camerad_V1_StreamResponse()
        response.formatChanged = message(news)
        writer.send(response, descriptors: inline ? [] : news.pool.descriptors)
    }

    /// StreamStarted or FormatChanged: the same news, the pool's memory as its descriptors.
    private func message<Message: PoolNews>(_ news: StreamNews) -> Message {
        var message = Message()
        message.pool = Camerad_V1_FramePool(news.pool, shared: !inline)
        if let device = news.device { message.device = Camerad_V1_Device(device) }
        if let mode = news.mode { message.frameDuration = Camerad_V1_Fraction(mode.frameDuration) }
        if let note = news.note { message.note = note }
        return message
    }

    func interrupted(_ reason: StreamInterruption, _ error: CameraError) {
        var response = Camerad_V1_StreamResponse()
        response.interrupted.reason = Camerad_V1_InterruptionReason(reason)
        response.interrupted.message = error.message
        writer.send(response)
    }

    func end(with error: CameraError?) { writer.end(with: error?.rpcError) }

    private static func message(_ frame: PooledFrame) -> Camerad_V1_FrameReady {
        var message = Camerad_V1_FrameReady()
        message.poolID = frame.pool.id
        message.slot = UInt32(frame.slot)
        message.sequence = frame.sequence
        message.presentationTimeNs = frame.timestampNanoseconds
        message.durationNs = frame.durationNanoseconds
        message.bytesUsed = UInt64(frame.bytesUsed)
        message.planes = frame.pool.media.video?.planeInfos ?? []
        return message
    }
}

extension DeviceStreamer {
    /// Opens a stream for a client's Stream call: its events go to `writer` as
    /// the protocol's messages.
    func open(
        _ request: Camerad_V1_OpenStream, for owner: ClientBudget.Owner, writer: any StreamResponder
    ) async throws -> UInt64 {
        let settings = request.settings
        let request = try StreamRequest(request)
        // Rings are for shared-memory frames only.
        let rings = try owner.user.flatMap { user throws(CameraError) in
            try ClientRings(releaseRing: settings.releaseRing && !request.inline, frameRing: settings.frameRing && !request.inline,
                            user: user, device: device.uniqueID, budget: budget)
        }
        return try await open(request, for: owner, sink: ClientStreamSink(writer: writer, inline: request.inline, rings: rings))
    }

    /// The client is done with some slots (ReleaseFrames).
    func release(_ streamID: UInt64, _ request: Camerad_V1_ReleaseFrames) throws {
        try release(streamID, poolID: request.poolID, slots: request.slots.map(Int.init))
    }
}

/// The messages that tell a client where its frames are: StreamStarted and
/// FormatChanged have the same fields.
protocol PoolNews {
    init()
    var pool: Camerad_V1_FramePool { get set }
    var device: Camerad_V1_Device { get set }
    var frameDuration: Camerad_V1_Fraction { get set }
    var note: String { get set }
}

extension Camerad_V1_StreamStarted: PoolNews {}
extension Camerad_V1_FormatChanged: PoolNews {}
