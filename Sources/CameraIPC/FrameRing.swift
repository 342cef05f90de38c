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
/// new records: camerad sends a byte on its end of a socket pair for all of
/// them, and each client waits on the other end edge-triggered (EPOLLIN |
/// EPOLLET) and, each time it fires, takes what came (``drain(_:)``) before it
/// reads its rings.
///
/// Why a socket pair: a descriptor camerad passes is the same open file in
/// both processes, so its file status flags are shared — a client that clears
/// `O_NONBLOCK` on an eventfd camerad writes makes camerad's next write sleep
/// once the counter is full. camerad's end of the pair never leaves camerad,
/// and each send says `MSG_DONTWAIT` besides, so nothing a client does to its
/// own end makes camerad wait. Camerad's end is shut for reading, so a client
/// cannot fill what camerad never reads; what camerad sends is bounded by its
/// send buffer, and a send that finds it full (no client took what came) is
/// skipped: those clients were woken by what is waiting already.
///
/// Shared by one user's clients only: a client may take what came or leave
/// it, which wakes or leaves asleep only processes it could signal anyway.
public final class FrameSignal: @unchecked Sendable {
    /// The end clients wait on: passed to each stream of the user.
    public let clientEnd: OwnedFD
    private let cameradEnd: OwnedFD

    public init() throws(SystemError) {
        let (cameradEnd, clientEnd) = try UnixSocket.pair()
        self.cameradEnd = cameradEnd
        self.clientEnd = clientEnd
        // One way: the clients' end cannot send.
        Syscall.shutdown(cameradEnd.rawValue, Int32(SHUT_RD))
    }

    /// Wakes the clients waiting on it; never waits.
    public func raise() {
        var byte: UInt8 = 1
        // EAGAIN: nobody took what came, and every waiter was woken by it. EPIPE: no client is left.
        _ = Glibc.send(cameradEnd.rawValue, &byte, 1, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
    }

    /// A client's side: takes what came on the signal `descriptor`, without
    /// waiting, so that the next raise wakes it again. Call it each time the
    /// signal fires, before reading the rings.
    public static func drain(_ descriptor: Int32) {
        withUnsafeTemporaryAllocation(byteCount: 256, alignment: 8) { buffer in
            while Glibc.recv(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT)) == buffer.count {}
        }
    }
}
