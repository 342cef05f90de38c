import CameraMedia

/// A variant's frame pool: found or made as streams join, grown for them, made
/// anew when the device's mode changes, forgotten when nobody uses it.
extension DeviceStreamer {
    /// What a variant's new pool must be: made with the lock let go (a memfd
    /// and its mapping), installed under it if it still fits.
    struct PoolNeed {
        let variant: FrameVariant
        /// The device's frames it is made from.
        let source: FrameLayout
        /// Slots of its own, at least.
        let slots: Int
        /// The capture's buffers, shared when the variant is the device's own frames.
        let deviceBuffers: DeviceBuffers?
    }

    /// The pool a stream of `options` would need made, or nil when the
    /// variant's current pool has room for it.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when the device makes as many variants as it may.
    func poolNeed(for options: StreamOptions, in state: State, source: FrameLayout) throws -> PoolNeed? {
        let current = state.variants[options.variant]?.pool
        let others = current.map { pool in pool.subscriptionIDs.compactMap { state.streams[$0]?.policy.slotsHeld } } ?? []
        let needed = MediaPool.spareSlots + options.slotsHeld + others.reduce(0, +)
        if let current, current.ownSlots >= needed { return nil }
        if current == nil && state.currentPools.count >= Self.maxVariants {
            throw CameraError(.resourceExhausted,
                              "\(device.uniqueID) already makes \(Self.maxVariants) output variants, the most camerad allows; ask for one of them ('camctl stats \(device.uniqueID)' lists them)")
        }
        // Growing doubles, so that a crowd joining one by one moves pools a few times, not once each.
        return PoolNeed(variant: options.variant, source: source, slots: max(needed, 2 * (current?.ownSlots ?? 0)),
                        deviceBuffers: state.source.deviceBuffers)
    }

    /// Makes a pool for `need` — with the streamer's lock let go.
    ///
    /// - Throws: UNSUPPORTED_FORMAT when the device's frames cannot be made into
    ///   the variant; RESOURCE_EXHAUSTED past the pools' memory or descriptors.
    func makePool(_ need: PoolNeed) throws(CameraError) -> VariantPool {
        do {
            return try VariantPool(id: MediaPool.nextID(), source: need.source,
                                   variant: need.variant, ownSlots: need.slots, deviceBuffers: need.deviceBuffers, budget: budget)
        } catch let error as CameraError {
            throw error
        } catch let error as ConversionError {
            throw CameraError(.unsupportedFormat, "\(need.variant): \(error.message)")
        } catch {
            throw CameraError(.resourceExhausted, "cannot make a frame pool for \(need.variant): \(error)")
        }
    }

    /// The pool a new stream of `options` joins: the variant's, when it has
    /// room, else `prepared` (made for ``poolNeed(for:in:source:)``), installed
    /// as the variant's current pool; the streams of the one it replaces move to it.
    func pool(
        for options: StreamOptions, joining streamID: UInt64, in state: inout State, prepared: VariantPool?
    ) -> VariantPool {
        let current = state.variants[options.variant]?.pool
        guard let pool = prepared else {
            // poolNeed said the current one has room.
            current!.subscriptionIDs.insert(streamID)
            return current!
        }
        state.node(for: options.variant).replacePool(with: pool)
        pool.subscriptionIDs = [streamID]
        if let current {
            // Too small for the newcomer: its streams move to the new pool and
            // keep the old one's slots until they release them.
            for id in current.subscriptionIDs {
                state.streams[id]?.poolID = pool.id
                pool.subscriptionIDs.insert(id)
                // An opening stream learns its pool from its StreamStarted.
                if let stream = state.streams[id], stream.lifecycle.receivesFrames {
                    tell(id, StreamNews(pool: pool, mode: state.source.lifecycle.mode,
                                        note: "a larger pool for a new stream of the same variant", device: nil), &state)
                }
            }
            current.subscriptionIDs = []
            dropUnusedPools(&state)
        }
        return pool
    }

    /// Forgets pools no stream uses and no client holds, and variant nodes
    /// nothing needs any more (their workers end once their events are done).
    func dropUnusedPools(_ state: inout State) {
        for (variant, node) in state.variants where node.dropUnusedPools() {
            node.thread?.finish()
            state.variants[variant] = nil
        }
    }

    /// Gives every variant whose pool was made from another mode's frames, or
    /// from another capture's buffers it shares, a new pool, moves its streams
    /// there and tells those streaming. The device is described for them only
    /// when the mode changed, not on every start.
    ///
    /// The pools are made beforehand, the lock let go (``poolsToRebuild(_:buffers:)``
    /// and ``makePool(_:)``): none is made under the lock.
    func rebuildPools(_ state: inout State, prepared: [FrameVariant: Result<VariantPool, CameraError>]) {
        guard let mode = state.source.lifecycle.mode else { return }
        var description: DeviceDescription?
        for (variant, node) in state.variants {
            guard let old = node.pool else { continue }
            let modeChanged = old.source != mode.layout
            let buffersChanged = old.converter.passesThrough()
                && old.deviceBuffers !== VariantPool.shareable(state.source.deviceBuffers, for: old.layout)
            guard modeChanged || buffersChanged else { continue }
            if modeChanged && description == nil {
                description = device.describe()
                description!.activeMode = mode
            }
            let need = PoolNeed(variant: variant, source: mode.layout, slots: old.ownSlots, deviceBuffers: state.source.deviceBuffers)
            guard let made = prepared[variant], (try? made.get())?.fits(need) ?? true else {
                // A stream joined after the plan, with a larger pool made from
                // the new mode's frames (an opening stream's pool always is):
                // only the capture's buffers changed. It keeps that pool, its
                // device-format frames copied rather than shared.
                continue
            }
            let ids = old.subscriptionIDs
            old.subscriptionIDs = []
            node.replacePool(with: nil)
            let pool: VariantPool
            do throws(CameraError) {
                pool = try made.get()
            } catch {
                let failure = error.code == .unsupportedFormat ? CameraError(.unsupportedFormat,
                    "\(device.uniqueID) now runs \(mode), from which \(variant) cannot be made (\(error.message)); open the stream again") : error
                for id in ids { remove(id, &state)?.outbox.post(.end(failure)) }
                continue
            }
            node.pool = pool
            pool.subscriptionIDs = ids
            for id in ids {
                guard let stream = state.streams[id] else { continue }
                state.streams[id]!.poolID = pool.id
                guard stream.lifecycle.receivesFrames else { continue }
                let note = modeChanged ? "the device now runs \(mode); you still get \(variant)"
                    : "the device's capture restarted; its frames come in its new buffers"
                tell(id, StreamNews(pool: pool, mode: mode, note: note, device: modeChanged ? description : nil), &state)
            }
        }
        dropUnusedPools(&state)
    }

    /// The pools a capture starting in `mode` with `buffers` will need for the
    /// variants made now (read under the lock, to be made with it let go).
    func poolsToRebuild(_ mode: CaptureMode, buffers: DeviceBuffers?) -> [PoolNeed] {
        locked { state in
            state.currentPools.map { PoolNeed(variant: $0.variant, source: mode.layout, slots: $0.ownSlots, deviceBuffers: buffers) }
        }
    }

    /// Tells a streaming stream its frames come from another pool (FormatChanged).
    private func tell(_ id: UInt64, _ news: StreamNews, _ state: inout State) {
        state.streams[id]?.outbox.post(.formatChanged(news))
    }
}
