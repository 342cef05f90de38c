import CameraIPC
import CameraMedia
import Foundation
import Logging
import Synchronization

/// Feeds one device's frames to every stream open on it.
///
/// ```
/// capture thread: frame ─► each variant some stream streams: its worker (never waits),
///                 or, the device's buffer itself with buffers to spare, offered right here
/// variant worker: the device's own format and buffers to spare? the slot is the
///                 device's buffer (no copy); else a free slot ─► convert once (lock not held)
///                 ─► for each stream of the variant:
///                     room (held < its limit)? hold the slot, send FrameReady
///                     else drop for that stream only (FRAME_WAS_LATE),
///                     or queue up to 3 (alwaysDiscardsLateVideoFrames false)
/// client: ReleaseFrames ─► slot free again once no stream holds it
/// ```
///
/// Neither the capture thread nor a worker waits on a client: every send is
/// non-blocking and a full client costs only itself; a slow variant costs only
/// its own streams (`DeviceStreamer+Delivery.swift`). Work per frame grows with
/// the variants, not the streams. Every frame a stream wants is sent to it or
/// counted in its ``DropTally``, which reaches the client just ahead of its
/// next frame.
///
/// The device's capture follows ``CaptureLifecycle``: it starts when a stream or
/// a photo needs it and stops when none does, each start and stop a job on the
/// device's ``DeviceExecutor`` (`DeviceStreamer+Capture.swift`). Each stream
/// follows ``StreamLifecycle``: opening until the capture runs, streaming, closed.
/// State is behind one lock, held briefly and never across a
/// call out (a conversion, a job, a waiter resumed).
final class DeviceStreamer: SubscriptionHost {
    let device: any CameraBackend
    let logger: Logger
    /// Used through ``locked(_:)``, which sends what was posted to streams once it is let go.
    let state = OrderedMutex(.deviceStreamer, State())
    /// Streams' outboxes with messages posted under the lock (``StreamOutbox``).
    let unsent = UnsentOutboxes()
    /// What streams and pools may take, shared with every device's streamer.
    let budget: ClientBudget
    /// Where its sinks' timers run (a photo's deadline): the daemon's event loop.
    let timers: EventLoop
    /// Called when a capture finds the device gone: the registry removes it,
    /// which ends the streams.
    let onDeviceLost: @Sendable (CameraError) -> Void

    /// Output variants one device makes at most: each costs a conversion per frame.
    static let maxVariants = 16

    /// Guarded by ``state``'s lock: the graph's source (``CaptureSource``),
    /// its variant nodes (``VariantNode``), and its subscriptions.
    struct State {
        var source = CaptureSource()
        var variants: [FrameVariant: VariantNode] = [:]
        var streams: [UInt64: Subscription] = [:]
        var nextStreamID: UInt64 = 1

        /// Whether anything needs the capture: a stream (opening or streaming) or a photo.
        var isUsed: Bool { !streams.isEmpty }

        /// A pool by id: a variant's current one, or one it replaced that is still held.
        func pool(_ id: UInt64) -> VariantPool? {
            for node in variants.values {
                if let pool = node.pool(id) { return pool }
            }
            return nil
        }

        /// The variants' current pools.
        var currentPools: [VariantPool] { variants.values.compactMap(\.pool) }

        /// A variant's node, made for its first stream.
        mutating func node(for variant: FrameVariant) -> VariantNode {
            if let node = variants[variant] { return node }
            let node = VariantNode(variant: variant)
            variants[variant] = node
            return node
        }
    }

    init(device: any CameraBackend, timers: EventLoop, budget: ClientBudget = ClientBudget(), logger: Logger,
         onDeviceLost: @escaping @Sendable (CameraError) -> Void = { _ in }) {
        self.device = device
        self.timers = timers
        self.budget = budget
        self.logger = logger
        self.onDeviceLost = onDeviceLost
    }

    /// The mode the device captures in, or is starting in; nil when idle.
    var runningMode: CaptureMode? { locked { $0.source.lifecycle.mode } }

    /// The mode a stream opened now with `preset` would find: the running
    /// one, else the one it would start the device in.
    func modeForNewStream(preset: SessionPreset = StreamRequest().preset) async -> CaptureMode {
        if let running = runningMode { return running }
        let active = await device.executor.run { [device] in device.activeMode }
        return device.configuredMode ?? ModeSelection.mode(for: preset, formats: device.formats, active: active)
    }

    // MARK: - Streams

    /// Opens a stream for a sink (a client's, a photo's, a node's input),
    /// waits for the capture to run (starting the device if it is idle, in
    /// the mode its preset picks), and tells its sink it started, with its
    /// pool. The stream is charged to `owner`, with the descriptors its sink's
    /// transport holds.
    ///
    /// - Returns: the stream's id, for ``release(_:poolID:slots:)`` and ``close(_:)``.
    /// - Throws: ``CameraError`` for settings the device cannot serve, a device that
    ///   cannot start, or RESOURCE_EXHAUSTED past the ``ClientBudget``.
    func open(
        _ request: StreamRequest, for owner: ClientBudget.Owner, sink: any FrameSink
    ) async throws -> UInt64 {
        var description = device.describe()
        // Reading the node's own mode opens it: the device's work, on its executor.
        let active = await device.executor.run { [device] in device.activeMode }
        let wanted = device.configuredMode ?? ModeSelection.mode(for: request.preset, formats: device.formats, active: active)
        // A new pool (a memfd and its mapping) is made with the lock let go,
        // then installed if it still fits; else the stream is planned again.
        var prepared: VariantPool?
        var opened: (id: UInt64, jobs: [CaptureLifecycle.Job])?
        while opened == nil {
            let step = try locked { state throws -> OpenStep in
                let mode = state.source.lifecycle.mode ?? wanted
                guard mode.format.isStreamable else {
                    throw CameraError(.unsupportedFormat,
                                      "\(device.uniqueID) runs \(mode.format.pixelFormat.code), which camerad cannot read; pick a YUYV, NV12, YU12, AR24 or MJPG format")
                }
                let options = try StreamOptions(request, mode: mode)
                let need = try poolNeed(for: options, in: state, source: mode.layout)
                if let need, prepared?.fits(need) != true { return .makePool(need) }
                return .opened(try register(sink, options: options, mode: mode, owner: owner,
                                            pool: need == nil ? nil : prepared, &state))
            }
            switch step {
            case .makePool(let need): prepared = try makePool(need)
            case .opened(let registered): opened = registered
            }
        }
        let (id, jobs) = opened!
        perform(jobs)
        do {
            try await waitUntilRunning()
        } catch {
            let jobs = locked { state -> [CaptureLifecycle.Job] in
                remove(id, &state)
                return stopIfUnused(&state)
            }
            perform(jobs)
            throw error
        }
        locked { state in
            guard let stream = state.streams[id], let mode = state.source.lifecycle.mode,
                  let pool = state.pool(stream.poolID) else { return }  // ended meanwhile: the call says why
            var note: String?
            if let configured = device.configuredMode, configured == mode,
               mode != ModeSelection.mode(for: request.preset, formats: device.formats, active: mode) {
                note = "the device runs \(mode) as configured under its lock; you get \(pool.variant)"
            } else if mode != wanted {
                note = "the device runs \(mode) for another client; you get \(pool.variant)"
            }
            description.activeMode = mode
            stream.outbox.post(.started(StreamNews(pool: pool, mode: mode, note: note, device: description)))
            stream.transition(.started, of: device.uniqueID, logger)
        }
        return id
    }

    /// A step of ``open(_:for:sink:)`` under the lock.
    private enum OpenStep {
        /// A pool must be made first, the lock let go.
        case makePool(PoolNeed)
        case opened((id: UInt64, jobs: [CaptureLifecycle.Job]))
    }

    /// Charges and registers a new subscription under the lock, in the
    /// variant's pool (or `pool`, made for it), and plans the capture's start.
    private func register(
        _ sink: any FrameSink, options: StreamOptions, mode: CaptureMode, owner: ClientBudget.Owner,
        pool prepared: VariantPool?, _ state: inout State
    ) throws -> (id: UInt64, jobs: [CaptureLifecycle.Job]) {
        let charge = try budget.chargeStream(owner, bytes: options.bytesHeld, descriptors: sink.descriptorsHeld,
                                             "a stream of \(options.variant)")
        let id = state.nextStreamID
        state.nextStreamID += 1
        let pool = self.pool(for: options, joining: id, in: &state, prepared: prepared)
        state.streams[id] = Subscription(id: id, node: self, charge: charge, policy: options.policy,
                                         outbox: StreamOutbox(sink: sink, copies: options.inline, unsent: unsent),
                                         poolID: pool.id)
        state.source.interruption = nil
        return (id, planned(state.source.lifecycle.handle(.start(mode))))
    }

    /// A sink is done with some slots of a pool; queued frames move up.
    ///
    /// - Throws: `INVALID_ARGUMENT` for a slot this stream does not hold.
    func release(_ streamID: UInt64, poolID: UInt64, slots: [Int]) throws {
        try locked { state throws(CameraError) in
            guard let stream = state.streams[streamID] else { return }
            try release(stream, poolID: poolID, slots: slots, &state)
        }
    }

    /// ``release(_:poolID:slots:)`` under the lock: from a ReleaseFrames, or
    /// read from the stream's ring.
    func release(_ stream: Subscription, poolID: UInt64, slots: some Collection<Int>, _ state: inout State) throws(CameraError) {
        let pool = state.pool(poolID)
        let movedUpFailed = try stream.release(poolID: poolID, slots: slots, in: pool)
        // A replaced pool (no streams left) may now be unused; a current one is not.
        let mayBeUnused = pool?.subscriptionIDs.isEmpty == true
        if movedUpFailed || mayBeUnused { dropUnusedPools(&state) }
    }

    /// Reads what sinks gave back without a message since the last frame
    /// (a client's release ring: ``FrameSink/readReleases(_:)``), as each frame
    /// comes, under the lock. What makes no sense — a ring in disorder, a slot
    /// its stream does not hold — ends that stream alone with INVALID_ARGUMENT.
    func readReleases(_ state: inout State) {
        var broken: [(UInt64, CameraError)] = []
        for stream in state.streams.values {
            do throws(CameraError) {
                try stream.outbox.sink.readReleases { (poolID, slot) throws(CameraError) in
                    try release(stream, poolID: poolID, slots: CollectionOfOne(slot), &state)
                }
            } catch {
                broken.append((stream.id, error))
            }
            if stream.lateInARow >= Subscription.lateRunToLog && !stream.lateRunLogged {
                stream.lateRunLogged = true
                let held = stream.held.map { "\($0.poolID)/\($0.slot)" }.sorted().joined(separator: ", ")
                logger.notice("\(device.uniqueID): stream \(stream.id) lost its last \(stream.lateInARow) frames as late: it holds [\(held)] (\(stream.policy.maxInFlight) at most) and gave back \(stream.released); it gets frames again once it releases one")
            }
        }
        for (id, error) in broken {
            logger.notice("\(device.uniqueID): stream \(id) ended: \(error.message)")
            remove(id, &state)?.outbox.post(.end(error))
        }
    }

    /// Closes a stream: its slots return, and the device stops if nothing else needs it.
    func close(_ streamID: UInt64) {
        let jobs = locked { state -> [CaptureLifecycle.Job] in
            guard remove(streamID, &state) != nil else { return [] }
            return stopIfUnused(&state)
        }
        perform(jobs)
    }

    /// Forgets a stream: what it held goes back to its pools, and its charge to
    /// its connection's budget.
    @discardableResult
    func remove(_ streamID: UInt64, _ state: inout State) -> Subscription? {
        guard let stream = state.streams.removeValue(forKey: streamID) else { return nil }
        stream.transition(.closed, of: device.uniqueID, logger)
        stream.letGoOfEverything { state.pool($0) }
        dropUnusedPools(&state)
        budget.refund(stream.charge)
        return stream
    }

    /// Ends every stream (photos' too) with `reason` (the device went, the
    /// daemon stops), and the capture.
    func interrupt(_ reason: StreamInterruption, _ error: CameraError) {
        let (waiters, jobs) = locked { state in
            state.source.interruption = error
            for stream in state.streams.keys.compactMap({ remove($0, &state) }) {
                stream.outbox.post(.interrupted(reason, error))
                stream.outbox.post(.end(error))
            }
            for node in state.variants.values {
                node.pool = nil
                node.retired = []
            }
            dropUnusedPools(&state)
            let waiters = state.source.takeStartWaiters()
            return (waiters, planned(state.source.lifecycle.handle(.stop)))
        }
        for waiter in waiters { waiter.wake(throwing: error) }
        perform(jobs)
    }

    /// What the streamer does for the device now (GetDeviceStatistics).
    struct Statistics: Sendable {
        struct Variant: Sendable {
            let poolID: UInt64
            let variant: FrameVariant
            let streams: Int
            let slotCount: Int
            let slotsInUse: Int
            let conversions: UInt64
            let framesSkipped: UInt64
            let framesShared: UInt64
            let framesCopied: UInt64
        }

        let isCapturing: Bool
        let framesCaptured: UInt64
        let streams: Int
        /// The variants made now, oldest pool first.
        let variants: [Variant]
    }

    func statistics() -> Statistics {
        locked { state in
            Statistics(
                isCapturing: state.source.lifecycle.isRunning, framesCaptured: state.source.framesCaptured, streams: state.streams.count,
                variants: state.currentPools.sorted { $0.id < $1.id }.map { pool in
                    Statistics.Variant(poolID: pool.id, variant: pool.variant, streams: pool.subscriptionIDs.count,
                                       slotCount: pool.slotCount, slotsInUse: pool.slotsInUse, conversions: pool.conversions,
                                       framesSkipped: pool.framesSkipped, framesShared: pool.framesShared,
                                       framesCopied: pool.framesCopied)
                })
        }
    }
}
