import CameraIPC
import CameraTestSupport
import CCameraShims
import Foundation
import Glibc
import Synchronization
import Testing

/// The ring camerad announces frames through: what it writes a client reads,
/// in order, through the memfd's two mappings; a full ring refuses; a reader
/// can leave a record for later; a tail or head no one would write is caught;
/// the signal wakes an edge-triggered waiter on every raise.
@Suite struct FrameRingTests {
    /// camerad's ring and a client's mapping of the same memfd.
    static func pair(capacity: Int = 8) throws -> (daemon: FrameRing, client: FrameRing) {
        let daemon = try FrameRing(capacity: capacity)
        let client = try FrameRing(mapping: try daemon.memory.descriptor.duplicate(), capacity: capacity)
        return (daemon, client)
    }

    static func frame(_ sequence: UInt64) -> FrameRing.Record {
        .frame(poolID: 7, slot: UInt32(sequence % 5), sequence: sequence, presentationTimeNs: Int64(sequence) * 1000,
               durationNs: -33, bytesUsed: sequence * 3)
    }

    static func readAll(_ ring: FrameRing) throws -> [FrameRing.Record] {
        var records: [FrameRing.Record] = []
        try ring.read { record in
            records.append(record)
            return true
        }
        return records
    }

    @Test func recordsArriveWholeAndInOrderAcrossManyLaps() throws {
        let (daemon, client) = try Self.pair()
        var written: [FrameRing.Record] = []
        var read: [FrameRing.Record] = []
        var sequence: UInt64 = 0
        for lap in 0..<50 {
            for index in 0..<(lap % 8 + 1) {
                sequence += 1
                let record: FrameRing.Record = switch index % 3 {
                case 0: Self.frame(sequence)
                case 1: .dropped(reason: 1, count: sequence, lastSequence: sequence + 1)
                default: .news
                }
                #expect(daemon.write(record))
                written.append(record)
            }
            read += try Self.readAll(client)
        }
        #expect(read == written)
        #expect(try Self.readAll(client).isEmpty)
        let room = try #require(daemon.room)
        #expect((4...8).contains(room), "all read: at least the half of the ring camerad reads the tail at")
    }

    @Test func aFullRingRefusesUntilTheClientReads() throws {
        let (daemon, client) = try Self.pair(capacity: 4)
        for sequence in 1...4 as ClosedRange<UInt64> { #expect(daemon.write(Self.frame(sequence))) }
        #expect(daemon.room == 0)
        #expect(!daemon.write(Self.frame(5)), "full: camerad drops the frame for this stream")
        #expect(try Self.readAll(client) == (1...4).map(Self.frame))
        #expect(daemon.write(Self.frame(5)))
        #expect(try Self.readAll(client) == [Self.frame(5)])
    }

    @Test func aRecordLeftUnreadComesFirstNextTime() throws {
        let (daemon, client) = try Self.pair(capacity: 4)
        for record in [Self.frame(1), .news, Self.frame(2)] { #expect(daemon.write(record)) }
        var records: [FrameRing.Record] = []
        // News whose message has not come: reading stops there.
        try client.read { record in
            guard record != .news else { return false }
            records.append(record)
            return true
        }
        #expect(records == [Self.frame(1)])
        #expect(daemon.room == 2, "what was read is room again; the news is not")
        #expect(try Self.readAll(client) == [.news, Self.frame(2)])
    }

    @Test func aTailOrHeadNoOneWouldWriteIsCaught() throws {
        let (daemon, client) = try Self.pair(capacity: 4)
        let tail = client.memory.baseAddress + 64
        for sequence in 1...2 as ClosedRange<UInt64> { #expect(daemon.write(Self.frame(sequence))) }
        _ = try Self.readAll(client)
        // A tail ahead of the head: the client claims records never written.
        tail.storeBytes(of: UInt64(3), as: UInt64.self)
        #expect(daemon.room == nil && daemon.tailMadeNoSense)
        #expect(!daemon.write(Self.frame(3)))
        tail.storeBytes(of: UInt64(2), as: UInt64.self)
        #expect(daemon.room == 4 && !daemon.tailMadeNoSense)
        // A tail behind the one camerad read before.
        for sequence in 3...4 as ClosedRange<UInt64> { #expect(daemon.write(Self.frame(sequence))) }
        tail.storeBytes(of: UInt64(1), as: UInt64.self)
        #expect(daemon.room == nil && daemon.tailMadeNoSense)
        // A head more than the capacity ahead of what the client read.
        client.memory.baseAddress.storeBytes(of: UInt64(9), as: UInt64.self)
        #expect(throws: FrameRing.Corrupt.self) { try Self.readAll(client) }
    }

    @Test func cameradReadsTheTailOnlyWhenHalfTheRingIsUsed() throws {
        let (daemon, client) = try Self.pair(capacity: 8)
        let tail = client.memory.baseAddress + 64
        #expect(daemon.write(Self.frame(1)))
        _ = try Self.readAll(client)
        // Not looked at: what camerad read last (nothing read) leaves more than half the ring.
        tail.storeBytes(of: UInt64(1) << 40, as: UInt64.self)
        #expect(daemon.room == 7, "a lower bound: one record written, none known read")
        for sequence in 2...4 as ClosedRange<UInt64> { #expect(daemon.write(Self.frame(sequence))) }
        #expect(daemon.room == nil && daemon.tailMadeNoSense, "half the ring used: the tail is read, and makes no sense")
        tail.storeBytes(of: UInt64(4), as: UInt64.self)
        #expect(daemon.room == 8)
    }

    @Test func aRecordOfNoKnownKindIsCaught() throws {
        let (daemon, client) = try Self.pair()
        #expect(daemon.write(.news))
        (client.memory.baseAddress + FrameRing.headerBytes).storeBytes(of: UInt32(9), as: UInt32.self)
        #expect(throws: FrameRing.Corrupt.self) { try Self.readAll(client) }
    }

    @Test func theSignalWakesAnEdgeTriggeredWaiterOnceOnEveryRaise() async throws {
        let signal = try FrameSignal()
        let loop = try EventLoop(name: "signal-test")
        defer { loop.stop() }
        let waiter = Waiter()
        let registration = try loop.register(signal.clientEnd.rawValue, events: [.readable, .edgeTriggered], handler: waiter)
        defer { loop.deregister(registration) }
        for raised in 1...3 {
            // Never read: each raise is an edge of its own.
            signal.raise()
            #expect(await waitUntil { waiter.woken.withLock { $0 } >= raised })
            // Two more rounds of the loop: a level-triggered wait would have been told again.
            for _ in 0..<2 { await withCheckedContinuation { done in loop.execute { done.resume() } } }
            #expect(waiter.woken.withLock { $0 } == raised, "told once per raise")
        }
    }

    /// What a client can do to the descriptor it gets — make it blocking, read
    /// or write it, add descriptors of its own to it — never reaches the
    /// eventfd camerad writes: raises never wait, and each still wakes.
    @Test func noClientCanMakeARaiseWait() async throws {
        let signal = try FrameSignal()
        let client = signal.clientEnd.rawValue
        #expect(fcntl(client, F_SETFL, fcntl(client, F_GETFL) & ~O_NONBLOCK) == 0)
        var value: UInt64 = .max - 1
        #expect(write(client, &value, 8) < 0 && errno == EINVAL, "what clients get cannot be written")
        #expect(read(client, &value, 8) < 0 && errno == EINVAL, "nor read")
        // A descriptor of the client's own, readable for good, added to it.
        let own = eventfd(1, Int32(EFD_CLOEXEC))
        defer { close(own) }
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: own))
        #expect(epoll_ctl(client, EPOLL_CTL_ADD, own, &event) == 0)

        let loop = try EventLoop(name: "signal-test")
        defer { loop.stop() }
        let waiter = Waiter()
        let registration = try loop.register(client, events: [.readable, .edgeTriggered], handler: waiter)
        defer { loop.deregister(registration) }
        // Many raises on a thread of their own: each returns at once.
        let raised = Atomic(0)
        let raiser = Thread {
            for _ in 0..<100_000 {
                signal.raise()
                raised.add(1, ordering: .relaxed)
            }
        }
        raiser.start()
        #expect(await waitUntil(timeout: .seconds(60)) { raised.load(ordering: .relaxed) == 100_000 }, "no raise waits")
        #expect(await waitUntil { waiter.woken.withLock { $0 } >= 1 })
        for _ in 0..<2 { await withCheckedContinuation { done in loop.execute { done.resume() } } }
        let before = waiter.woken.withLock { $0 }
        signal.raise()
        #expect(await waitUntil { waiter.woken.withLock { $0 } == before + 1 }, "and the next raise wakes the client again")
    }
}

/// Counts its wake-ups.
private final class Waiter: EventHandler {
    let woken = Mutex(0)
    func handleEvents(_ events: EventLoop.Events) { woken.withLock { $0 += 1 } }
}
