import CameraIPC
import CameraMedia
import CameraProtocol
import Dispatch
import Foundation
import Logging
import Synchronization

/// Feeds one device's frames to every stream open on it.
///
/// ```
/// capture thread: frame ─► for each variant some stream wants now:
///                              take a free slot ─► convert once (lock not held)
///                          ─► for each stream of the variant:
///                              room (held < its limit)? hold the slot, send FrameReady
///                              else drop for that stream only (FRAME_WAS_LATE),
///                              or queue up to 3 (alwaysDiscardsLateVideoFrames false)
/// client: ReleaseFrames ─► slot free again once no stream holds it
/// ```
///
/// The capture thread never waits on a client: every send is non-blocking and a
/// full client costs only itself. Work per frame grows with the variants, not the
/// streams. A device with no streams stops capturing. Every frame a stream wants
/// is sent to it or counted in its ``DropTally``, which reaches the client just
/// ahead of its next frame.
final class DeviceStreamer: @unchecked Sendable {
    let device: any CameraBackend
    private let logger: Logger
    private let state = Mutex(State())
    /// Stopping a capture waits for its thread; that happens here, off the callers.
    private let stopQueue = DispatchQueue(label: "camerad.capture-stop")

    private static let nextPoolID = Atomic<UInt64>(1)

    struct SlotReference: Hashable {
        let poolID: UInt64
        let slot: Int
    }

    private struct Stream {
        let id: UInt64
        /// The connection the stream is charged to (``StreamBudget``).
        let connectionID: UInt64
        let options: StreamOptions
        let writer: ResponseWriter<Camerad_V1_StreamResponse>
        var poolID: UInt64
        var held: Set<SlotReference> = []
        /// Frames waiting for room, each with the drops that came before it.
        var queue: [(reference: SlotReference, frame: Camerad_V1_FrameReady, dropsBefore: DropTally)] = []
        var lastOffered: Int64?
        /// Drops since the last frame sent or queued.
        var drops = DropTally()
    }

    private struct State {
        var mode: CaptureMode?
        /// The mode of the last capture, to go back to when a mode change fails.
        var previousMode: CaptureMode?
        var capture: (any CaptureStream)?
        /// Counts capture starts, so frames from a capture being stopped are ignored.
        var generation: UInt64 = 0
        var lastSequence: UInt64?
        var framesCaptured: UInt64 = 0
        /// Every pool: the current one of each variant, and replaced ones still held.
        var pools: [UInt64: VariantPool] = [:]
        var currentPool: [FrameVariant: UInt64] = [:]
        var streams: [UInt64: Stream] = [:]
        var nextStreamID: UInt64 = 1
        /// Photos waiting for a frame.
        var photoTaps: [PhotoTap] = []
    }

    /// A photo waiting for the next frame (after `skip` more).
    private struct PhotoTap {
        let id: UInt64
        var skip: Int
        let continuation: CheckedContinuation<PhotoFrame, any Error>
    }

    /// One frame taken for a photo: its bytes (copied), and the mode it was made in.
    struct PhotoFrame: Sendable {
        let bytes: [UInt8]
        let mode: CaptureMode
        let sequence: UInt64
        let timestampNanoseconds: Int64
    }

    /// How long a photo waits for its frame at least; longer for slow modes:
    /// twice the frames it lets pass, and one more.
    static let photoTimeout: Duration = .seconds(5)

    /// Called when a capture finds the device gone: the registry removes it,
    /// which ends the streams.
    private let onDeviceLost: @Sendable (RPCError) -> Void
    /// Called when the streamer changed the device's description (the torch
    /// turned off as capture stopped).
    private let onDeviceChanged: @Sendable () -> Void

    /// What streams and pools may take, shared with every device's streamer.
    private let budget: StreamBudget

    /// Output variants one device makes at most: each costs a conversion per frame.
    static let maxVariants = 16

    init(device: any CameraBackend, budget: StreamBudget = StreamBudget(), logger: Logger,
         onDeviceLost: @escaping @Sendable (RPCError) -> Void = { _ in }, onDeviceChanged: @escaping @Sendable () -> Void = {}) {
        self.device = device
        self.budget = budget
        self.logger = logger
        self.onDeviceLost = onDeviceLost
        self.onDeviceChanged = onDeviceChanged
    }

    /// The mode the device captures in now; nil when idle.
    var runningMode: CaptureMode? { state.withLock { $0.mode } }

    // MARK: - Streams

    /// Opens a stream for a connection and sends it StreamStarted with its pool;
    /// starts the device if it is idle, in the mode its preset picks.
    ///
    /// - Returns: the stream's id, for ``release(_:_:)`` and ``close(_:)``.
    /// - Throws: ``RPCError`` for settings the device cannot serve, a device that
    ///   cannot start, or RESOURCE_EXHAUSTED past the ``StreamBudget``.
    func open(
        _ request: Camerad_V1_OpenStream, for connectionID: UInt64, writer: ResponseWriter<Camerad_V1_StreamResponse>
    ) throws -> UInt64 {
        let description = device.describe()
        return try state.withLock { state in
            let wanted = device.configuredMode
                ?? ModeSelection.mode(for: request.preset, formats: description.formats, active: device.activeMode)
            let mode = state.mode ?? wanted
            guard mode.format.isStreamable else {
                throw RPCError(.unsupportedFormat,
                               "\(device.uniqueID) runs \(PixelFormat(fourcc: mode.format.fourcc).code), which camerad cannot read; pick a YUYV, NV12, YU12, AR24 or MJPG format")
            }
            let options = try StreamOptions(request.settings, preset: request.preset, mode: mode)
            try budget.chargeStream(connection: connectionID, bytes: options.bytesHeld, "a stream of \(options.variant)")
            let id = state.nextStreamID
            state.nextStreamID += 1
            let pool: VariantPool
            do {
                pool = try self.pool(for: options, joining: id, in: &state, source: mode.layout)
            } catch {
                budget.refundStream(connection: connectionID, bytes: options.bytesHeld)
                throw error
            }
            state.streams[id] = Stream(id: id, connectionID: connectionID, options: options, writer: writer, poolID: pool.id)

            if state.capture == nil {
                do {
                    try startCapture(mode, &state)
                } catch {
                    remove(id, &state)
                    throw error as? RPCError ?? RPCError(.deviceBusy, "\(device.uniqueID) cannot start: \(error)")
                }
            }

            var started = Camerad_V1_StreamStarted()
            started.pool = pool.description(shared: !options.inline)
            started.device = description
            started.device.activeFormatIndex = UInt32(mode.formatIndex)
            started.frameDuration = mode.frameDuration
            if let configured = device.configuredMode, configured == mode,
               mode != ModeSelection.mode(for: request.preset, formats: description.formats, active: mode) {
                started.note = "the device runs \(mode) as configured under its lock; you get \(options.variant)"
            } else if mode != wanted {
                started.note = "the device runs \(mode) for another client; you get \(options.variant)"
            }
            var response = Camerad_V1_StreamResponse()
            response.started = started
            writer.send(response, descriptors: options.inline ? [] : [pool.memory.descriptor])
            return id
        }
    }

    /// The lock holder changed the device's mode (``CameraBackend/configure(_:)``
    /// already has it): a running capture restarts in it. Every stream keeps its
    /// own output (pixel format, size, orientation), gets a pool made from the
    /// new frames and a FormatChanged; the old pool's slots stay valid until
    /// released, so no frame is torn. A stream whose output cannot be made from
    /// the new mode ends with UNSUPPORTED_FORMAT.
    ///
    /// - Throws: ``RPCError`` when the device will not start in `mode` (it is
    ///   started again in the mode it ran).
    func switchMode(to mode: CaptureMode) throws {
        let stopping = state.withLock { state -> (any CaptureStream)? in
            guard let running = state.mode, running != mode else { return nil }
            return stopCapture(&state, keepingStreams: true)
        }
        guard let stopping else { return }
        stopping.stop()
        var ended: [(Stream, RPCError)] = []
        defer {
            for (stream, error) in ended { stream.writer.end(with: error) }
        }
        let failure = state.withLock { state -> (error: RPCError, streamsStopped: Bool)? in
            guard !state.streams.isEmpty || !state.photoTaps.isEmpty, state.capture == nil else {
                rebuildPools(&state, ended: &ended)
                return nil
            }
            do {
                try startCapture(mode, &state)
                rebuildPools(&state, ended: &ended)
                return nil
            } catch {
                let failure = error as? RPCError ?? RPCError(.deviceBusy, "\(device.uniqueID) cannot start in \(mode): \(error)")
                // Back to what ran, so the streams go on.
                guard let previous = state.previousMode, (try? startCapture(previous, &state)) != nil else {
                    return (failure, true)
                }
                rebuildPools(&state, ended: &ended)
                return (failure, false)
            }
        }
        if let failure {
            if failure.streamsStopped { interrupt(.deviceFailed, failure.error) }
            throw failure.error
        }
    }

    /// ``switchMode(to:)`` on a thread of its own: it waits for the capture
    /// thread to stop, which a handler must not do on the cooperative pool.
    func switchModeOffThePool(to mode: CaptureMode) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.switchMode(to: mode) })
            }
        }
    }

    /// Gives every variant whose pool was made from another mode's frames a new
    /// pool, moves its streams there and tells them.
    private func rebuildPools(_ state: inout State, ended: inout [(Stream, RPCError)]) {
        guard let mode = state.mode else { return }
        let description = device.describe()
        for (variant, poolID) in state.currentPool {
            guard let old = state.pools[poolID], old.source != mode.layout else { continue }
            let ids = old.streamIDs
            old.streamIDs = []
            state.currentPool[variant] = nil
            let pool: VariantPool
            do {
                pool = try VariantPool(id: Self.nextPoolID.wrappingAdd(1, ordering: .relaxed).oldValue,
                                       source: mode.layout, variant: variant, slotCount: old.slotCount, budget: budget)
            } catch {
                let failure = error as? RPCError ?? RPCError(.unsupportedFormat,
                    "\(device.uniqueID) now runs \(mode), from which \(variant) cannot be made: \((error as? ConversionError)?.message ?? "\(error)"); open the stream again")
                for id in ids {
                    guard let stream = remove(id, &state) else { continue }
                    ended.append((stream, failure))
                }
                continue
            }
            state.pools[pool.id] = pool
            state.currentPool[variant] = pool.id
            pool.streamIDs = ids
            for id in ids {
                guard let stream = state.streams[id] else { continue }
                state.streams[id]!.poolID = pool.id
                var response = Camerad_V1_StreamResponse()
                response.formatChanged.pool = pool.description(shared: !stream.options.inline)
                response.formatChanged.device = description
                response.formatChanged.device.activeFormatIndex = UInt32(mode.formatIndex)
                response.formatChanged.frameDuration = mode.frameDuration
                response.formatChanged.note = "the device now runs \(mode); you still get \(variant)"
                stream.writer.send(response, descriptors: stream.options.inline ? [] : [pool.memory.descriptor])
            }
        }
        dropUnusedPools(&state)
    }

    // MARK: - Photos

    /// The next frame the device makes, copied: from the running capture, or
    /// from a capture started in `idleMode` for it (after `warmUpFrames`, which a
    /// real camera needs to settle its exposure), stopped again after. At least
    /// `skipping` frames are let pass first (a flash lights a later one).
    ///
    /// - Throws: ``RPCError`` when the device cannot start, fails, goes, or makes
    ///   no frame in time (``photoTimeout``); `CancellationError` when the call goes.
    func takePhotoFrame(idleMode: CaptureMode, warmUpFrames: Int, skipping: Int = 0) async throws -> PhotoFrame {
        let id = state.withLock { state in
            defer { state.nextStreamID += 1 }
            return state.nextStreamID
        }
        let frameDuration = (runningMode ?? idleMode).frameDurationNanoseconds
        let waitNanoseconds = max(Self.photoTimeout.nanoseconds, 2 * Int64(max(warmUpFrames, skipping) + 1) * frameDuration)
        let timeout = DispatchWorkItem { [weak self] in
            let seconds = String(format: "%.1f", Double(waitNanoseconds) / 1e9)
            self?.failPhoto(id, RPCError(.timedOut, "\(self?.device.uniqueID ?? "the device") made no frame for the photo within \(seconds) s; try again"))
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(waitNanoseconds)), execute: timeout)
        defer { timeout.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PhotoFrame, any Error>) in
                let failure = state.withLock { state -> (any Error)? in
                    var skip = skipping
                    if state.capture == nil {
                        do {
                            try startCapture(idleMode, &state)
                        } catch {
                            return error as? RPCError ?? RPCError(.deviceBusy, "\(device.uniqueID) cannot start: \(error)")
                        }
                        skip = max(skip, warmUpFrames)
                    }
                    state.photoTaps.append(PhotoTap(id: id, skip: skip, continuation: continuation))
                    return nil
                }
                if let failure { continuation.resume(throwing: failure) }
            }
        } onCancel: {
            failPhoto(id, CancellationError())
        }
    }

    /// Ends a waiting photo with `error` (resumed outside the lock, as every
    /// waiter here is: see ARCHITECTURE.md), and stops a capture only it kept.
    private func failPhoto(_ id: UInt64, _ error: any Error) {
        let (tap, stopping) = state.withLock { state -> (PhotoTap?, (any CaptureStream)?) in
            guard let index = state.photoTaps.firstIndex(where: { $0.id == id }) else { return (nil, nil) }
            let tap = state.photoTaps.remove(at: index)
            return (tap, state.streams.isEmpty && state.photoTaps.isEmpty ? stopCapture(&state) : nil)
        }
        tap?.continuation.resume(throwing: error)
        if let stopping { stop(stopping) }
    }

    /// The client is done with some slots; queued frames move up.
    ///
    /// - Throws: `INVALID_ARGUMENT` for a slot this stream does not hold.
    func release(_ streamID: UInt64, _ request: Camerad_V1_ReleaseFrames) throws {
        try state.withLock { state in
            guard var stream = state.streams[streamID] else { return }
            let references = request.slots.map { SlotReference(poolID: request.poolID, slot: Int($0)) }
            for reference in references where !stream.held.contains(reference) {
                throw RPCError(.invalidArgument,
                               "slot \(reference.slot) of pool \(reference.poolID) is not held by this stream; release each frame once")
            }
            for reference in references {
                stream.held.remove(reference)
                state.pools[reference.poolID]?.references[reference.slot] -= 1
            }
            while stream.held.count < stream.options.maxFramesInFlight, !stream.queue.isEmpty {
                let next = stream.queue.removeFirst()
                stream.held.insert(next.reference)
                send(next.dropsBefore, to: stream)
                var response = Camerad_V1_StreamResponse()
                response.frame = next.frame
                stream.writer.send(response)
            }
            state.streams[streamID] = stream
            dropUnusedPools(&state)
        }
    }

    /// Closes a stream: its slots return, and the device stops if it was the last.
    func close(_ streamID: UInt64) {
        let stopping = state.withLock { state -> (any CaptureStream)? in
            guard remove(streamID, &state) != nil else { return nil }
            return state.streams.isEmpty && state.photoTaps.isEmpty ? stopCapture(&state) : nil
        }
        if let stopping { stop(stopping) }
    }

    /// Forgets a stream: what it held goes back to its pools, and its charge to
    /// its connection's budget.
    @discardableResult
    private func remove(_ streamID: UInt64, _ state: inout State) -> Stream? {
        guard let stream = state.streams.removeValue(forKey: streamID) else { return nil }
        for reference in stream.held.union(stream.queue.map(\.reference)) {
            state.pools[reference.poolID]?.references[reference.slot] -= 1
        }
        state.pools[stream.poolID]?.streamIDs.remove(stream.id)
        dropUnusedPools(&state)
        budget.refundStream(connection: stream.connectionID, bytes: stream.options.bytesHeld)
        return stream
    }

    /// Ends every stream with `reason` (the device went, the daemon stops) and the capture.
    func interrupt(_ reason: Camerad_V1_InterruptionReason, _ error: RPCError) {
        let (streams, taps, stopping) = state.withLock { state in
            defer {
                state.pools.removeAll()
                state.currentPool.removeAll()
                state.photoTaps.removeAll()
            }
            let streams = state.streams.keys.compactMap { remove($0, &state) }
            return (streams, state.photoTaps, stopCapture(&state))
        }
        for tap in taps { tap.continuation.resume(throwing: error) }
        for stream in streams {
            var response = Camerad_V1_StreamResponse()
            response.interrupted.reason = reason
            response.interrupted.message = error.message
            stream.writer.send(response)
            stream.writer.end(with: error)
        }
        if let stopping { stop(stopping) }
    }

    func statistics() -> Camerad_V1_DeviceStatistics {
        state.withLock { state in
            var statistics = Camerad_V1_DeviceStatistics()
            statistics.uniqueID = device.uniqueID
            statistics.capturing = state.capture != nil
            statistics.framesCaptured = state.framesCaptured
            statistics.streams = UInt32(state.streams.count)
            statistics.variants = state.currentPool.values.compactMap { state.pools[$0] }.sorted { $0.id < $1.id }.map { pool in
                var variant = Camerad_V1_VariantStatistics()
                variant.poolID = pool.id
                variant.fourcc = pool.variant.format.fourcc
                variant.width = UInt32(pool.variant.width)
                variant.height = UInt32(pool.variant.height)
                variant.rotationDegrees = UInt32(pool.variant.rotation.rawValue)
                variant.mirrored = pool.variant.mirrored
                variant.streams = UInt32(pool.streamIDs.count)
                variant.slotCount = UInt32(pool.slotCount)
                variant.slotsInUse = UInt32(pool.slotsInUse)
                variant.conversions = pool.conversions
                return variant
            }
            return statistics
        }
    }

    // MARK: - The capture thread

    /// The device failed under a capture: gone (the registry removes it and ends
    /// the streams as disconnected), or failed in place (the streams end as failed).
    private func captureFailed(_ error: RPCError, generation: UInt64) {
        guard state.withLock({ $0.generation == generation }) else { return }
        logger.error("\(device.uniqueID): capture ended: \(error.message)")
        if error.reason == .deviceDisconnected {
            onDeviceLost(error)
        } else {
            interrupt(.deviceFailed, error)
        }
    }

    /// One frame from the device.
    private func deliver(_ frame: CapturedFrame, generation: UInt64) {
        var jobs: [(pool: VariantPool, slot: Int, streams: [UInt64])] = []
        var photos: [PhotoTap] = []
        var photoMode: CaptureMode?
        var stopping: (any CaptureStream)?
        state.withLock { state in
            guard state.generation == generation else { return }
            state.framesCaptured += 1
            if !state.photoTaps.isEmpty {
                for index in state.photoTaps.indices { state.photoTaps[index].skip -= 1 }
                photos = state.photoTaps.filter { $0.skip < 0 }
                state.photoTaps.removeAll { $0.skip < 0 }
                photoMode = state.mode
                if !photos.isEmpty && state.streams.isEmpty && state.photoTaps.isEmpty { stopping = stopCapture(&state) }
            }
            if let last = state.lastSequence, frame.sequence > last + 1 {
                for id in state.streams.keys {
                    state.streams[id]!.drops.add(.discontinuity, count: Int(frame.sequence - last - 1), sequence: frame.sequence - 1)
                }
            }
            state.lastSequence = frame.sequence
            for poolID in state.currentPool.values {
                guard let pool = state.pools[poolID] else { continue }
                let wanting = pool.streamIDs.filter { id in state.streams[id].map { wants($0, frame) } ?? false }
                guard !wanting.isEmpty else { continue }
                guard let slot = pool.freeSlot() else {
                    for id in wanting {
                        state.streams[id]!.lastOffered = frame.timestampNanoseconds
                        state.streams[id]!.drops.add(.outOfBuffers, count: 1, sequence: frame.sequence)
                    }
                    continue
                }
                pool.writing = slot
                jobs.append((pool, slot, wanting.sorted()))
            }
        }
        if !photos.isEmpty, let photoMode {
            let taken = PhotoFrame(bytes: Array(frame.bytes), mode: photoMode, sequence: frame.sequence,
                                   timestampNanoseconds: frame.timestampNanoseconds)
            for photo in photos { photo.continuation.resume(returning: taken) }
        }
        if let stopping { stop(stopping) }
        guard !jobs.isEmpty else { return }

        // Convert with the lock free: releases and other streams go on meanwhile.
        let zoom = device.settingsState.digitalZoom
        var written: [Int?] = []
        for job in jobs {
            do {
                written.append(try job.pool.converter.convert(frame.bytes, into: job.pool.slot(job.slot), zoom: zoom))
            } catch {
                logger.error("\(device.uniqueID): converting to \(job.pool.variant) failed: \(error)")
                written.append(nil)
            }
        }

        state.withLock { state in
            for (job, bytes) in zip(jobs, written) {
                job.pool.writing = nil
                guard let bytes, state.pools[job.pool.id] === job.pool else {
                    // Lost to a failed conversion or a pool replaced meanwhile: still told.
                    for id in job.streams where state.streams[id] != nil {
                        state.streams[id]!.drops.add(.discontinuity, count: 1, sequence: frame.sequence)
                    }
                    continue
                }
                job.pool.conversions += 1
                job.pool.bytesUsed[job.slot] = bytes
                var message = Camerad_V1_FrameReady()
                message.poolID = job.pool.id
                message.slot = UInt32(job.slot)
                message.sequence = frame.sequence
                message.presentationTimeNs = frame.timestampNanoseconds
                message.durationNs = frame.durationNanoseconds
                message.bytesUsed = UInt64(bytes)
                message.planes = job.pool.planes
                // Serialized once for every stream of the variant.
                var response = Camerad_V1_StreamResponse()
                response.frame = message
                let serialized: [UInt8] = try! response.serializedBytes()
                for id in job.streams where state.streams[id] != nil {
                    guard state.streams[id]!.poolID == job.pool.id else {
                        // Moved to a larger pool while this frame was converted.
                        state.streams[id]!.drops.add(.discontinuity, count: 1, sequence: frame.sequence)
                        continue
                    }
                    offer(message, serialized, from: job.pool, to: &state.streams[id]!)
                }
            }
        }
    }

    /// Whether a stream takes this frame, given its minimum frame duration. Half a
    /// device frame of slack keeps 30 fps from a 60 fps device steady.
    private func wants(_ stream: Stream, _ frame: CapturedFrame) -> Bool {
        let minimum = stream.options.minFrameDurationNanoseconds
        guard minimum > 0, let last = stream.lastOffered else { return true }
        return frame.timestampNanoseconds - last >= minimum - frame.durationNanoseconds / 2
    }

    /// Gives a stream a converted frame (`serialized`: its StreamResponse), or
    /// drops it for that stream alone.
    private func offer(
        _ frame: Camerad_V1_FrameReady, _ serialized: [UInt8], from pool: VariantPool, to stream: inout Stream
    ) {
        stream.lastOffered = frame.presentationTimeNs
        let slot = Int(frame.slot)
        var response = Camerad_V1_StreamResponse()
        if stream.options.inline {
            var inline = frame
            inline.data = Data(bytes: pool.slot(slot).baseAddress!, count: pool.bytesUsed[slot])
            response.frame = inline
            send(stream.drops, to: stream)
            stream.drops = DropTally()
            // Two frames behind in reading: this one is late.
            if !stream.writer.send(response, droppingAbove: 2 * pool.layout.capacity) {
                stream.drops.add(.frameWasLate, count: 1, sequence: frame.sequence)
            }
            return
        }
        let reference = SlotReference(poolID: pool.id, slot: slot)
        if stream.queue.isEmpty && stream.held.count < stream.options.maxFramesInFlight {
            pool.references[slot] += 1
            stream.held.insert(reference)
            send(stream.drops, to: stream)
            stream.drops = DropTally()
            if !stream.writer.send(serialized: serialized) {
                // The call is gone; close() follows.
                pool.references[slot] -= 1
                stream.held.remove(reference)
            }
        } else if stream.options.alwaysDiscardsLateFrames {
            stream.drops.add(.frameWasLate, count: 1, sequence: frame.sequence)
        } else if stream.queue.count < StreamOptions.queueLimit {
            pool.references[slot] += 1
            stream.queue.append((reference, frame, stream.drops))
            stream.drops = DropTally()
        } else {
            stream.drops.add(.outOfBuffers, count: 1, sequence: frame.sequence)
        }
    }

    /// Reports a tally to a stream's client. Never refused for a slow reader:
    /// a report is small, comes at most once per reason ahead of each frame,
    /// and a frame must not overtake the drops before it.
    private func send(_ drops: DropTally, to stream: Stream) {
        for response in drops.messages { stream.writer.send(response) }
    }

    // MARK: - Pools and capture

    /// The pool a new stream of `options` joins: the variant's, grown if it
    /// lacks room for the newcomer's allowance, or a new one.
    private func pool(
        for options: StreamOptions, joining streamID: UInt64, in state: inout State, source: FrameLayout
    ) throws -> VariantPool {
        let current = state.currentPool[options.variant].flatMap { state.pools[$0] }
        let others = current.map { pool in pool.streamIDs.compactMap { state.streams[$0]?.options.slotsHeld } } ?? []
        let needed = Self.spareSlots + options.slotsHeld + others.reduce(0, +)
        if let current, current.slotCount >= needed {
            current.streamIDs.insert(streamID)
            return current
        }
        if current == nil && state.currentPool.count >= Self.maxVariants {
            throw RPCError(.resourceExhausted,
                           "\(device.uniqueID) already makes \(Self.maxVariants) output variants, the most camerad allows; ask for one of them ('camctl stats \(device.uniqueID)' lists them)")
        }
        // Growing doubles, so that a crowd joining one by one moves pools a few times, not once each.
        let slots = max(needed, 2 * (current?.slotCount ?? 0))
        let pool: VariantPool
        do {
            pool = try VariantPool(id: Self.nextPoolID.wrappingAdd(1, ordering: .relaxed).oldValue,
                                   source: source, variant: options.variant, slotCount: slots, budget: budget)
        } catch let error as RPCError {
            throw error
        } catch let error as ConversionError {
            throw RPCError(.unsupportedFormat, "\(options.variant): \(error.message)")
        } catch {
            throw RPCError(.resourceExhausted, "cannot make a frame pool for \(options.variant): \(error)")
        }
        state.pools[pool.id] = pool
        state.currentPool[options.variant] = pool.id
        pool.streamIDs = [streamID]
        if let current {
            // Too small for the newcomer: its streams move to the new pool and
            // keep the old one's slots until they release them.
            for id in current.streamIDs {
                state.streams[id]?.poolID = pool.id
                pool.streamIDs.insert(id)
                if let stream = state.streams[id] {
                    var response = Camerad_V1_StreamResponse()
                    response.formatChanged.pool = pool.description(shared: !stream.options.inline)
                    if let mode = state.mode { response.formatChanged.frameDuration = mode.frameDuration }
                    response.formatChanged.note = "a larger pool for a new stream of the same variant"
                    stream.writer.send(response, descriptors: stream.options.inline ? [] : [pool.memory.descriptor])
                }
            }
            current.streamIDs = []
            dropUnusedPools(&state)
        }
        return pool
    }

    /// Slots beyond what all its streams may hold together (frames on their way
    /// to a client count as held): the one being written. So a stream that holds
    /// all it may, never releasing, costs only itself; its neighbours always
    /// find a free slot.
    static let spareSlots = 1

    /// Forgets pools no stream uses and no client holds.
    private func dropUnusedPools(_ state: inout State) {
        for (id, pool) in state.pools where pool.streamIDs.isEmpty && pool.slotsInUse == 0 {
            state.pools[id] = nil
            if state.currentPool[pool.variant] == id { state.currentPool[pool.variant] = nil }
        }
    }

    /// Starts the device in `mode`; its frames carry a new generation.
    private func startCapture(_ mode: CaptureMode, _ state: inout State) throws {
        state.generation += 1
        let generation = state.generation
        state.capture = try device.startCapture(mode, onFrame: { [weak self] frame in
            self?.deliver(frame, generation: generation)
        }, onFailure: { [weak self] error in
            self?.captureFailed(error, generation: generation)
        })
        state.mode = mode
        state.lastSequence = nil
        logger.info("\(device.uniqueID): capturing \(mode)")
    }

    /// Ends the capture's generation and returns it, to be stopped outside the lock.
    private func stopCapture(_ state: inout State, keepingStreams: Bool = false) -> (any CaptureStream)? {
        defer {
            state.previousMode = state.mode
            state.capture = nil
            state.mode = nil
            state.generation += 1
        }
        if state.capture != nil { logger.info("\(device.uniqueID): capture stopped\(keepingStreams ? " for a mode change" : "")") }
        return state.capture
    }

    /// Stops a capture off the caller's thread; then the torch, which may
    /// shine only while the device runs, goes off.
    private func stop(_ capture: any CaptureStream) {
        stopQueue.async { [self] in
            capture.stop()
            guard state.withLock({ $0.capture == nil }) else { return }
            let description = device.describe()
            let off = CameraSettingsMapping.torchOff(description.controls)
            guard !off.isEmpty, let changes = try? ControlChange.resolve(off, on: description) else { return }
            do {
                try device.setControls(changes)
                onDeviceChanged()
            } catch {
                logger.warning("\(device.uniqueID): turning the torch off failed: \(error)")
            }
        }
    }
}
