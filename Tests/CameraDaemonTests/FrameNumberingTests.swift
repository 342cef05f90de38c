@testable import CameraDaemon
import Testing

/// A V4L2 capture's frame numbers: the driver's 32-bit count made 64-bit and
/// strictly increasing, whatever the driver does.
@Suite struct FrameNumberingTests {
    static func numbers(_ counts: [UInt32]) -> [UInt64] {
        var numbering = FrameNumbering()
        return counts.map { numbering.number(forDriverCount: $0) }
    }

    @Test func aCountThatAdvancesIsKeptGapsAndAll() {
        #expect(Self.numbers([5, 6, 9, 10]) == [5, 6, 9, 10])
    }

    @Test func theCountsWrapIsCarriedPast() {
        let wrap: UInt64 = 1 << 32
        #expect(Self.numbers([UInt32.max - 1, UInt32.max, 0, 1]) == [wrap - 2, wrap - 1, wrap, wrap + 1])
    }

    /// vivid, starved, repeats a count: the repeat gets the next number (not a
    /// wrap's, 2³² on), and the numbers meet the count again at its next gap.
    @Test func aRepeatedOrBackwardCountStillAdvancesAndCatchesUpAtAGap() {
        #expect(Self.numbers([10, 11, 11, 12, 15, 16]) == [10, 11, 12, 13, 15, 16])
        #expect(Self.numbers([10, 11, 9, 12]) == [10, 11, 12, 13])
    }
}
