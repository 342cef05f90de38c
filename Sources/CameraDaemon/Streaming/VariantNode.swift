import CameraMedia

/// A variant node of a camera's graph: one output variant of its frames —
/// the pool its frames are made into now (one conversion per frame, shared by
/// every stream of the variant), the pools it replaced that streams still hold
/// frames of, and its worker, the thread that converts (made on its first frame).
/// A class in its ``DeviceStreamer``'s state, so that the capture thread
/// counts a frame given to its worker without writing the state's dictionary
/// (or copying it, while iterating it). Unchecked Sendable: its `var`s are
/// read and written only under its streamer's lock.
///
/// A node lives while anything needs it: a stream of its variant, a frame
/// held in one of its pools, or an event its worker has yet to finish.
final class VariantNode: @unchecked Sendable {
    let variant: FrameVariant
    /// Where its frames are made now; nil once no stream wants the variant.
    var pool: VariantPool?
    /// Pools it replaced (a larger one made for a new stream, or one made from
    /// the device's new mode) whose slots streams still hold: valid until given back.
    var retired: [VariantPool] = []
    /// Its worker, from its first frame until the node is forgotten.
    var thread: WorkerThread?
    /// Frames given to the worker and not yet converted: while it holds
    /// ``depth``, the next ones are skipped.
    var framesHeld = 0
    /// Events queued on the worker and not yet done.
    var pending = 0

    /// Frames a worker holds at most: one converting, the next waiting. So a
    /// conversion that sometimes takes longer than a frame loses nothing as
    /// long as it keeps up on average, and adds at most a frame of latency.
    static let depth = 2

    init(variant: FrameVariant) {
        self.variant = variant
    }

    /// Its pool with this id, current or retired.
    func pool(_ id: UInt64) -> VariantPool? {
        pool?.id == id ? pool : retired.first { $0.id == id }
    }

    /// Replaces its current pool; the old one is kept while streams hold its slots.
    func replacePool(with new: VariantPool?) {
        if let old = pool, old !== new { retired.append(old) }
        pool = new
    }

    /// Lets go of pools no stream uses and no frame is held in. Returns whether
    /// the node is needed no more: no pool, and no event left on its worker.
    func dropUnusedPools() -> Bool {
        retired.removeAll { $0.subscriptionIDs.isEmpty && $0.slotsInUse == 0 }
        if let pool, pool.subscriptionIDs.isEmpty, pool.slotsInUse == 0 { self.pool = nil }
        return pool == nil && retired.isEmpty && pending == 0
    }
}
