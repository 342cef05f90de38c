import Glibc
internal import CCameraShims

/// A memfd mapped into this process: memory another process can map too, by
/// receiving the descriptor — read-only.
///
/// The creator seals the file's size (`F_SEAL_SHRINK | F_SEAL_GROW`), so a process
/// that maps it can never be hit by SIGBUS from the file shrinking under it, and,
/// once its own writable mapping is made, its contents (`F_SEAL_FUTURE_WRITE`): no
/// other mapping can be writable, none made writable later by `mprotect`, and
/// `write(2)` fails, so whoever receives the descriptor can only read.
///
/// A dma-buf received (a device's buffer, exported read-only) maps the same way:
/// its size never changes, so it cannot fault either.
public final class SharedMemory: @unchecked Sendable {
    public let descriptor: OwnedFD
    public let size: Int
    public let baseAddress: UnsafeMutableRawPointer

    /// Creates a memfd of `size` bytes, maps it read-write here, and seals its
    /// size and — unless `othersMayWrite` — any writing but through this mapping.
    ///
    /// The call is `memfd_create(MFD_CLOEXEC | MFD_ALLOW_SEALING)`.
    public init(name: String, size: Int, othersMayWrite: Bool = false) throws(SystemError) {
        precondition(size > 0, "SharedMemory of \(size) bytes")
        let fd = OwnedFD(adopting: try Syscall.memfdCreate(
            name, CCameraShims_MFD_CLOEXEC | CCameraShims_MFD_ALLOW_SEALING))
        try Syscall.ftruncate(fd.rawValue, size)
        let address = try Syscall.mmap(size, PROT_READ | PROT_WRITE, fd.rawValue)
        do throws(SystemError) {
            _ = try Syscall.fcntl(fd.rawValue, CCameraShims_F_ADD_SEALS,
                                  CCameraShims_F_SEAL_SHRINK | CCameraShims_F_SEAL_GROW | CCameraShims_F_SEAL_SEAL
                                      | (othersMayWrite ? 0 : CCameraShims_F_SEAL_FUTURE_WRITE))
        } catch {
            Syscall.munmap(address, size)
            throw error
        }
        descriptor = fd
        self.size = size
        baseAddress = address
    }

    /// Maps memory received from another process, read-only unless `writable`:
    /// a memfd whose size is sealed, or a dma-buf (a device's buffer, exported
    /// with `VIDIOC_EXPBUF`; its size is fixed for its life).
    ///
    /// - Throws: ``SharedMemoryError`` when the memory is smaller than `size`,
    ///   or is neither a dma-buf nor a memfd sealed against shrinking (it could
    ///   shrink and fault the reader).
    public init(mapping descriptor: OwnedFD, size: Int, writable: Bool = false) throws {
        let actual: Int
        if Syscall.isDMABuf(descriptor.rawValue) {
            actual = try Syscall.dmaBufSize(descriptor.rawValue)
        } else {
            let seals: Int32
            do {
                seals = try Syscall.fcntl(descriptor.rawValue, CCameraShims_F_GET_SEALS, 0)
            } catch where error.errno == EINVAL {
                throw SharedMemoryError.notSealed  // not a memfd: it cannot be sealed at all
            }
            guard seals & CCameraShims_F_SEAL_SHRINK != 0 else { throw SharedMemoryError.notSealed }
            actual = try Syscall.fstatSize(descriptor.rawValue)
        }
        guard actual >= size, size > 0 else { throw SharedMemoryError.tooSmall(size: actual, expected: size) }
        self.descriptor = descriptor
        self.size = size
        baseAddress = try Syscall.mmap(size, writable ? PROT_READ | PROT_WRITE : PROT_READ, descriptor.rawValue)
    }

    /// Maps all of a memfd or dma-buf received from another process, read-only
    /// (``init(mapping:size:writable:)``, at the memory's own size).
    public convenience init(mapping descriptor: OwnedFD) throws {
        let size = Syscall.isDMABuf(descriptor.rawValue)
            ? try Syscall.dmaBufSize(descriptor.rawValue) : try Syscall.fstatSize(descriptor.rawValue)
        try self.init(mapping: descriptor, size: size)
    }

    deinit { Syscall.munmap(baseAddress, size) }

    /// The whole mapping.
    public var bytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: baseAddress, count: size) }
}

/// A shared-memory descriptor that is unsafe to map.
public enum SharedMemoryError: Error, Equatable, CustomStringConvertible {
    /// Neither a dma-buf nor a memfd sealed against shrinking.
    case notSealed
    case tooSmall(size: Int, expected: Int)

    public var description: String {
        switch self {
        case .notSealed: "shared memory is neither a dma-buf nor a memfd sealed against shrinking; refusing to map it"
        case .tooSmall(let size, let expected): "shared memory holds \(size) bytes, \(expected) expected"
        }
    }
}
