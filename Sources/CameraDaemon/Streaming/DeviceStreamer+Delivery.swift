import CameraIPC
import CameraMedia
import Dispatch

/// A frame's way from the capture thread to every stream that wants it, a
/// client's or a photo's.
///
/// ```
/// capture thread, per frame (lock held briefly; work grows with the variants):
///   each variant with a streaming stream:
///     the device's buffer itself, to spare, its worker idle ─► offered here, after the workers are woken
///     its worker holds < 2 frames ─► queue the frame (it holds the device's buffer)
///     else ─► queue .skipped: its conversion is behind
/// a variant's worker, one event at a time, in capture order:
///   a frame:   its streams that want it (min frame duration); none with room ─► each drops it;
///              else the device's buffer itself (its own format, two buffers left to it),
///              or a free slot and one conversion, the lock free; offer to each: send, queue, or drop
///   a skipped one: each stream that wanted it: FRAME_WAS_LATE
/// ```
///
/// So an expensive variant (a 4K rotated BGRA output) only ever costs its own
/// streams frames: the capture thread never converts (it only sends the
/// messages of a frame shared as the device made it), and a cheap variant's
/// worker never waits behind it. Each variant holds at most two device buffers.
extension DeviceStreamer {
    /// The numbers a frame carries, for a variant that skips it.
    struct FrameNumbers {
        let sequence: UInt64
        let timestampNanoseconds: Int64
        let durationNanoseconds: Int64

        init(_ frame: CapturedFrame) {
            sequence = frame.sequence
            timestampNanoseconds = frame.timestampNanoseconds
            durationNanoseconds = frame.durationNanoseconds
        }
    }

    /// Frames the device skipped just before a frame: the last of them and how many.
    typealias Gap = (count: Int, lastSequence: UInt64)

    /// One frame from the device, on its capture thread. Frames of a capture
    /// that is not the current one (being stopped, or superseded) are ignored.
    func deliver(_ frame: CapturedFrame, generation: UInt64) {
        let zoom = device.settingsState.digitalZoom
        var events: [(worker: WorkerThread, event: VariantEvent)] = []
        var sharedHere: [VariantEvent] = []
        locked { state in
            guard state.source.lifecycle.currentGeneration == generation, state.source.lifecycle.mode != nil else { return }
            // What clients gave back through their rings since the last frame: room for this one.
            readReleases(&state)
            state.source.framesCaptured += 1
            var gap: Gap?
            if let last = state.source.lastSequence, frame.sequence > last + 1 {
                gap = (Int(frame.sequence - last - 1), frame.sequence - 1)
            }
            state.source.lastSequence = frame.sequence
            for (variant, node) in state.variants {
                // The streams streaming now, oldest first: one that starts later never hears of this frame.
                guard let pool = node.pool, case let streams = node.core.subscriptions.filter(\.lifecycle.receivesFrames),
                      !streams.isEmpty else { continue }
                if sharesHere(frame, node, pool, streams, zoom: zoom) {
                    sharedHere.append(VariantEvent(variant: variant, generation: generation, streams: streams, gap: gap,
                                                   numbers: FrameNumbers(frame), frame: frame))
                    continue
                }
                guard let thread = self.worker(of: node) else {
                    for stream in streams {
                        if let gap { stream.drops.add(.discontinuity, count: gap.count, sequence: gap.lastSequence) }
                        guard wants(stream, FrameNumbers(frame)) else { continue }
                        stream.lastOffered = frame.timestampNanoseconds
                        stream.drops.add(.outOfBuffers, count: 1, sequence: frame.sequence)
                    }
                    continue
                }
                let take = node.framesHeld < VariantNode.depth
                node.pending += 1
                if take { node.framesHeld += 1 } else { pool.framesSkipped += 1 }
                events.append((thread, VariantEvent(variant: variant, generation: generation, streams: streams, gap: gap,
                                                    numbers: FrameNumbers(frame), frame: take ? frame : nil)))
            }
        }
        // The cheapest first: a costly conversion woken first would take the free core.
        events.sort { $0.event.variant.cost < $1.event.variant.cost }
        for (worker, event) in events {
            worker.async { [self] in handle(event) }
        }
        // The workers woken first: their conversions start on the other core meanwhile.
        for event in sharedHere { convert(event.frame!, event) }
    }

    /// Whether a variant's frame is offered right here, on the capture thread,
    /// with no worker: it is the device's buffer itself (no conversion, the
    /// device has buffers to spare), its worker has nothing left to do (frames
    /// stay in order), and no stream wants its bytes copied into messages. All
    /// that costs is a message to each stream, never a wait: one thread wake
    /// less per frame.
    private func sharesHere(
        _ frame: CapturedFrame, _ node: VariantNode, _ pool: VariantPool, _ streams: [Subscription], zoom: Double
    ) -> Bool {
        guard let buffer = frame.buffer, buffer.buffers === pool.deviceBuffers, pool.converter.passesThrough(zoom: zoom),
              buffer.buffers.leases.available >= VariantPool.reserveBuffers, node.pending == 0 else { return false }
        return streams.allSatisfy { !$0.policy.copies }
    }

    /// A frame as one variant's worker gets it.
    struct VariantEvent: Sendable {
        let variant: FrameVariant
        let generation: UInt64
        /// The variant's streams that were streaming when the frame came, oldest
        /// first; one closed since no longer ``StreamLifecycle/receivesFrames``.
        let streams: [Subscription]
        /// Frames the device skipped just before this one.
        let gap: Gap?
        let numbers: FrameNumbers
        /// The frame to convert; nil when the worker was converting another.
        let frame: CapturedFrame?
    }

    /// The worker of a variant, made on its first frame; nil when no thread
    /// can be made (the process is out of threads or descriptors).
    private func worker(of node: VariantNode) -> WorkerThread? {
        if let thread = node.thread { return thread }
        do {
            let thread = try WorkerThread(name: "camerad-variant")
            node.thread = thread
            return thread
        } catch {
            logger.error("\(device.uniqueID): no worker for \(node.variant): \(error); its streams lose this frame")
            return nil
        }
    }

    /// One event on a variant's worker, in capture order.
    private func handle(_ event: VariantEvent) {
        if let frame = event.frame {
            convert(frame, event)
        } else {
            skip(event)
        }
        locked { state in
            // Still there: a node is forgotten only once no event waits on its worker.
            guard let node = state.variants[event.variant] else { return }
            if event.frame != nil { node.framesHeld -= 1 }
            node.pending -= 1
            if node.pending == 0 { dropUnusedPools(&state) }
        }
    }

    /// A variant's frame, on its worker: shared in the device's buffer when it
    /// is the device's own and the device can spare the buffer, else converted
    /// (or copied) once into a free slot; then offered to each of its streams
    /// that wants it.
    private func convert(_ frame: CapturedFrame, _ event: VariantEvent) {
        let zoom = device.settingsState.digitalZoom
        let target = locked { state -> (node: VariantNode, pool: VariantPool, slot: Int, shared: Bool, streams: [Subscription])? in
            guard let node = currentNode(of: event.variant, generation: event.generation, &state), let pool = node.pool else { return nil }
            record(event)
            // No conversion for streams that would only drop it: a stream that
            // holds all it may costs no one time, not even its own worker.
            guard let wanting = node.core.wanting(event.streams, sequence: frame.sequence, timestampNanoseconds: frame.timestampNanoseconds,
                                                  durationNanoseconds: frame.durationNanoseconds) else { return nil }
            if let buffer = frame.buffer, buffer.buffers === pool.deviceBuffers, pool.converter.passesThrough(zoom: zoom),
               buffer.buffers.leases.available >= VariantPool.reserveBuffers {
                return (node, pool, buffer.index, true, wanting)
            }
            guard let (pool, slot) = node.core.slot(for: wanting, sequence: frame.sequence) else { return nil }
            return (node, pool, slot, false, wanting)
        }
        guard let (node, pool, slot, shared, streams) = target else { return }

        // Converted with the lock free: releases and other variants go on meanwhile.
        var written: Int?
        if shared {
            written = frame.bytes.count
        } else {
            do {
                written = try pool.converter.convert(frame.bytes, into: pool.slot(slot), zoom: zoom)
            } catch {
                logger.error("\(device.uniqueID): converting to \(pool.variant) failed: \(error)")
            }
        }

        locked { state in
            if !shared { pool.writing = nil }
            guard let written, node.core.pool(pool.id) === pool else {
                // Lost to a failed conversion or a pool replaced meanwhile: still told.
                node.core.offer(nil, sequence: frame.sequence, to: streams)
                return
            }
            if shared {
                // Kept from the device while a stream holds it.
                pool.loans[slot] = frame.buffer!.buffers.loan(slot)
                pool.framesShared += 1
            } else {
                pool.conversions += 1
                if pool.converter.passesThrough(zoom: zoom) { pool.framesCopied += 1 }
            }
            pool.bytesUsed[slot] = written
            // A stream moved to a larger pool while this frame was converted loses it (a discontinuity).
            node.core.offer(PooledFrame(pool: pool, slot: slot, sequence: frame.sequence, timestampNanoseconds: frame.timestampNanoseconds,
                                        durationNanoseconds: frame.durationNanoseconds, bytesUsed: written),
                            sequence: frame.sequence, to: streams)
            // Nobody kept it (copies taken, or every stream gone): back to the device.
            if shared && pool.references[slot] == 0 { pool.loans[slot] = nil }
        }
    }

    /// A frame that came while the variant's worker held as many as it may:
    /// late for each of the streams that wanted it.
    private func skip(_ event: VariantEvent) {
        locked { state in
            guard currentNode(of: event.variant, generation: event.generation, &state) != nil else { return }
            record(event)
            for stream in event.streams where stream.lifecycle.receivesFrames && wants(stream, event.numbers) {
                stream.lastOffered = event.numbers.timestampNanoseconds
                stream.drops.add(.frameWasLate, count: 1, sequence: event.numbers.sequence)
            }
        }
    }

    /// The variant's node, if this generation's frames still go to its pool:
    /// after a mode change, frames of the old capture are not converted with the new pools.
    private func currentNode(of variant: FrameVariant, generation: UInt64, _ state: inout State) -> VariantNode? {
        guard state.source.lifecycle.currentGeneration == generation, let mode = state.source.lifecycle.mode,
              let node = state.variants[variant], node.pool?.source == mode.layout else { return nil }
        return node
    }

    /// Frames the device skipped before the event's frame, for each of its
    /// streams (under the lock, as everything a ``Stream`` holds).
    private func record(_ event: VariantEvent) {
        guard let gap = event.gap else { return }
        for stream in event.streams where stream.lifecycle.receivesFrames {
            stream.drops.add(.discontinuity, count: gap.count, sequence: gap.lastSequence)
        }
    }

    /// Whether a subscription takes this frame (its minimum frame duration).
    private func wants(_ stream: Subscription, _ frame: FrameNumbers) -> Bool {
        stream.wants(timestampNanoseconds: frame.timestampNanoseconds, durationNanoseconds: frame.durationNanoseconds)
    }
}

extension FrameVariant {
    /// A rough cost of making a frame of it: bytes written, twice over when
    /// turned or mirrored (an extra pass). Orders the wake-ups, cheapest first.
    var cost: Int { layout.capacity * (rotation == .none && !mirrored ? 1 : 2) }
}
