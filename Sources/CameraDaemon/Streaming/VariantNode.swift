import CameraMedia

/// A variant node of a camera's graph: one output variant of its frames, a
/// node like any other (its ``NodeCore``: the pool its frames are made into
/// now — one conversion per frame, shared by every stream of the variant —
/// the pools it replaced that streams still hold frames of, its streams'
/// subscriptions), with its worker, the thread that converts (made on its
/// first frame). A class in its ``DeviceStreamer``'s state, so that the
/// capture thread counts a frame given to its worker without writing the
/// state's dictionary (or copying it, while iterating it). Unchecked
/// Sendable: its `var`s are read and written only under its streamer's lock.
///
/// A node lives while anything needs it: a stream of its variant, a frame
/// held in one of its pools, or an event its worker has yet to finish.
final class VariantNode: @unchecked Sendable {
    let variant: FrameVariant
    /// Its pool (nil once no stream wants the variant), the pools it replaced, its streams.
    var core: NodeCore<VariantPool>
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

    init(variant: FrameVariant, core: NodeCore<VariantPool>) {
        self.variant = variant
        self.core = core
    }

    /// Where its frames are made now.
    var pool: VariantPool? { core.pool }

    /// Lets go of pools no stream uses and no frame is held in. Returns whether
    /// the node is needed no more: no pool, and no event left on its worker.
    func dropUnusedPools() -> Bool {
        core.dropRetiredPools()
        if let pool = core.pool, core.subscriptions.isEmpty, pool.slotsInUse == 0 { core.pool = nil }
        return core.pool == nil && core.retired.isEmpty && pending == 0
    }
}
