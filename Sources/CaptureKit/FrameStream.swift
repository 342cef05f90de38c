import CameraIPC
import CameraProtocol
import Foundation
import Synchronization

/// One Stream call, from CaptureKit's side: opens it, maps each pool it is sent
/// once, and turns frame messages into sample buffers whose slots go back to the
/// daemon when their last reference goes.
///
/// Messages are handled on the connection's event-loop thread as they arrive
/// and handed straight to the stream's ``Consumer`` (the output): a frame
/// crosses one thread, to the delegate's queue or the `sampleBuffers` reader.
///
/// ```
/// opening ──StreamStarted──► buffering ──consume(_:)──► consuming ──end──► ended
///    └───────────── the call's end, or close() ───────────────────────────► ended
/// ```
/// Events that come between the open and ``consume(_:)`` wait, in order; once
/// ended (or closed) nothing more is delivered.
///
/// Frames and drops come through the stream's frame ring in shared memory
/// (``FrameRing``), read on the same thread when its signal fires: camerad
/// sends no message per frame. Other news still comes on the socket and waits
/// for its place in the ring (``AnnouncedFrames``).
final class FrameStream: SlotOwner {
    /// What arrives on a stream.
    enum Event: Sendable {
        case frame(SampleBuffer)
        case dropped(SampleBuffer.DroppedFrameReason, count: Int, lastSequence: UInt64)
        /// New frames come from another pool; `modeNote` is set when the device's
        /// mode changed (nil when only the pool grew).
        case formatChanged(modeNote: String?)
    }

    /// Where a running stream's events go, on the event loop's thread: neither
    /// may block. `end` comes once, last — unless the stream was closed — with
    /// the status the daemon ended the stream with (nil: OK).
    struct Consumer: Sendable {
        let event: @Sendable (Event) -> Void
        let end: @Sendable (CaptureError?) -> Void
    }

    private typealias Opening = CheckedContinuation<Camerad_V1_StreamStarted, any Error>
    private typealias StreamCall = BidirectionalCall<Camerad_V1_StreamRequest, Camerad_V1_StreamResponse>

    private enum Phase {
        case opening(Opening?)
        /// Started; events wait for a consumer. `ended`: the call ended meanwhile, with that status.
        case buffering([Event], ended: CaptureError??)
        case consuming(Consumer)
        case ended
    }

    private struct State {
        var phase = Phase.opening(nil)
        var pools: [UInt64: StreamPool] = [:]
        var started = Camerad_V1_StreamStarted()
    }
    private let state = Mutex(State())

    /// The call (set once made, before anything can arrive on it) and the
    /// slots due to go back. A lock of its own: a sample buffer let go of
    /// while an event is delivered under `state`'s lock releases its slot.
    private struct Releases {
        var call: StreamCall?
        /// Where releases are written when camerad gave the stream one; a full
        /// ring (camerad reads it as each frame comes) falls back to messages.
        var ring: ReleaseRing?
        /// Slots due to go back, in the order they were let go of.
        var due: [(poolID: UInt64, slot: UInt32)] = []
        var sending = false
    }
    private let releases = Mutex(Releases())

    /// The frame ring's reader, once StreamStarted brought one.
    private let announced = AnnouncedFrames()

    private init() {}

    deinit { announced.stopWaking() }

    /// What the daemon said when it started the stream.
    var started: Camerad_V1_StreamStarted { state.withLock { $0.started } }

    /// Opens a stream and waits for the daemon to start it.
    static func open(_ request: Camerad_V1_OpenStream) async throws(CaptureError) -> FrameStream {
        let client = try await DaemonClient.shared.connection()
        let stream = FrameStream()
        return try await CaptureError.converting {
            let call: StreamCall = try client.bidirectional(CameraService.stream) { [weak stream] (event: RawCallEvent) throws in
                try stream?.handle(event)
            }
            stream.releases.withLock { $0.call = call }
            try await withTaskCancellationHandler {
                _ = try await withCheckedThrowingContinuation { (continuation: Opening) in
                    let waiting = stream.state.withLock { state -> Bool in
                        guard case .opening = state.phase else { return false }
                        state.phase = .opening(continuation)
                        return true
                    }
                    guard waiting else {
                        return continuation.resume(throwing: CaptureError(.internalError, "camerad ended the stream before starting it"))
                    }
                    var open = Camerad_V1_StreamRequest()
                    open.open = request
                    do { try call.send(open) } catch { stream.failOpening(error) }
                }
            } onCancel: {
                call.cancel()
            }
            return stream
        }
    }

    /// Hands the stream's events to `consumer` from now on, those that came
    /// since the open first, in order — all on the event loop's thread, as
    /// every event after them (a sample buffer handler is called on one thread).
    func consume(_ consumer: Consumer) {
        DaemonClient.shared.loop.execute { [self] in handOver(to: consumer) }
    }

    private func handOver(to consumer: Consumer) {
        let ended = state.withLock { state -> CaptureError?? in
            guard case .buffering(let events, let ended) = state.phase else { return nil }
            // Under the lock, as every event is: none overtakes another.
            for event in events { consumer.event(event) }
            state.phase = ended == nil ? .consuming(consumer) : .ended
            return ended
        }
        if let ended { consumer.end(ended) }
    }

    /// One response or the end, on the event loop's thread. A frame is read by
    /// hand (``StreamWire``), anything else by SwiftProtobuf; a response that
    /// does not decode is thrown, and ends the call.
    private func handle(_ event: RawCallEvent) throws {
        switch event {
        case .message(let payload, let descriptors):
            let response: Camerad_V1_StreamResponse.OneOf_Kind?
            if let frame = StreamWire.frameReady(payload) {
                response = .frame(frame)
            } else {
                response = try Camerad_V1_StreamResponse(serializedBytes: payload).kind
            }
            if announced.hasRing {
                // Its place is a news record in the ring.
                announced.news.append((response, descriptors))
                readRing()
                return
            }
            guard let event = self.event(from: response, descriptors: descriptors) else { return }
            deliver(event)
            if case .started = response { readRing() }
        case .end(let error):
            // What the ring announced before the end, then news that found no room there.
            readRing(toTheEnd: true)
            announced.stopWaking()
            let reason = error.map { CaptureError(converting: $0) }
            let (opening, consumer) = state.withLock { state -> (Opening?, Consumer?) in
                switch state.phase {
                case .opening(let continuation):
                    state.phase = .ended
                    return (continuation, nil)
                case .buffering(let events, _):
                    state.phase = .buffering(events, ended: .some(reason))
                case .consuming(let consumer):
                    state.phase = .ended
                    return (nil, consumer)
                case .ended:
                    break
                }
                return (nil, nil)
            }
            opening?.resume(throwing: reason ?? CaptureError(.internalError, "camerad ended the stream before starting it"))
            consumer?.end(reason)
        }
    }

    /// An event to the consumer, or to wait for one. Under the lock, so that
    /// nothing is delivered once close() returns.
    private func deliver(_ event: Event) {
        state.withLock { state in
            switch state.phase {
            case .buffering(var events, let ended):
                events.append(event)
                state.phase = .buffering(events, ended: ended)
            case .consuming(let consumer):
                consumer.event(event)
            case .opening, .ended:
                break
            }
        }
    }

    /// Reads the frame ring, on the event loop's thread: when its signal fires,
    /// when a message comes, and to the end as the call ends (`toTheEnd`: news
    /// whose message never came is passed over, and messages with no record
    /// follow the ring's records). A ring that makes no sense ends the stream.
    fileprivate func readRing(toTheEnd: Bool = false) {
        guard let ring = announced.ring, !announced.reading else { return }
        announced.reading = true
        defer { announced.reading = false }
        do {
            try ring.read { record in
                switch record {
                case let .frame(poolID, slot, sequence, presentationTimeNs, durationNs, bytesUsed):
                    // The pool of the frame before, most often: no look-up.
                    if announced.lastPool?.id != poolID { announced.lastPool = state.withLock { $0.pools[poolID] } }
                    guard let pool = announced.lastPool else {
                        throw CaptureError(.internalError, "camerad announced a frame of unknown pool \(poolID)")
                    }
                    let frame = ArrivedFrame(slot: slot, sequence: sequence, presentationTimeNs: presentationTimeNs,
                                             durationNs: durationNs, bytesUsed: bytesUsed)
                    deliver(.frame(SampleBuffer(frame, pool: pool, stream: self)))
                case let .dropped(reason, count, lastSequence):
                    deliver(.dropped(SampleBuffer.DroppedFrameReason(Camerad_V1_DropReason(rawValue: Int(reason)) ?? .unspecified),
                                     count: Int(clamping: count), lastSequence: lastSequence))
                case .news:
                    guard !announced.news.isEmpty else { return toTheEnd }
                    let (response, descriptors) = announced.news.removeFirst()
                    if let event = event(from: response, descriptors: descriptors) { deliver(event) }
                }
                return true
            }
        } catch {
            failOpening(error)
            releases.withLock { $0.call }?.cancel()
            return
        }
        guard toTheEnd else { return }
        let news = announced.news
        announced.news = []
        for (response, descriptors) in news {
            if let event = event(from: response, descriptors: descriptors) { deliver(event) }
        }
    }

    /// A response as the consumer gets it; nil for what it never sees
    /// (StreamStarted, which ends the opening, and StreamInterrupted, whose
    /// call's end follows and says why).
    private func event(from response: Camerad_V1_StreamResponse.OneOf_Kind?, descriptors: [OwnedFD]) -> Event? {
        do {
            switch response {
            case .started(let started):
                let pool = StreamPool(try MappedFramePool(started.pool, descriptors: descriptors))
                if started.hasReleaseRing {
                    let index = Int(started.releaseRing.fdIndex)
                    guard index < descriptors.count else {
                        throw CaptureError(.internalError, "camerad's release ring names descriptor \(index) of \(descriptors.count)")
                    }
                    let ring = try ReleaseRing(mapping: descriptors[index], capacity: Int(started.releaseRing.capacity))
                    releases.withLock { $0.ring = ring }
                }
                if started.hasFrameRing {
                    let (index, signal) = (Int(started.frameRing.fdIndex), Int(started.frameRing.signalFdIndex))
                    guard index < descriptors.count, signal < descriptors.count else {
                        throw CaptureError(.internalError,
                                           "camerad's frame ring names descriptors \(index) and \(signal) of \(descriptors.count)")
                    }
                    try announced.start(FrameRing(mapping: descriptors[index], capacity: Int(started.frameRing.capacity)),
                                        signal: descriptors[signal], for: self)
                }
                let opening = state.withLock { state -> Opening? in
                    guard case .opening(let continuation) = state.phase else { return nil }
                    state.pools[pool.id] = pool
                    state.started = started
                    state.phase = .buffering([], ended: nil)
                    return continuation
                }
                opening?.resume(returning: started)
                return nil
            case .frame(let frame):
                guard let pool = state.withLock({ $0.pools[frame.poolID] }) ?? (frame.data.isEmpty ? nil : StreamPool.inline) else {
                    throw CaptureError(.internalError, "camerad sent a frame of unknown pool \(frame.poolID)")
                }
                return .frame(SampleBuffer(ArrivedFrame(frame), pool: pool, stream: self))
            case .dropped(let dropped):
                return .dropped(SampleBuffer.DroppedFrameReason(dropped.reason), count: Int(dropped.count),
                                lastSequence: dropped.lastSequence)
            case .formatChanged(let changed):
                let pool = StreamPool(try MappedFramePool(changed.pool, descriptors: descriptors))
                state.withLock { $0.pools[pool.id] = pool }
                guard changed.hasDevice else { return .formatChanged(modeNote: nil) }
                LiveDevices.shared.update(changed.device)
                return .formatChanged(modeNote: changed.note)
            case .interrupted, nil:
                return nil
            }
        } catch {
            // A message CaptureKit cannot use ends the stream, saying why.
            failOpening(error)
            releases.withLock { $0.call }?.cancel()
            return nil
        }
    }

    /// The open failed before the daemon started the stream.
    private func failOpening(_ error: any Error) {
        let opening = state.withLock { state -> Opening? in
            guard case .opening(let continuation) = state.phase else { return nil }
            state.phase = .ended
            return continuation
        }
        opening?.resume(throwing: error)
    }

    /// Gives a slot back to the daemon: written to the stream's release ring,
    /// which camerad reads as its next frame comes (no message). When the ring
    /// is full, or there is none, a ReleaseFrames; slots given back while
    /// another thread sends go with its next message: one for all that are due
    /// (one per pool, when a format change left slots of two).
    func release(poolID: UInt64, slot: UInt32) {
        let call = releases.withLock { releases -> StreamCall? in
            // The ring first (one writer: under this lock); a message when it is full.
            if let ring = releases.ring, ring.push(poolID: poolID, slot: slot) { return nil }
            releases.due.append((poolID, slot))
            guard !releases.sending, let call = releases.call else { return nil }
            releases.sending = true
            return call
        }
        guard let call else { return }
        while true {
            let due = releases.withLock { releases -> [(poolID: UInt64, slot: UInt32)] in
                defer { releases.due = [] }
                if releases.due.isEmpty { releases.sending = false }
                return releases.due
            }
            if due.isEmpty { return }
            for (poolID, slots) in ReleaseRing.byPool(due) {
                // If the call is over the daemon has taken the slots back already.
                try? call.send(serialized: StreamWire.releaseRequest(poolID: poolID, slots: slots))
            }
        }
    }

    /// Ends the stream; its slots go back with it. Nothing is delivered once
    /// it returns, and the consumer's `end` is not called.
    func close() {
        state.withLock { $0.phase = .ended }
        announced.stopWaking()
        let call = releases.withLock { $0.call }
        call?.finishSending()
        call?.cancel()
    }
}

/// A stream's frame ring as CaptureKit reads it: the ring, its signal
/// registered edge-triggered on the connection's event loop, and the messages
/// that came on the socket waiting for their news records. Everything but the
/// registration is touched on the event loop's thread only.
private final class AnnouncedFrames: EventHandler, @unchecked Sendable {
    private(set) var ring: FrameRing?
    /// Stream messages that came on the socket, each waiting for its news record.
    var news: [(response: Camerad_V1_StreamResponse.OneOf_Kind?, descriptors: [OwnedFD])] = []
    /// Set while the ring is read: an end that comes meanwhile does not read it again.
    var reading = false
    /// The pool of the last frame read from the ring.
    var lastPool: StreamPool?
    private weak var stream: FrameStream?
    private var signal: OwnedFD?
    private let registration = Mutex<EventLoop.Registration?>(nil)

    /// Whether the stream's frames come through a ring.
    var hasRing: Bool { ring != nil }

    /// Starts reading `ring` whenever `signal` fires.
    func start(_ ring: FrameRing, signal: OwnedFD, for stream: FrameStream) throws {
        self.stream = stream
        self.signal = signal
        let registered = try DaemonClient.shared.loop.register(signal.rawValue, events: [.readable, .edgeTriggered], handler: self)
        registration.withLock { $0 = registered }
        self.ring = ring
    }

    func handleEvents(_ events: EventLoop.Events) { stream?.readRing() }

    /// No more wake-ups (the stream ended or closed); from any thread.
    func stopWaking() {
        guard let registered = registration.withLock({ registration in
            defer { registration = nil }
            return registration
        }) else { return }
        DaemonClient.shared.loop.deregister(registered)
    }
}
