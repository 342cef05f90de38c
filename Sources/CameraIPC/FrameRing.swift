import Glibc
internal import CCameraShims

/// A stream's frames announced through shared memory instead of messages:
/// camerad writes a record for each frame (and each drop report) and wakes the
/// client with one eventfd write for all the streams of that client's user on
/// the device (``FrameSignal``) — no `sendmsg` per client per frame, no message
/// to decode. What needs descriptors or ends the stream still comes on the
/// socket, each in its place in the ring (a ``Record/news`` record).
///
/// One memfd per stream, made by camerad (its size sealed, writable by the
/// client for its tail), single writer (camerad) and single reader (the client):
///
/// ```
/// offset   0: head, u64 — records written so far (camerad stores it, release order)
/// offset  64: tail, u64 — records read so far (the client stores it, release order)
/// offset 128: capacity records of 64 bytes; record n lies at 128 + (n mod capacity) × 64:
///             0 kind u32 (1 frame, 2 dropped, 3 news)
///             frame:   4 slot u32, 8 pool_id u64, 16 sequence u64, 24 presentation_time_ns i64,
///                      32 duration_ns i64, 40 bytes_used u64
///             dropped: 4 reason u32 (DropReason), 8 count u64, 16 last_sequence u64
///             news:    nothing more — the next stream message on the socket goes here
/// ```
///
/// The client reads records up to the head in order; at a news record it
/// handles the next StreamResponse from the socket (waiting for it if it has
/// not come), then goes on. Stream messages that come on the socket wait for
/// their news record; when the call ends, the client reads the ring to its head
/// and then the messages still waiting. camerad never waits on a client: a
/// frame for a full ring is dropped for that stream (FRAME_WAS_LATE), a drop
/// report waits for room, and news that finds no room ends the stream — only a
/// client that stopped reading fills a ring. camerad reads the tail only when
/// what it read last leaves less than half the ring; a tail that makes no sense
/// then (behind what camerad read before, or ahead of its head) ends the stream.
public final class FrameRing: SharedRing, @unchecked Sendable {
    public static let recordBytes = 64
    /// Room for every frame a client may hold (8) many times over, and the drop
    /// reports between them: only a client that stopped reading fills it.
    public static let defaultCapacity = 256

    public enum Record: Equatable, Sendable {
        case frame(poolID: UInt64, slot: UInt32, sequence: UInt64, presentationTimeNs: Int64, durationNs: Int64,
                   bytesUsed: UInt64)
        case dropped(reason: UInt32, count: UInt64, lastSequence: UInt64)
        case news
    }

    /// Makes a ring for a stream (camerad).
    public init(capacity: Int = FrameRing.defaultCapacity) throws(SystemError) {
        try super.init(name: "camerad-frame-ring", capacity: capacity, entryBytes: Self.recordBytes)
    }

    /// Maps a ring camerad made (a client).
    public init(mapping descriptor: OwnedFD, capacity: Int) throws {
        try super.init(mapping: descriptor, capacity: capacity, entryBytes: Self.recordBytes, largest: 65536, what: "frame ring")
    }

    /// camerad's count of records written, and the client's read.
    private var head: UnsafeMutableRawPointer { writtenCounter }
    private var tail: UnsafeMutableRawPointer { readCounter }

    // MARK: camerad's side

    /// The client's tail as camerad last read it: camerad reads the tail again
    /// only when this leaves less than half the ring, so the tail's cache line
    /// stays with the client that stores it (a miss per stream per frame less).
    private var tailRead: UInt64 = 0
    /// Whether the tail made no sense when camerad last read it.
    public private(set) var tailMadeNoSense = false

    /// Records camerad may write now: at least that many, as the client's
    /// tail read last says; nil when the tail makes no sense (behind an
    /// earlier one, or ahead of the head), which only a broken or hostile
    /// client writes.
    public var room: Int? {
        if !tailMadeNoSense, count - tailRead < UInt64(capacity / 2) { return capacity - Int(count - tailRead) }
        let read = CCameraShims_load_acquire_u64(tail)
        guard read >= tailRead, read <= count, count - read <= UInt64(capacity) else {
            tailMadeNoSense = true
            return nil
        }
        tailRead = read
        tailMadeNoSense = false
        return capacity - Int(count - read)
    }

    /// Writes one record (camerad; one thread at a time). False when there is no room.
    public func write(_ record: Record) -> Bool {
        guard let room, room > 0 else { return false }
        let place = entry(count)
        place.initializeMemory(as: UInt8.self, repeating: 0, count: Self.recordBytes)
        switch record {
        case let .frame(poolID, slot, sequence, presentationTimeNs, durationNs, bytesUsed):
            place.storeBytes(of: 1, as: UInt32.self)
            place.storeBytes(of: slot, toByteOffset: 4, as: UInt32.self)
            place.storeBytes(of: poolID, toByteOffset: 8, as: UInt64.self)
            place.storeBytes(of: sequence, toByteOffset: 16, as: UInt64.self)
            place.storeBytes(of: presentationTimeNs, toByteOffset: 24, as: Int64.self)
            place.storeBytes(of: durationNs, toByteOffset: 32, as: Int64.self)
            place.storeBytes(of: bytesUsed, toByteOffset: 40, as: UInt64.self)
        case let .dropped(reason, dropped, lastSequence):
            place.storeBytes(of: 2, as: UInt32.self)
            place.storeBytes(of: reason, toByteOffset: 4, as: UInt32.self)
            place.storeBytes(of: dropped, toByteOffset: 8, as: UInt64.self)
            place.storeBytes(of: lastSequence, toByteOffset: 16, as: UInt64.self)
        case .news:
            place.storeBytes(of: 3, as: UInt32.self)
        }
        count &+= 1
        CCameraShims_store_release_u64(head, count)
        return true
    }

    // MARK: a client's side

    /// A head that makes no sense, or a record of no known kind: camerad's bug
    /// or memory someone else wrote.
    public struct Corrupt: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads the records written since the last call, oldest first (a client;
    /// one thread at a time). `body` returns false to leave a record unread
    /// (news whose message has not come): reading stops there, and the next
    /// call starts with it.
    public func read(_ body: (Record) throws -> Bool) throws {
        let written = CCameraShims_load_acquire_u64(head)
        guard written >= count, written - count <= UInt64(capacity) else {
            throw Corrupt(description: "the frame ring's head \(written) is behind \(count) or more than \(capacity) ahead")
        }
        defer { CCameraShims_store_release_u64(tail, count) }
        while count < written {
            let place = entry(count)
            let next: Record
            switch place.load(as: UInt32.self) {
            case 1:
                next = .frame(poolID: place.load(fromByteOffset: 8, as: UInt64.self),
                              slot: place.load(fromByteOffset: 4, as: UInt32.self),
                              sequence: place.load(fromByteOffset: 16, as: UInt64.self),
                              presentationTimeNs: place.load(fromByteOffset: 24, as: Int64.self),
                              durationNs: place.load(fromByteOffset: 32, as: Int64.self),
                              bytesUsed: place.load(fromByteOffset: 40, as: UInt64.self))
            case 2:
                next = .dropped(reason: place.load(fromByteOffset: 4, as: UInt32.self),
                                count: place.load(fromByteOffset: 8, as: UInt64.self),
                                lastSequence: place.load(fromByteOffset: 16, as: UInt64.self))
            case 3:
                next = .news
            case let kind:
                throw Corrupt(description: "frame ring record \(count) is of unknown kind \(kind)")
            }
            guard try body(next) else { return }
            count += 1
        }
    }
}

/// Wakes the clients of one user on one device when their frame rings have
/// new records: camerad writes an eventfd of its own once per frame for all of
/// them, and the clients wait on an epoll instance that watches it
/// (``clientEnd``), edge-triggered (EPOLLIN | EPOLLET) in their own epoll, and
/// never read it. One write wakes every waiting process, as one eventfd would.
///
/// Why the eventfd stays in camerad: a descriptor camerad passes is the same
/// open file in both processes, so its file status flags are shared. camerad
/// used to pass the eventfd itself, and a client that cleared `O_NONBLOCK` on
/// it and drove the counter to its maximum made camerad's next write sleep.
/// Now camerad writes (and, once the counter is full, reads) only a descriptor
/// no client has; the epoll instance clients get is one camerad never calls
/// after making it. A client can wait on it, add descriptors of its own to it
/// (which wakes only its own user's processes), or change its flags: none of
/// that reaches the eventfd.
///
/// Never closed: closing an eventfd that epoll instances still watch takes each
/// instance's lock, which a client can hold (an epoll_ctl adding a FUSE file
/// waits for that file's server), so a signal lives as long as camerad and is
/// used again for its user and device (``DeviceStreamer``'s table).
public final class FrameSignal: @unchecked Sendable {
    /// The epoll instance clients wait on: passed to each stream of the user.
    public let clientEnd: OwnedFD
    /// camerad's own: never passed.
    private let counter: OwnedFD

    public init() throws(SystemError) {
        counter = OwnedFD(adopting: try Syscall.eventfd(Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK)))
        clientEnd = OwnedFD(adopting: try Syscall.epollCreate())
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        try Syscall.epollControl(clientEnd.rawValue, EPOLL_CTL_ADD, counter.rawValue, &event)
    }

    /// Wakes the clients waiting on it; never waits.
    public func raise() {
        var one: UInt64 = 1
        if Glibc.write(counter.rawValue, &one, 8) < 0, errno == EAGAIN {
            // 2^64 - 2 raises: read back to zero (the descriptor is camerad's alone, non-blocking).
            Syscall.eventfdDrain(counter.rawValue)
            _ = Glibc.write(counter.rawValue, &one, 8)
        }
    }
}
