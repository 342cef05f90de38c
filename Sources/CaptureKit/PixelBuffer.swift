import CameraProtocol
import Foundation
import Synchronization

/// CVPixelBuffer: a frame's pixels, plane by plane, in camerad's shared memory
/// (or, for inline delivery, in this process's memory).
///
/// Valid until released — see ``SampleBuffer``. After that every base address
/// is nil.
public final class PixelBuffer: @unchecked Sendable, CustomStringConvertible {
    public let width: Int
    public let height: Int
    /// A CoreVideo code: ``kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange`` and so on.
    public let pixelFormatType: OSType
    /// Bytes of the frame (for MJPEG, the JPEG's size).
    public let dataSize: Int

    private let planes: [Camerad_V1_PlaneInfo]
    private let lease: Mutex<Lease?>

    /// What keeps the bytes readable: a slot of a mapped pool, or a copy of inline data.
    private struct Lease {
        let bytes: UnsafeRawBufferPointer
        let pool: MappedPool
        let stream: FrameStream?
        let slot: UInt32
        /// Inline frames: memory this buffer owns.
        let owned: UnsafeMutableRawBufferPointer?
    }

    init(_ frame: Camerad_V1_FrameReady, pool: MappedPool, stream: FrameStream) {
        let description = pool === MappedPool.inline ? nil : pool.description
        width = Int(description?.width ?? 0)
        height = Int(description?.height ?? 0)
        pixelFormatType = PixelFormats.type(fourcc: description?.fourcc ?? 0)
        dataSize = Int(frame.bytesUsed)
        planes = frame.planes
        if frame.data.isEmpty {
            let bytes = pool.slot(frame.slot, bytes: Int(frame.bytesUsed)) ?? UnsafeRawBufferPointer(start: nil, count: 0)
            lease = Mutex(Lease(bytes: bytes, pool: pool, stream: stream, slot: frame.slot, owned: nil))
        } else {
            let owned = UnsafeMutableRawBufferPointer.allocate(byteCount: frame.data.count, alignment: 64)
            owned.copyBytes(from: frame.data)
            lease = Mutex(Lease(bytes: UnsafeRawBufferPointer(owned), pool: pool, stream: nil, slot: 0, owned: owned))
        }
    }

    deinit { release() }

    /// Gives the memory back (idempotent).
    func release() {
        let released = lease.withLock { lease -> Lease? in
            defer { lease = nil }
            return lease
        }
        released?.owned?.deallocate()
        if let released, let stream = released.stream {
            stream.release(poolID: released.pool.id, slot: released.slot)
        }
    }

    var isValid: Bool { lease.withLock { $0 != nil } }

    public var planeCount: Int { planes.count > 1 ? planes.count : 0 }
    public var isPlanar: Bool { planes.count > 1 }

    /// The first byte of the frame (of plane 0); nil once released.
    public var baseAddress: UnsafeRawPointer? { baseAddress(ofPlane: 0) }
    public var bytesPerRow: Int { bytesPerRow(ofPlane: 0) }

    /// CVPixelBufferGetBaseAddressOfPlane.
    public func baseAddress(ofPlane plane: Int) -> UnsafeRawPointer? {
        lease.withLock { lease in
            guard let lease, let start = lease.bytes.baseAddress else { return nil }
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

    /// The whole frame's bytes, for as long as `body` runs.
    ///
    /// - Throws: `invalidState` when the buffer was released.
    public func withUnsafeBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        // Holding the lock keeps a concurrent release from giving the slot back mid-read.
        let bytes = lease.withLock { $0?.bytes }
        guard let bytes else { throw CaptureError(.invalidState, "the pixel buffer was released; copy frames you keep") }
        return try withExtendedLifetime(self) { try body(bytes) }
    }

    /// CVPixelBufferLockBaseAddress: the memory is always mapped, so there is
    /// nothing to do; kept so AVFoundation code reads the same.
    public func lockBaseAddress() {}
    public func unlockBaseAddress() {}

    public var description: String { "\(PixelFormats.name(pixelFormatType)) \(width)x\(height)" }
}
