import CameraIPC
import CameraMedia
import CameraProtocol
import Foundation
import Synchronization

/// A client of the raw protocol streaming one device in its own format with
/// the pool mapped as a C or Python client would: it checks each frame where
/// the pool says it lies, and can hold frames or die holding them. With a
/// frame ring it reads frames there, waiting on the ring's signal edge-triggered
/// on its event loop, never reading it, as clients do.
public final class PoolReader: @unchecked Sendable {
    /// A frame or a drop report, in the order the stream told them.
    public enum Told: Sendable, Equatable {
        case frame(sequence: UInt64)
        case dropped(reason: Camerad_V1_DropReason, count: Int, lastSequence: UInt64)
    }

    public struct Frame: Sendable {
        public let sequence: UInt64
        /// Where it lies, to give it back.
        public let poolID: UInt64
        public let slot: UInt32
        /// The check said its bytes are as the device made them.
        public let intact: Bool
        /// It lies in one of the device's buffers, not a slot of the pool's own.
        public let inDeviceBuffer: Bool
    }

    /// Whether a frame's bytes are as the device made them.
    public typealias Check = @Sendable (_ bytes: UnsafeRawBufferPointer, _ sequence: UInt64, _ pool: Camerad_V1_FramePool) -> Bool

    /// A virtual camera's frames: their stamps say their own sequence number.
    /// Takes any bytes (a microphone's periods: their stamp spans periods).
    public static let anyBytes: Check = { _, _, _ in true }

    public static let stampsMatch: Check = { bytes, sequence, pool in
        let stamp = FrameStampDecoder.decode(frame: bytes, format: PixelFormat(fourcc: pool.fourcc),
                                             width: Int(pool.width), height: Int(pool.height)).stamp
        return stamp?.sequence == UInt32(truncatingIfNeeded: sequence)
    }

    public let device: String
    /// Its camerad, whose log a reader that gives up waiting quotes.
    private let daemon: DaemonProcess
    private let check: Check
    private let loop: EventLoop
    private let client: RPCClient
    private let call: BidirectionalCall<Camerad_V1_StreamRequest, Camerad_V1_StreamResponse>
    private var responses: ResponseStream<Camerad_V1_StreamResponse>.WithDescriptors.AsyncIterator
    private var pools: [UInt64: MappedFramePool] = [:]
    /// Where frames go back when the stream asked for a release ring.
    public private(set) var ring: ReleaseRing?
    /// Frames given back through the ring, and by ReleaseFrames.
    public private(set) var releasedThroughRing = 0
    public private(set) var releasedByMessage = 0
    /// The pool of the last frame read.
    public private(set) var pool: Camerad_V1_FramePool
    /// The slot of the last frame read.
    public private(set) var lastSlot: UInt32?
    /// Where frames are announced when the stream asked for a frame ring, and its signal.
    public private(set) var frameRing: FrameRing?
    /// What wakes this reader when its frame ring has new records.
    public private(set) var frameSignal: OwnedFD?
    /// Counts the signal's edges (registered on the reader's loop), and reads the ring on each.
    private let signalWaiter = SignalWaiter()
    /// Socket messages that came for news records not yet reached, with their descriptors.
    private var news: [(Camerad_V1_StreamResponse.OneOf_Kind?, [OwnedFD])] = []
    /// Guards the ring's reading, and what it changes, while a read is under way.
    private let ringLock = NSLock()
    /// The read under way; nil: nobody reads the ring.
    private var ringReading: RingReading?
    /// Every frame and drop report read, in order.
    public private(set) var told: [Told] = []
    /// FormatChanged messages read.
    public private(set) var formatChanges = 0
    /// Looks at the frame ring, and the longest time between two of them:
    /// whether this reader (its test's task) was starved, when it gives up.
    private var ringLooks = 0
    private var longestBetweenLooks: Duration = .zero
    private var lastLook: ContinuousClock.Instant?

    /// Opens a stream of `device` in its own format; `framesInFlight` 0 is the
    /// daemon's default; `keepsLateFrames` queues frames that come while it
    /// holds all it may (alwaysDiscardsLateVideoFrames false).
    /// `audio` opens a microphone's stream of periods in that format instead (check them with ``anyBytes``).
    public init(_ daemon: DaemonProcess, device: String, name: String, framesInFlight: UInt32 = 0, releaseRing: Bool = false,
                frameRing: Bool = false, keepsLateFrames: Bool = false, audio: Camerad_V1_AudioFormat? = nil,
                check: @escaping Check = PoolReader.stampsMatch) async throws {
        self.device = device
        self.daemon = daemon
        self.check = check
        loop = try EventLoop(name: name)
        client = try await RPCClient.connect(to: daemon.socketPath, clientName: name, loop: loop)
        call = try client.bidirectional(CameraService.stream)
        var open = Camerad_V1_StreamRequest()
        open.open.uniqueID = device
        open.open.settings.maxFramesInFlight = framesInFlight
        open.open.settings.releaseRing = releaseRing
        open.open.settings.frameRing = frameRing
        if keepsLateFrames { open.open.settings.alwaysDiscardsLateVideoFrames = false }
        if let audio { open.open.audio = audio }
        try call.send(open)
        responses = call.responses.withDescriptors.makeAsyncIterator()
        guard let started = try await responses.next(), case .started(let news) = started.message.kind else {
            throw DaemonFailure("\(name): no StreamStarted")
        }
        pools[news.pool.poolID] = try MappedFramePool(news.pool, descriptors: started.descriptors)
        pool = news.pool
        if news.hasReleaseRing {
            ring = try ReleaseRing(mapping: started.descriptors[Int(news.releaseRing.fdIndex)], capacity: Int(news.releaseRing.capacity))
        }
        if news.hasFrameRing {
            self.frameRing = try FrameRing(mapping: started.descriptors[Int(news.frameRing.fdIndex)],
                                           capacity: Int(news.frameRing.capacity))
            let signal = started.descriptors[Int(news.frameRing.signalFdIndex)]
            signalWaiter.onEdge = { [weak self] in
                guard let self else { return }
                ringLock.withLock { lookAtRing() }
            }
            _ = try loop.register(signal.rawValue, events: [.readable, .edgeTriggered], handler: signalWaiter)
            frameSignal = signal
        }
    }

    /// The next `count` frames, each checked and, if `releasing`, given back.
    public func read(_ count: Int, releasing: Bool = true) async throws -> [Frame] {
        var frames: [Frame] = []
        if frameRing != nil {
            try await readRing(count, releasing: releasing, into: &frames)
            return frames
        }
        while frames.count < count {
            guard let received = try await responses.next() else { throw DaemonFailure("\(device): the stream ended") }
            try handle(received.message.kind, descriptors: received.descriptors, releasing: releasing, into: &frames)
        }
        return frames
    }

    /// The next message on the socket (with a frame ring, nothing but news
    /// comes there): nil when the stream ended as asked; its error, thrown, else.
    public func nextMessage() async throws -> Camerad_V1_StreamResponse.OneOf_Kind? {
        try await responses.next()?.message.kind
    }

    /// Frames read from the frame ring, news taken from the socket in its
    /// place, waiting on the ring's signal (up to a generous deadline).
    ///
    /// While it waits, the reader's event loop reads the ring as each signal
    /// edge comes, as a client's own thread would (``lookAtRing()``): frames go
    /// back at once however long this task waits for a cooperative thread,
    /// which a busy test process (two of them here, and tests computing on
    /// them for seconds) makes it wait.
    private func readRing(_ count: Int, releasing: Bool, into frames: inout [Frame]) async throws {
        let ring = frameRing!
        let deadline = ContinuousClock.now + .seconds(60)
        ringLock.withLock { ringReading = RingReading(count: count, releasing: releasing) }
        defer { ringLock.withLock { ringReading = nil } }
        while true {
            // An edge after this is a record written since the ring was read.
            let edges = signalWaiter.edges.load(ordering: .acquiring)
            let reading = try ringLock.withLock { () throws -> RingReading in
                lookAtRing()
                return ringReading!
            }
            if let failure = reading.failure { throw failure }
            if reading.frames.count >= count {
                frames = reading.frames
                return
            }
            if reading.waitsForNews {
                guard let received = try await responses.next() else { throw DaemonFailure("\(device): the stream ended") }
                ringLock.withLock {
                    news.append((received.message.kind, received.descriptors))
                    ringReading?.waitsForNews = false
                }
                continue
            }
            guard ContinuousClock.now < deadline else {
                ringLock.withLock { ringReading = nil }
                throw DaemonFailure("\(device): \(reading.frames.count) of \(count) frames in the ring in 60 s; \(await ringState(ring))")
            }
            _ = await waitUntil(timeout: .milliseconds(100), every: .milliseconds(1)) {
                signalWaiter.edges.load(ordering: .acquiring) != edges
            }
        }
    }

    /// What a ``readRing(_:releasing:into:)`` under way has read.
    private struct RingReading {
        let count: Int
        let releasing: Bool
        var frames: [Frame] = []
        /// A news record was reached whose message has not come.
        var waitsForNews = false
        var failure: (any Error)?
    }

    /// Reads the frame ring's new records while a read is under way (its
    /// task, or the event loop on the ring's signal), under ``ringLock``:
    /// frames checked and given back, drops told, news handled once its
    /// message has come. Enough frames, or news not yet come: the rest stays
    /// in the ring for the next look.
    private func lookAtRing() {
        guard let ring = frameRing, var reading = ringReading, reading.failure == nil, !reading.waitsForNews,
              reading.frames.count < reading.count else { return }
        defer { ringReading = reading }
        let now = ContinuousClock.now
        if let lastLook { longestBetweenLooks = max(longestBetweenLooks, now - lastLook) }
        (ringLooks, lastLook) = (ringLooks + 1, now)
        do {
            try ring.read { record in
                guard reading.frames.count < reading.count else { return false }
                switch record {
                case let .frame(poolID, slot, sequence, _, _, bytesUsed):
                    var frame = Camerad_V1_FrameReady()
                    (frame.poolID, frame.slot, frame.sequence, frame.bytesUsed) = (poolID, slot, sequence, bytesUsed)
                    try handle(.frame(frame), descriptors: [], releasing: reading.releasing, into: &reading.frames)
                case let .dropped(reason, count, lastSequence):
                    told.append(.dropped(reason: Camerad_V1_DropReason(rawValue: Int(reason)) ?? .unspecified,
                                         count: Int(count), lastSequence: lastSequence))
                case .news:
                    guard !news.isEmpty else {
                        reading.waitsForNews = true
                        return false
                    }
                    let (kind, descriptors) = news.removeFirst()
                    try handle(kind, descriptors: descriptors, releasing: reading.releasing, into: &reading.frames)
                }
                return true
            }
        } catch {
            reading.failure = error
        }
    }

    /// What the ring, this reader and camerad say, for a reader that gives up
    /// waiting: the ring's counters, what was told, the device's statistics.
    private func ringState(_ ring: FrameRing) async -> String {
        let head = ring.memory.baseAddress.load(as: UInt64.self)
        let tail = ring.memory.baseAddress.load(fromByteOffset: 64, as: UInt64.self)
        let drops = told.reduce(into: [String: Int]()) { tally, told in
            if case let .dropped(reason, count, _) = told { tally["\(reason)", default: 0] += count }
        }
        var state = "ring head \(head), tail \(tail), signal edges \(signalWaiter.edges.load(ordering: .acquiring)), "
            + "news waiting \(news.count), released \(releasedThroughRing) through the ring and \(releasedByMessage) by message, drops \(drops), "
            + "\(ringLooks) looks at the ring, at most \(longestBetweenLooks) apart"
        if let releases = self.ring {
            // The release ring's head is this reader's count; its tail, camerad's.
            state += "; release ring head \(releases.memory.baseAddress.load(as: UInt64.self)), "
                + "tail \(releases.memory.baseAddress.load(fromByteOffset: 64, as: UInt64.self))"
        }
        var request = Camerad_V1_GetDeviceStatisticsRequest()
        request.uniqueID = device
        do {
            let statistics = try await client.unary(CameraService.getDeviceStatistics, request)
            state += "; camerad: capturing \(statistics.capturing), \(statistics.framesCaptured) frames captured, \(statistics.streams) streams, "
                + statistics.variants.map {
                    "pool \($0.poolID): \($0.slotsInUse) of \($0.slotCount) slots in use, \($0.streams) streams, \($0.framesShared) frames shared, "
                        + "\($0.framesCopied) copied, \($0.conversions) converted, \($0.framesSkipped) skipped (its worker behind)"
                }
                    .joined(separator: "; ")
        } catch {
            state += "; camerad's statistics: \(error)"
        }
        return state + "\ncamerad's last lines:\n" + daemon.logText.split(separator: "\n").suffix(40).joined(separator: "\n")
    }

    /// One message (or ring record, as its message) as this reader takes it.
    private func handle(_ kind: Camerad_V1_StreamResponse.OneOf_Kind?, descriptors: [OwnedFD], releasing: Bool,
                        into frames: inout [Frame]) throws {
        switch kind {
        case .frame(let frame):
            guard let mapped = pools[frame.poolID], let bytes = mapped.slot(frame.slot, bytes: Int(frame.bytesUsed)) else {
                throw DaemonFailure("\(device): frame \(frame.sequence) lies outside its pool")
            }
            pool = mapped.description
            lastSlot = frame.slot
            let slots = mapped.description.slots
            frames.append(Frame(sequence: frame.sequence, poolID: frame.poolID, slot: frame.slot, intact: check(bytes, frame.sequence, mapped.description),
                                inDeviceBuffer: !slots.isEmpty && slots[Int(frame.slot)].fdIndex != 0))
            told.append(.frame(sequence: frame.sequence))
            if releasing {
                if let ring, ring.push(poolID: frame.poolID, slot: frame.slot) {
                    releasedThroughRing += 1
                } else {
                    var release = Camerad_V1_StreamRequest()
                    release.release.poolID = frame.poolID
                    release.release.slots = [frame.slot]
                    try call.send(release)
                    releasedByMessage += 1
                }
            }
        case .dropped(let dropped):
            told.append(.dropped(reason: dropped.reason, count: Int(dropped.count), lastSequence: dropped.lastSequence))
        case .formatChanged(let changed):
            pools[changed.pool.poolID] = try MappedFramePool(changed.pool, descriptors: descriptors)
            formatChanges += 1
        default:
            break
        }
    }

    /// Sends a request on the stream (a test's own ReleaseFrames, or a second open).
    public func send(_ request: Camerad_V1_StreamRequest) throws { try call.send(request) }

    /// Ends the stream as a client that is done: the half-close.
    public func finish() { call.finishSending() }

    /// The device's statistics now: its first variant (the one streamed, when it is the only one).
    public func variant() async throws -> Camerad_V1_VariantStatistics {
        var request = Camerad_V1_GetDeviceStatisticsRequest()
        request.uniqueID = device
        guard let variant = try await client.unary(CameraService.getDeviceStatistics, request).variants.first else {
            throw DaemonFailure("\(device) makes no variant")
        }
        return variant
    }

    /// Gone, as a client killed: the daemon takes back all it held.
    public func close() {
        call.cancel()
        client.close()
        loop.stop()
    }
}

/// Counts the edges of a frame ring's signal, and acts on each on the loop.
private final class SignalWaiter: EventHandler, @unchecked Sendable {
    let edges = Atomic(0)
    /// Set once, before the signal is registered.
    var onEdge: (@Sendable () -> Void)?
    func handleEvents(_ events: EventLoop.Events) {
        onEdge?()
        edges.add(1, ordering: .releasing)
    }
}
