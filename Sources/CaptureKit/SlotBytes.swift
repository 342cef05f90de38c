import CameraProtocol
import Synchronization

/// A frame's or a period's bytes in camerad's shared memory (or, for inline
/// delivery, in this process's memory), and their release: what a
/// ``PixelBuffer`` and a ``BlockBuffer`` read.
///
/// Valid until released — see ``SampleBuffer``. Reads are pinned:
/// ``withPinnedBytes(_:_:)`` pins the memory while its body runs, ``lock()``
/// until ``unlock()``, and once a base address has been handed out (locked or
/// not: seed code reads it without a lock, as CoreVideo tolerates), for as
/// long as this object lives. A release asked for meanwhile (``SampleBuffer/invalidate()``
/// on another thread, say) waits for the last pin to go — or, once an address
/// is out, for this object to go — so the slot is never given back, and
/// rewritten by camerad, under a reader.
final class SlotBytes: Sendable {
    private let state: Mutex<State>

    /// What keeps the bytes readable: a slot of a mapped pool, or a copy of inline data.
    private struct Lease {
        let bytes: UnsafeRawBufferPointer
        /// Where a pool's slot goes back; nil for inline frames.
        let owner: (any SlotOwner)?
        let slot: UInt32
        /// Inline frames: memory this buffer owns.
        let owned: UnsafeMutableRawBufferPointer?
        /// The pool whose mapping the bytes are in, kept mapped while they are read.
        let pool: MappedFramePool
    }

    private struct State: @unchecked Sendable {
        var lease: Lease?
        /// Readers now: the lease is not given back while any is.
        var pins = 0
        /// Released while pinned: given back at the last unpin.
        var releaseWanted = false
        /// A base address went out: the memory stays until this object goes.
        var addressOut = false
        /// Locks taken on a released buffer, which pin nothing: their unlocks unpin nothing.
        var emptyLocks = 0
    }

    /// - Parameter owner: where the slot goes back, once, when the bytes
    ///   are released and no reader pins them.
    init(_ frame: ArrivedFrame, pool: MappedFramePool, owner: any SlotOwner) {
        if frame.inlineBytes.isEmpty {
            let bytes = pool.slot(frame.slot, bytes: frame.bytesUsed) ?? UnsafeRawBufferPointer(start: nil, count: 0)
            state = Mutex(State(lease: Lease(bytes: bytes, owner: owner, slot: frame.slot, owned: nil, pool: pool)))
        } else {
            let owned = UnsafeMutableRawBufferPointer.allocate(byteCount: frame.inlineBytes.count, alignment: 64)
            owned.copyBytes(from: frame.inlineBytes)
            state = Mutex(State(lease: Lease(bytes: UnsafeRawBufferPointer(owned), owner: nil, slot: frame.slot, owned: owned, pool: pool)))
        }
    }

    deinit {
        // Nobody can read any more: pins left behind (a lock never unlocked) do not count.
        Self.giveBack(state.withLock { state in
            defer { state.lease = nil }
            return state.lease
        })
    }

    /// Gives the memory back (idempotent), at once or, while a reader pins it,
    /// at the last unpin. Base addresses are nil from now on for new readers.
    func release() {
        Self.giveBack(state.withLock { state -> Lease? in
            guard state.pins == 0, !state.addressOut else {
                state.releaseWanted = true
                return nil
            }
            defer { state.lease = nil }
            return state.lease
        })
    }

    private static func giveBack(_ lease: Lease?) {
        guard let lease else { return }
        lease.owned?.deallocate()
        lease.owner?.release(poolID: lease.pool.id, slot: lease.slot)
    }

    /// Pins the memory for a reader; nil when it was released.
    private func pin() -> UnsafeRawBufferPointer? {
        state.withLock { state in
            guard let lease = state.lease, !state.releaseWanted || state.pins > 0 else { return nil }
            state.pins += 1
            return lease.bytes
        }
    }

    private func unpin() {
        Self.giveBack(state.withLock { state -> Lease? in
            guard state.pins > 0 else { return nil }
            state.pins -= 1
            guard state.pins == 0, state.releaseWanted, !state.addressOut else { return nil }
            defer { state.lease = nil }
            return state.lease
        })
    }

    /// Whether the memory is still readable (not released, or still pinned).
    var isValid: Bool { state.withLock { $0.lease != nil && (!$0.releaseWanted || $0.pins > 0) } }

    /// The first byte; nil once released. The memory stays for as long as this
    /// object lives (a release meanwhile waits for it to go).
    func baseAddress() -> UnsafeRawPointer? {
        state.withLock { state in
            guard let lease = state.lease, !state.releaseWanted || state.pins > 0,
                  let start = lease.bytes.baseAddress else { return nil }
            // A pointer outlives any lock's bookkeeping (whose lock is it?): kept while this object is.
            state.addressOut = true
            return start
        }
    }

    /// The bytes, pinned for as long as `body` runs.
    ///
    /// - Throws: `invalidState` when they were released (`what` names the buffer).
    func withPinnedBytes<T>(_ what: String, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        guard let bytes = pin() else {
            throw CaptureError(.invalidState, "\(what) was released; copy what you keep")
        }
        defer { unpin() }
        return try body(bytes)
    }

    /// Pins until the matching ``unlock()``; locks nest. Locking released bytes pins nothing.
    func lock() {
        if pin() == nil { state.withLock { $0.emptyLocks += 1 } }
    }

    func unlock() {
        let empty = state.withLock { state -> Bool in
            guard state.emptyLocks > 0 else { return false }
            state.emptyLocks -= 1
            return true
        }
        if !empty { unpin() }
    }
}

/// Where a pool's slot goes back once its bytes are released: the stream it
/// came on (to camerad), with no closure made per frame.
protocol SlotOwner: AnyObject, Sendable {
    func release(poolID: UInt64, slot: UInt32)
}
