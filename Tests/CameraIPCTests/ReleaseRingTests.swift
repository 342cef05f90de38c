import CameraIPC
import Testing

/// The ring a client gives frames back through: what one side writes the
/// other reads, in order, through the memfd's two mappings; a full ring says
/// so; a head no client would write is refused, never read past.
@Suite struct ReleaseRingTests {
    /// camerad's ring and a client's mapping of the same memfd.
    static func pair(capacity: Int = 8) throws -> (daemon: ReleaseRing, client: ReleaseRing) {
        let daemon = try ReleaseRing(capacity: capacity)
        let client = try ReleaseRing(mapping: try daemon.memory.descriptor.duplicate(), capacity: capacity)
        return (daemon, client)
    }

    @Test func releasesArriveInOrderAcrossManyLaps() throws {
        let (daemon, client) = try Self.pair()
        var read: [UInt32] = []
        for lap in 0..<50 {
            for slot in 0..<UInt32(lap % 8 + 1) { #expect(client.push(poolID: UInt64(lap + 1), slot: slot)) }
            let taken = try #require(daemon.take())
            #expect(taken.allSatisfy { $0.poolID == UInt64(lap + 1) })
            read += taken.map(\.slot)
        }
        var expected: [UInt32] = []
        for lap in 0..<50 { expected += Array(0..<UInt32(lap % 8 + 1)) }
        #expect(read == expected)
        #expect(daemon.take()?.isEmpty == true)
    }

    @Test func aFullRingRefusesUntilCameradReads() throws {
        let (daemon, client) = try Self.pair(capacity: 4)
        for slot in 0..<4 as Range<UInt32> { #expect(client.push(poolID: 1, slot: slot)) }
        #expect(!client.push(poolID: 1, slot: 9), "full: the client sends ReleaseFrames instead")
        #expect(daemon.take()?.map(\.slot) == [0, 1, 2, 3])
        #expect(client.push(poolID: 1, slot: 9))
        #expect(daemon.take()?.map(\.slot) == [9])
    }

    @Test func aHeadNoClientWouldWriteIsRefused() throws {
        let (daemon, client) = try Self.pair(capacity: 4)
        #expect(client.push(poolID: 1, slot: 0))
        #expect(daemon.take()?.count == 1)
        // Ahead by more than the capacity: entries that were never there.
        client.memory.baseAddress.storeBytes(of: UInt64(6), as: UInt64.self)
        #expect(daemon.take() == nil)
        // Behind what was read.
        client.memory.baseAddress.storeBytes(of: UInt64(0), as: UInt64.self)
        #expect(daemon.take() == nil)
    }

    @Test func releasesGroupIntoOneListPerRunOfAPool() {
        let runs = ReleaseRing.byPool([(1, 0), (1, 2), (2, 5), (2, 1), (1, 3)])
        #expect(runs.map(\.poolID) == [1, 2, 1])
        #expect(runs.map(\.slots) == [[0, 2], [5, 1], [3]])
        #expect(ReleaseRing.byPool([]).isEmpty)
    }
}
