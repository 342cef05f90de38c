import CameraMedia

/// A variant's frame pool: found or made as streams join, grown for them, made
/// anew when the device's mode changes, forgotten when nobody uses it.
extension DeviceStreamer {
    /// The pool a new stream of `options` joins: the variant's, grown if it
    /// lacks room for the newcomer's allowance, or a new one.
    func pool(
        for options: StreamOptions, joining streamID: UInt64, in state: inout State, source: FrameLayout
    ) throws -> VariantPool {
        let current = state.currentPool[options.variant].flatMap { state.pools[$0] }
        let others = current.map { pool in pool.streamIDs.compactMap { state.streams[$0]?.options.slotsHeld } } ?? []
        let needed = Self.spareSlots + options.slotsHeld + others.reduce(0, +)
        if let current, current.ownSlots >= needed {
            current.streamIDs.insert(streamID)
            return current
        }
        if current == nil && state.currentPool.count >= Self.maxVariants {
            throw CameraError(.resourceExhausted,
                              "\(device.uniqueID) already makes \(Self.maxVariants) output variants, the most camerad allows; ask for one of them ('camctl stats \(device.uniqueID)' lists them)")
        }
        // Growing doubles, so that a crowd joining one by one moves pools a few times, not once each.
        let slots = max(needed, 2 * (current?.ownSlots ?? 0))
        let pool: VariantPool
        do {
            pool = try VariantPool(id: Self.nextPoolID.wrappingAdd(1, ordering: .relaxed).oldValue, source: source,
                                   variant: options.variant, ownSlots: slots, deviceBuffers: state.deviceBuffers, budget: budget)
        } catch let error as CameraError {
            throw error
        } catch let error as ConversionError {
            throw CameraError(.unsupportedFormat, "\(options.variant): \(error.message)")
        } catch {
            throw CameraError(.resourceExhausted, "cannot make a frame pool for \(options.variant): \(error)")
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
                // An opening stream learns its pool from its StreamStarted.
                if let stream = state.streams[id], stream.lifecycle.receivesFrames {
                    tell(id, StreamNews(pool: pool, mode: state.lifecycle.mode,
                                        note: "a larger pool for a new stream of the same variant", device: nil), &state)
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
    func dropUnusedPools(_ state: inout State) {
        for (id, pool) in state.pools where pool.streamIDs.isEmpty && pool.slotsInUse == 0 {
            state.pools[id] = nil
            if state.currentPool[pool.variant] == id { state.currentPool[pool.variant] = nil }
        }
        forgetIdleWorkers(&state)
    }

    /// Gives every variant whose pool was made from another mode's frames, or
    /// from another capture's buffers it shares, a new pool, moves its streams
    /// there and tells those streaming. The device is described for them only
    /// when the mode changed, not on every start.
    func rebuildPools(_ state: inout State) {
        guard let mode = state.lifecycle.mode else { return }
        var description: DeviceDescription?
        for (variant, poolID) in state.currentPool {
            guard let old = state.pools[poolID] else { continue }
            let modeChanged = old.source != mode.layout
            let buffersChanged = old.converter.passesThrough()
                && old.deviceBuffers !== VariantPool.shareable(state.deviceBuffers, for: old.layout)
            guard modeChanged || buffersChanged else { continue }
            if modeChanged && description == nil {
                description = device.describe()
                description!.activeMode = mode
            }
            let ids = old.streamIDs
            old.streamIDs = []
            state.currentPool[variant] = nil
            let pool: VariantPool
            do {
                pool = try VariantPool(id: Self.nextPoolID.wrappingAdd(1, ordering: .relaxed).oldValue, source: mode.layout,
                                       variant: variant, ownSlots: old.ownSlots, deviceBuffers: state.deviceBuffers, budget: budget)
            } catch {
                let failure = error as? CameraError ?? CameraError(.unsupportedFormat,
                    "\(device.uniqueID) now runs \(mode), from which \(variant) cannot be made: \((error as? ConversionError)?.message ?? "\(error)"); open the stream again")
                for id in ids { remove(id, &state)?.outbox.post(.end(failure)) }
                continue
            }
            state.pools[pool.id] = pool
            state.currentPool[variant] = pool.id
            pool.streamIDs = ids
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

    /// Tells a streaming stream its frames come from another pool (FormatChanged).
    /// A client that stopped reading its frame ring has no room for the news:
    /// its stream ends.
    private func tell(_ id: UInt64, _ news: StreamNews, _ state: inout State) {
        guard let stream = state.streams[id], !stream.outbox.post(.formatChanged(news)) else { return }
        remove(id, &state)?.outbox.post(.end(CameraError(.resourceExhausted,
            "stream \(id)'s frame ring is full: its client stopped reading it; read the ring each time its signal fires")))
    }
}
