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
        let node = state.variants[options.variant]
        // A variant's first stream: a node not yet made, as one with no subscription.
        let core = node?.core ?? newCore()
        guard let size = core.poolSize(adding: options.slotsHeld) else { return nil }
        if node?.pool == nil && state.currentPools.count >= Self.maxVariants {
            throw CameraError(.resourceExhausted,
                              "\(device.uniqueID) already makes \(Self.maxVariants) output variants, the most camerad allows; ask for one of them ('camctl stats \(device.uniqueID)' lists them)")
        }
        return PoolNeed(variant: options.variant, source: source, slots: size.grown,
                        deviceBuffers: state.source.deviceBuffers)
    }

    /// A variant node's core before its first pool.
    private func newCore() -> NodeCore<VariantPool> {
        NodeCore(name: device.uniqueID, budget: budget, logger: logger, pool: nil)
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

    /// The variant node a new stream of `options` joins (made for the
    /// variant's first), and the pool it joins: the node's, when it has room,
    /// else `prepared` (made for ``poolNeed(for:in:source:)``), installed as
    /// the node's pool — the streams of the one it replaces move to it, told
    /// so, and keep the old one's slots until they release them.
    func join(_ options: StreamOptions, prepared: VariantPool?, _ state: inout State) -> (VariantNode, VariantPool) {
        let node = state.variants[options.variant] ?? {
            let node = VariantNode(variant: options.variant, core: newCore())
            state.variants[options.variant] = node
            return node
        }()
        // Without one, poolNeed said the current one has room.
        guard let prepared else { return (node, node.pool!) }
        // An opening stream learns its pool from its StreamStarted.
        node.core.move(to: prepared, news: StreamNews(pool: prepared, mode: state.source.lifecycle.mode,
                                                      note: "a larger pool for a new stream of the same variant", device: nil))
        return (node, prepared)
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
            guard let result = prepared[variant], (try? result.get())?.fits(need) ?? true else {
                // A stream joined after the plan, with a larger pool made from
                // the new mode's frames (an opening stream's pool always is):
                // only the capture's buffers changed. It keeps that pool, its
                // device-format frames copied rather than shared.
                continue
            }
            let made: VariantPool
            do throws(CameraError) {
                made = try result.get()
            } catch {
                let failure = error.code == .unsupportedFormat ? CameraError(.unsupportedFormat,
                    "\(device.uniqueID) now runs \(mode), from which \(variant) cannot be made (\(error.message)); open the stream again") : error
                node.core.retirePool()
                for id in node.core.subscriptions.map(\.id) { remove(id, &state)?.outbox.post(.end(failure)) }
                continue
            }
            let note = modeChanged ? "the device now runs \(mode); you still get \(variant)"
                : "the device's capture restarted; its frames come in its new buffers"
            node.core.move(to: made, news: StreamNews(pool: made, mode: mode, note: note, device: modeChanged ? description : nil))
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
}
