import Glibc

/// A ring one process writes and another reads, as camerad's rings lay it out
/// (``ReleaseRing``, ``FrameRing``): a memfd camerad makes (its size sealed,
/// writable by the client too), two counters on cache lines of their own and
/// `capacity` entries of one size after them.
///
/// ```
/// offset   0: entries written so far, u64 (the writer stores it, release order)
/// offset  64: entries read so far, u64 (the reader stores it, release order)
/// offset 128: the entries; entry n lies at 128 + (n mod capacity) × entryBytes
/// ```
///
/// Each side keeps its own count (``count``: entries written by the writer,
/// read by the reader) and trusts only that.
public class SharedRing: @unchecked Sendable {
    public static let headerBytes = 128

    public let memory: SharedMemory
    public let capacity: Int
    /// `memory`'s base address, kept here: a frame's look at a ring is then one
    /// reference away from it, not two.
    let base: UnsafeMutableRawPointer
    let entryBytes: Int
    /// Entries this side wrote (the writer) or read (the reader).
    var count: UInt64 = 0

    /// Makes a ring (camerad).
    init(name: String, capacity: Int, entryBytes: Int) throws(SystemError) {
        self.capacity = capacity
        self.entryBytes = entryBytes
        memory = try SharedMemory(name: name, size: Self.headerBytes + capacity * entryBytes, othersMayWrite: true)
        base = memory.baseAddress
    }

    /// Maps a ring camerad made (a client), of at most `largest` entries.
    init(mapping descriptor: OwnedFD, capacity: Int, entryBytes: Int, largest: Int, what: String) throws {
        guard (1...largest).contains(capacity) else { throw SystemError("a \(what) of \(capacity) entries", errno: EINVAL) }
        self.capacity = capacity
        self.entryBytes = entryBytes
        memory = try SharedMemory(mapping: descriptor, size: Self.headerBytes + capacity * entryBytes, writable: true)
        base = memory.baseAddress
    }

    /// Where the count of entries written lies.
    var writtenCounter: UnsafeMutableRawPointer { base }
    /// Where the count of entries read lies.
    var readCounter: UnsafeMutableRawPointer { base + 64 }
    /// Where entry `index` lies.
    func entry(_ index: UInt64) -> UnsafeMutableRawPointer {
        base + Self.headerBytes + Int(index % UInt64(capacity)) * entryBytes
    }
}
