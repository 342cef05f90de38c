@testable import CameraDaemon
import CameraProtocol
import Testing

@Suite struct StreamBudgetTests {
    let budget = StreamBudget(limits: .init(streamsPerConnection: 3, bytesPerConnection: 100, poolBytes: 250))

    @Test func aConnectionGetsItsStreamsUpToItsLimitsAndOthersTheirOwn() throws {
        try budget.chargeStream(connection: 1, bytes: 40, "a")
        try budget.chargeStream(connection: 1, bytes: 40, "b")
        let memory = #expect(throws: CameraError.self) { try budget.chargeStream(connection: 1, bytes: 40, "c") }
        #expect(memory?.code == .resourceExhausted && memory?.message.contains("ask for fewer frames in flight") == true)
        try budget.chargeStream(connection: 1, bytes: 20, "d")
        let streams = #expect(throws: CameraError.self) { try budget.chargeStream(connection: 1, bytes: 1, "e") }
        #expect(streams?.message.contains("close one first") == true)
        try budget.chargeStream(connection: 2, bytes: 100, "another connection's")
        #expect(budget.streamCount == 4)
    }

    @Test func refundsGiveRoomBackAndForgetAConnectionWithNoStreams() throws {
        try budget.chargeStream(connection: 1, bytes: 100, "a")
        budget.refundStream(connection: 1, bytes: 100)
        #expect(budget.streamCount == 0)
        try budget.chargeStream(connection: 1, bytes: 100, "a again")
        budget.refundStream(connection: 7, bytes: 5)  // nothing charged there: nothing happens
        #expect(budget.streamCount == 1)
    }

    @Test func poolsTogetherStayUnderTheirLimit() throws {
        try budget.chargePool(bytes: 200, "a")
        let refused = #expect(throws: CameraError.self) { try budget.chargePool(bytes: 51, "b") }
        #expect(refused?.code == .resourceExhausted && refused?.message.contains("try again when other streams end") == true)
        budget.refundPool(bytes: 200)
        try budget.chargePool(bytes: 250, "b")
    }
}
