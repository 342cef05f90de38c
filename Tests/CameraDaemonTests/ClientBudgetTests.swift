@testable import CameraDaemon
import CameraIPC
import CameraProtocol
import Testing

@Suite struct ClientBudgetTests {
    let budget = ClientBudget(limits: .init(streamsPerConnection: 3, bytesPerConnection: 100, poolBytes: 400,
                                            descriptors: 40, userShare: 4))

    static func owner(_ connection: UInt64, user: UInt32 = 1000) -> ClientBudget.Owner {
        ClientBudget.Owner(connection: connection, user: user)
    }

    @Test func aConnectionGetsItsStreamsUpToItsLimitsAndOthersTheirOwn() throws {
        _ = try budget.chargeStream(Self.owner(1), bytes: 40, "a")
        _ = try budget.chargeStream(Self.owner(1), bytes: 40, "b")
        let memory = #expect(throws: CameraError.self) { try budget.chargeStream(Self.owner(1), bytes: 40, "c") }
        #expect(memory?.code == .resourceExhausted && memory?.message.contains("ask for fewer frames in flight") == true)
        _ = try budget.chargeStream(Self.owner(1), bytes: 20, "d")
        let streams = #expect(throws: CameraError.self) { try budget.chargeStream(Self.owner(1), bytes: 1, "e") }
        #expect(streams?.message.contains("close one first") == true)
        _ = try budget.chargeStream(Self.owner(2, user: 1001), bytes: 100, "another user's")
        #expect(budget.streamCount() == 4)
    }

    @Test func refundsGiveRoomBackAndForgetAConnectionWithNoStreams() throws {
        let charge = try budget.chargeStream(Self.owner(1), bytes: 100, "a")
        budget.refund(charge)
        #expect(budget.streamCount() == 0)
        _ = try budget.chargeStream(Self.owner(1), bytes: 100, "a again")
        #expect(budget.streamCount() == 1)
    }

    /// A node several connections share (an encoder, a detector) subscribes
    /// as camerad: charged once, to no connection or user, so no client pays
    /// for another's share and none can be refused for it.
    @Test func camerasOwnSubscriptionsAreChargedToNoClient() throws {
        _ = try budget.chargeStream(Self.owner(1), bytes: 100, "a client's")
        let shared = try budget.chargeStream(.daemon, bytes: 300, "a shared encoder's")
        #expect(budget.streamCount(of: Self.owner(1)) == 1 && budget.streamCount(of: .daemon) == 1)
        // Every user's share stays whole: another user still takes all of theirs.
        _ = try budget.chargeStream(Self.owner(2, user: 1001), bytes: 100, "another user's")
        #expect(throws: CameraError.self) { try budget.chargeStream(.daemon, bytes: 101, "one too many") }
        #expect(throws: CameraError.self) { try budget.chargeStream(.daemon, bytes: 1, descriptors: 1, "a ring") }
        budget.refund(shared)
        #expect(budget.streamCount(of: .daemon) == 0)
    }

    @Test func poolsTogetherStayUnderTheirLimit() throws {
        try budget.chargePool(bytes: 300, "a")
        let refused = #expect(throws: CameraError.self) { try budget.chargePool(bytes: 101, "b") }
        #expect(refused?.code == .resourceExhausted && refused?.message.contains("try again when other streams end") == true)
        budget.refundPool(bytes: 300)
        try budget.chargePool(bytes: 400, "b")
    }

    /// One user's streams may hold a quarter of the pools' memory, whatever
    /// connections they come on; another user still gets its own quarter.
    @Test func aUserGetsAShareOfThePoolsMemoryAcrossConnections() throws {
        _ = try budget.chargeStream(Self.owner(1), bytes: 60, "a")
        _ = try budget.chargeStream(Self.owner(2), bytes: 40, "b")
        let refused = #expect(throws: CameraError.self) { try budget.chargeStream(Self.owner(3), bytes: 1, "c") }
        #expect(refused?.code == .resourceExhausted && refused?.message.contains("one user may") == true, "\(refused?.message ?? "")")
        _ = try budget.chargeStream(Self.owner(4, user: 1001), bytes: 100, "another user's")
    }

    /// Connections, rings and frame signals cost descriptors: one user may
    /// hold a quarter of what camerad allows for clients, all users together
    /// all of it; what goes gives its descriptors back.
    @Test func descriptorsAreChargedToTheConnectionAndTheUser() throws {
        // 40 for clients: a user may hold 10; a connection costs 1.
        try budget.admit(connection: 1, user: 1000)
        _ = try budget.chargeStream(Self.owner(1), bytes: 1, descriptors: 2, "a stream with rings")
        try budget.chargeUser(1000, descriptors: 2, "a frame signal")
        _ = try budget.chargeStream(Self.owner(1), bytes: 1, descriptors: 2, "another")
        try budget.admit(connection: 2, user: 1000)
        #expect(budget.descriptors(of: 1000) == 8)
        let ring = #expect(throws: CameraError.self) { try budget.chargeStream(Self.owner(2), bytes: 1, descriptors: 3, "c") }
        #expect(ring?.code == .resourceExhausted && ring?.message.contains("the most one user may") == true, "\(ring?.message ?? "")")
        try budget.admit(connection: 3, user: 1000)
        try budget.admit(connection: 4, user: 1000)
        let connection = #expect(throws: CameraError.self) { try budget.admit(connection: 5, user: 1000) }
        #expect(connection?.code == .resourceExhausted)
        // Other users: 10 each, until all 40 are taken.
        for user: UInt32 in 1001...1003 {
            for index in 0..<10 { try budget.admit(connection: UInt64(user) * 100 + UInt64(index), user: user) }
        }
        #expect(budget.descriptors() == 40)
        let all = #expect(throws: CameraError.self) { try budget.chargeUser(1004, descriptors: 1, "a frame signal") }
        #expect(all?.message.contains("raise camerad's limit") == true, "\(all?.message ?? "")")
        budget.dismiss(connection: 100_100)
        try budget.chargeUser(1004, descriptors: 1, "a frame signal")
        // A connection's end gives back its own; its streams give back theirs as they end.
        budget.dismiss(connection: 1)
        #expect(budget.descriptors(of: 1000) == 9)
    }

    @Test func aConnectionIsRefusedOverTheWireWithItsReason() throws {
        let budget = ClientBudget(limits: .init(descriptors: 4, userShare: 4))
        let peer = PeerCredentials(pid: 1, uid: 1000, gid: 1000)
        try budget.admit(1, peer)
        let refused = #expect(throws: RPCError.self) { try budget.admit(2, peer) }
        #expect(refused?.code == .resourceExhausted)
        budget.dismiss(1)
        try budget.admit(2, peer)
    }
}
