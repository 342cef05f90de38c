/// A frame as a sink holds it: the frame in its pool's slot, and the way to
/// give it back, by itself (libcamera's FrameBuffer, PipeWire's pw_buffer) —
/// no stream id or streamer in the sink's hands. A copy (a copying
/// subscription's) holds no slot: releasing it does nothing.
struct FrameHandle: Sendable {
    let frame: PooledFrame
    let subscription: Subscription

    /// The same frame, its bytes copied out of the slot (under the streamer's lock).
    func copied() -> FrameHandle {
        FrameHandle(frame: PooledFrame(copying: frame), subscription: subscription)
    }

    /// Gives the slot back to the pool; queued frames move up.
    ///
    /// - Throws: `INVALID_ARGUMENT` when it was given back already.
    func release() throws {
        guard frame.copied == nil else { return }
        try subscription.node?.release(subscription.id, poolID: frame.pool.id, slots: [frame.slot])
    }
}
