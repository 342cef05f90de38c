import CameraProtocol
import Foundation
import Synchronization

/// CVPixelBuffer: a frame's pixels, plane by plane, in camerad's shared memory
/// (or, for inline delivery, in this process's memory).
///
/// Valid until released — see ``SampleBuffer``. After that every base address
/// is nil. Reads are pinned: ``withUnsafeBytes(_:)`` pins the memory while its
/// body runs, ``lockBaseAddress()`` until ``unlockBaseAddress()``, and once a
/// base address has been handed out (locked or not: seed code reads it without
/// a lock, as CoreVideo tolerates), for as long as this object lives. A release
/// asked for meanwhile (``SampleBuffer/invalidate()`` on another thread, say)
/// waits for the last pin to go — or, once an address is out, for this object
/// to go — so the slot is never given back, and rewritten by camerad, under a
/// reader.
public final class PixelBuffer: @unchecked Sendable, CustomStringConvertible {
    public let width: Int
    public let height: Int
    /// A CoreVideo code: ``kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange`` and so on.
    public let pixelFormatType: OSType
    /// Bytes of the frame (for MJPEG, the JPEG's size).
    public let dataSize: Int

    private let planes: [Camerad_V1_PlaneInfo]
    private let state: Mutex<State>

    /// What keeps the bytes readable: a slot of a mapped pool, or a copy of inline data.
    private struct Lease {
        let bytes: UnsafeRawBufferPointer
        /// Gives a pool's slot back to camerad; nil for inline frames.
        let giveBack: (@Sendable () -> Void)?
        /// Inline frames: memory this buffer owns.
        let owned: UnsafeMutableRawBufferPointer?
        /// The pool whose mapping the bytes are in, kept mapped while they are read.
        let pool: MappedFramePool
    }

    private struct State {
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

    /// - Parameter giveBack: hands the frame's slot back to camerad, called once
    ///   when the buffer is released and no reader pins it.
    init(_ frame: Camerad_V1_FrameReady, pool: MappedFramePool, giveBack: @escaping @Sendable () -> Void) {
        let description = pool === MappedFramePool.inline ? nil : pool.description
        width = Int(description?.width ?? 0)
        height = Int(description?.height ?? 0)
        pixelFormatType = PixelFormats.type(fourcc: description?.fourcc ?? 0, fullRange: description?.fullRange ?? false)
        dataSize = Int(frame.bytesUsed)
        planes = frame.planes
        if frame.data.isEmpty {
            let bytes = pool.slot(frame.slot, bytes: Int(frame.bytesUsed)) ?? UnsafeRawBufferPointer(start: nil, count: 0)
            state = Mutex(State(lease: Lease(bytes: bytes, giveBack: giveBack, owned: nil, pool: pool)))
        } else {
            let owned = UnsafeMutableRawBufferPointer.allocate(byteCount: frame.data.count, alignment: 64)
            owned.copyBytes(from: frame.data)
            state = Mutex(State(lease: Lease(bytes: UnsafeRawBufferPointer(owned), giveBack: nil, owned: owned, pool: pool)))
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
    /// at the last unpin. Its base addresses are nil from now on for new readers.
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
        lease?.owned?.deallocate()
        lease?.giveBack?()
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

    public var planeCount: Int { planes.count > 1 ? planes.count : 0 }
    public var isPlanar: Bool { planes.count > 1 }

    /// The first byte of the frame (of plane 0); nil once released.
    public var baseAddress: UnsafeRawPointer? { baseAddress(ofPlane: 0) }
    public var bytesPerRow: Int { bytesPerRow(ofPlane: 0) }

    /// CVPixelBufferGetBaseAddressOfPlane; nil once released. The memory stays
    /// for as long as this object lives (a release meanwhile waits for it to
    /// go), so keep the buffer while you read; lock it first (CoreVideo's rule)
    /// to be told of a release by a nil address.
    public func baseAddress(ofPlane plane: Int) -> UnsafeRawPointer? {
        state.withLock { state in
            guard let lease = state.lease, !state.releaseWanted || state.pins > 0,
                  let start = lease.bytes.baseAddress else { return nil }
            // A pointer outlives any lock's bookkeeping (whose lock is it?): kept while this object is.
            state.addressOut = true
            guard planes.indices.contains(plane) else { return plane == 0 ? start : nil }
            return start + Int(planes[plane].offset)
        }
    }

    public func bytesPerRow(ofPlane plane: Int) -> Int {
        planes.indices.contains(plane) ? Int(planes[plane].bytesPerRow) : 0
    }

    public func height(ofPlane plane: Int) -> Int {
        planes.indices.contains(plane) ? Int(planes[plane].height) : 0
    }

    /// CVPixelBufferGetWidthOfPlane: in samples (chroma planes are narrower).
    public func width(ofPlane plane: Int) -> Int {
        guard planes.indices.contains(plane) else { return 0 }
        switch (pixelFormatType, plane) {
        case (kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, 1): return (width + 1) / 2
        case (kCVPixelFormatType_420YpCbCr8Planar, 1), (kCVPixelFormatType_420YpCbCr8Planar, 2): return (width + 1) / 2
        default: return width
        }
    }

    /// The whole frame's bytes, pinned for as long as `body` runs: a release
    /// meanwhile waits for it.
    ///
    /// - Throws: `invalidState` when the buffer was released.
    public func withUnsafeBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        guard let bytes = pin() else {
            throw CaptureError(.invalidState, "the pixel buffer was released; copy frames you keep")
        }
        defer { unpin() }
        return try body(bytes)
    }

    /// CVPixelBufferLockBaseAddress: pins the memory until the matching
    /// ``unlockBaseAddress()``; a release meanwhile waits for it. Locks nest.
    /// Locking a released buffer does nothing (its base addresses stay nil).
    public func lockBaseAddress() {
        if pin() == nil { state.withLock { $0.emptyLocks += 1 } }
    }

    /// CVPixelBufferUnlockBaseAddress: ends a ``lockBaseAddress()``.
    public func unlockBaseAddress() {
        let empty = state.withLock { state -> Bool in
            guard state.emptyLocks > 0 else { return false }
            state.emptyLocks -= 1
            return true
        }
        if !empty { unpin() }
    }

    public var description: String { "\(PixelFormats.name(pixelFormatType)) \(width)x\(height)" }
}
