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
    /// The frame's bytes and their release.
    let memory: SlotBytes

    init(_ frame: ArrivedFrame, pool: StreamPool, memory: SlotBytes) {
        width = pool.width
        height = pool.height
        pixelFormatType = pool.pixelFormatType
        dataSize = frame.bytesUsed
        planes = frame.planes ?? pool.planes
        self.memory = memory
    }

    /// Gives the memory back (idempotent), at once or, while a reader pins it,
    /// at the last unpin. Its base addresses are nil from now on for new readers.
    func release() { memory.release() }

    /// Whether the memory is still readable (not released, or still pinned).
    var isValid: Bool { memory.isValid }

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
        guard let start = memory.baseAddress() else { return nil }
        guard planes.indices.contains(plane) else { return plane == 0 ? start : nil }
        return start + Int(planes[plane].offset)
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
        try memory.withPinnedBytes("the pixel buffer", body)
    }

    /// CVPixelBufferLockBaseAddress: pins the memory until the matching
    /// ``unlockBaseAddress()``; a release meanwhile waits for it. Locks nest.
    /// Locking a released buffer does nothing (its base addresses stay nil).
    public func lockBaseAddress() { memory.lock() }

    /// CVPixelBufferUnlockBaseAddress: ends a ``lockBaseAddress()``.
    public func unlockBaseAddress() { memory.unlock() }

    public var description: String { "\(PixelFormats.name(pixelFormatType)) \(width)x\(height)" }
}
