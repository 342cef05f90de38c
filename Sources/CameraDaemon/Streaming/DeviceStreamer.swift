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

    /// Guarded by ``state``'s lock: the graph's source (``CaptureSource``) and
    /// its variant nodes (``VariantNode``), each with its streams' subscriptions.
    struct State {
        var source = CaptureSource()
        var variants: [FrameVariant: VariantNode] = [:]
        /// Each stream's variant: its subscription is that variant node's.
        var streams: [UInt64: FrameVariant] = [:]
        var nextStreamID: UInt64 = 1

        /// Whether anything needs the capture: a stream (opening or streaming) or a photo.
        var isUsed: Bool { !streams.isEmpty }

        /// A stream's subscription.
        func stream(_ id: UInt64) -> Subscription? {
            streams[id].flatMap { variants[$0]?.core.subscriptions[id: id] }
        }

        /// A pool by id: a variant's current one, or one it replaced that is still held.
        func pool(_ id: UInt64) -> VariantPool? {
            for node in variants.values {
                if let pool = node.core.pool(id) { return pool }
            }
            return nil
        }

        /// The variants' current pools.
        var currentPools: [VariantPool] { variants.values.compactMap(\.pool) }
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
            guard let stream = state.stream(id), let mode = state.source.lifecycle.mode,
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
    /// variant's node (in its pool, or `pool`, made for it), and plans the capture's start.
    private func register(
        _ sink: any FrameSink, options: StreamOptions, mode: CaptureMode, owner: ClientBudget.Owner,
        pool prepared: VariantPool?, _ state: inout State
    ) throws -> (id: UInt64, jobs: [CaptureLifecycle.Job]) {
        let charge = try budget.chargeStream(owner, bytes: options.bytesHeld, descriptors: sink.descriptorsHeld,
                                             "a stream of \(options.variant)")
        let id = state.nextStreamID
        state.nextStreamID += 1
        let (node, pool) = join(options, prepared: prepared, &state)
        node.core.add(Subscription(id: id, node: self, charge: charge, policy: options.policy,
                                   outbox: StreamOutbox(sink: sink, copies: options.inline, unsent: unsent), poolID: pool.id))
        state.streams[id] = options.variant
        state.source.interruption = nil
        return (id, planned(state.source.lifecycle.handle(.start(mode))))
    }

    /// A sink is done with some slots of a pool; queued frames move up.
    ///
    /// - Throws: `INVALID_ARGUMENT` for a slot this stream does not hold.
    func release(_ streamID: UInt64, poolID: UInt64, slots: [Int]) throws {
        try locked { state throws(CameraError) in
            guard let variant = state.streams[streamID], let node = state.variants[variant],
                  let stream = node.core.subscriptions[id: streamID] else { return }
            if try node.core.release(stream, poolID: poolID, slots: slots) { dropUnusedPools(&state) }
        }
    }

    /// Reads what sinks gave back without a message since the last frame
    /// (a client's release ring), as each frame comes, under the lock: each
    /// variant node's (``NodeCore/readReleases()``). A stream whose ring makes
    /// no sense ends alone with INVALID_ARGUMENT.
    func readReleases(_ state: inout State) {
        var ended: [UInt64] = []
        for node in state.variants.values { ended += node.core.readReleases() }
        guard !ended.isEmpty else { return }
        for id in ended { state.streams[id] = nil }
        dropUnusedPools(&state)
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
        guard let variant = state.streams.removeValue(forKey: streamID),
              let stream = state.variants[variant]?.core.remove(streamID) else { return nil }
        dropUnusedPools(&state)
        return stream
    }

    /// Ends every stream (photos' too) with `reason` (the device went, the
    /// daemon stops), and the capture.
    func interrupt(_ reason: StreamInterruption, _ error: CameraError) {
        let (waiters, jobs) = locked { state in
            state.source.interruption = error
            for node in state.variants.values {
                node.core.endAll(reason, error)
                node.core.retirePool()
            }
            state.streams = [:]
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
                variants: state.variants.values.compactMap { node in node.pool.map { (node, $0) } }.sorted { $0.1.id < $1.1.id }.map { node, pool in
                    Statistics.Variant(poolID: pool.id, variant: pool.variant, streams: node.core.subscriptions.count,
                                       slotCount: pool.slotCount, slotsInUse: pool.slotsInUse, conversions: pool.conversions,
                                       framesSkipped: pool.framesSkipped, framesShared: pool.framesShared,
                                       framesCopied: pool.framesCopied)
                })
        }
    }
}
