import Glibc
internal import CCameraShims

/// A stream's frames given back through shared memory instead of messages: the
/// client writes which slots it is done with, and camerad reads them as its next
/// frame comes — no message, no thread woken in camerad for a release.
///
/// One memfd per stream, made by camerad (its size sealed, writable by the
/// client), single writer (the client) and single reader (camerad):
///
/// ```
/// offset   0: head, u64 — entries written so far (the client stores it, release order)
/// offset  64: tail, u64 — entries read so far (camerad stores it, release order)
/// offset 128: capacity entries of 16 bytes: pool_id u64, slot u32, 4 bytes zero;
///             entry n lies at 128 + (n mod capacity) × 16
/// ```
///
/// A client writes an entry at `head`, then stores `head + 1`; when `head −
/// tail` reaches the capacity it sends ReleaseFrames instead. camerad trusts
/// nothing it reads: a head behind the tail or more than the capacity ahead ends
/// the stream, and every entry is checked as a ReleaseFrames slot is.
public final class ReleaseRing: SharedRing, @unchecked Sendable {
    public static let entryBytes = 16
    public static let defaultCapacity = 64

    /// Makes a ring for a stream (camerad).
    public init(capacity: Int = ReleaseRing.defaultCapacity) throws(SystemError) {
        try super.init(name: "camerad-release-ring", capacity: capacity, entryBytes: Self.entryBytes)
    }

    /// Maps a ring camerad made (a client).
    public init(mapping descriptor: OwnedFD, capacity: Int) throws {
        try super.init(mapping: descriptor, capacity: capacity, entryBytes: Self.entryBytes, largest: 4096, what: "release ring")
    }

    /// The client's count of releases written, and camerad's read.
    private var head: UnsafeMutableRawPointer { writtenCounter }
    private var tail: UnsafeMutableRawPointer { readCounter }

    /// camerad's tail as the client last read it: the client reads it again
    /// only when this says the ring is full, so the tail's cache line stays
    /// with camerad, which stores it as each frame comes.
    private var tailRead: UInt64 = 0

    /// Writes one release (a client; one thread at a time). False when the
    /// ring is full: send ReleaseFrames instead.
    public func push(poolID: UInt64, slot: UInt32) -> Bool {
        if count &- tailRead >= UInt64(capacity) {
            tailRead = CCameraShims_load_acquire_u64(tail)
            guard count &- tailRead < UInt64(capacity) else { return false }
        }
        let place = entry(count)
        place.storeBytes(of: poolID, as: UInt64.self)
        place.storeBytes(of: slot, toByteOffset: 8, as: UInt32.self)
        place.storeBytes(of: 0, toByteOffset: 12, as: UInt32.self)
        count &+= 1
        CCameraShims_store_release_u64(head, count)
        return true
    }

    /// Releases in order, as one list of slots for each run of the same pool:
    /// what one ReleaseFrames carries (two pools only around a format change).
    public static func byPool(_ releases: [(poolID: UInt64, slot: UInt32)]) -> [(poolID: UInt64, slots: [UInt32])] {
        var runs: [(poolID: UInt64, slots: [UInt32])] = []
        for release in releases {
            if runs.last?.poolID == release.poolID {
                runs[runs.count - 1].slots.append(release.slot)
            } else {
                runs.append((release.poolID, [release.slot]))
            }
        }
        return runs
    }

    /// Hands `body` each release written since the last call, oldest first
    /// (camerad), with no allocation; false when the head makes no sense, which
    /// only a broken or hostile client writes. What `body` threw for stays read.
    public func read<Failure: Error>(_ body: (_ poolID: UInt64, _ slot: UInt32) throws(Failure) -> Void) throws(Failure) -> Bool {
        let written = CCameraShims_load_acquire_u64(head)
        guard written >= count, written - count <= UInt64(capacity) else { return false }
        guard written > count else { return true }
        defer { CCameraShims_store_release_u64(tail, count) }
        while count < written {
            let place = entry(count)
            count += 1
            try body(place.load(as: UInt64.self), place.load(fromByteOffset: 8, as: UInt32.self))
        }
        return true
    }

    /// The releases written since the last call, oldest first (camerad); nil
    /// when the head makes no sense.
    public func take() -> [(poolID: UInt64, slot: UInt32)]? {
        var releases: [(poolID: UInt64, slot: UInt32)] = []
        return read { releases.append(($0, $1)) } ? releases : nil
    }
}
