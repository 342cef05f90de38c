@testable import CameraDaemon
import CameraEncoding
import Testing

/// An encoder's recent packets, kept for pre-rolls: from the latest keyframe
/// at least its span old, within its bytes.
@Suite struct PacketHistoryTests {
    /// A packet a second apart from the next, a keyframe every `keyframeEvery`.
    static func packet(_ second: Int, keyframeEvery: Int = 3, bytes: Int = 10) -> EncodedPacket {
        EncodedPacket(bytes: [UInt8](repeating: 0, count: bytes), presentationTimeNanoseconds: Int64(second) * 1_000_000_000,
                      decodeTimeNanoseconds: Int64(second) * 1_000_000_000, durationNanoseconds: 1_000_000_000,
                      isKeyframe: second % keyframeEvery == 0)
    }

    static func seconds(_ held: [PacketHistory.Held]) -> [Int] {
        held.map { Int($0.packet.presentationTimeNanoseconds / 1_000_000_000) }
    }

    @Test func itKeepsFromTheLatestKeyframeItsSpanOldAndGivesFromAKeyframeAtOrBeforeTheTimeAsked() {
        var history = PacketHistory(span: 5_000_000_000)
        for second in 0...20 { history.add(Self.packet(second), sequence: UInt64(second)) }
        // The newest is 20: 15 is the span's edge, and the keyframe at or before it 15 itself.
        #expect(Self.seconds(history.packets) == Array(15...20))
        #expect(Self.seconds(history.since(17_000_000_000)) == Array(15...20), "from the keyframe at or before 17")
        #expect(Self.seconds(history.since(18_000_000_000)) == [18, 19, 20])
        #expect(Self.seconds(history.since(1_000_000_000)) == Array(15...20), "older than it holds: from its first keyframe")
        #expect(history.packets.map(\.sequence) == Array(15...20).map(UInt64.init))
    }

    @Test func overItsBytesTheOldestKeyframesRunsGoFirst() {
        var history = PacketHistory(span: 100_000_000_000, maxBytes: 65)
        for second in 0...11 { history.add(Self.packet(second), sequence: UInt64(second)) }
        // 12 packets of 10 bytes: the runs from 0 and 3 go; from 6 on, 60 bytes stay.
        #expect(Self.seconds(history.packets) == Array(6...11))
    }

    /// An encoder behind keeps keyframes far apart: a pre-roll still starts
    /// no earlier than its span from now — at the first keyframe since then
    /// when none is as old as asked.
    @Test func noPreRollGoesBackFurtherThanAsAllowed() {
        var history = PacketHistory(span: 100_000_000_000)
        for second in 0...20 { history.add(Self.packet(second, keyframeEvery: 6), sequence: UInt64(second)) }
        #expect(Self.seconds(history.since(15_000_000_000, notBefore: 7_000_000_000)) == Array(12...20), "the latest keyframe at or before 15")
        #expect(Self.seconds(history.since(9_000_000_000, notBefore: 7_000_000_000)) == Array(12...20), "0 and 6 are too old: from 12")
        #expect(history.since(19_000_000_000, notBefore: 19_000_000_000).isEmpty, "no keyframe that recent")
    }

    @Test func withoutAKeyframeItGivesNothing() {
        var history = PacketHistory(span: 5_000_000_000)
        for second in [1, 2] { history.add(Self.packet(second), sequence: UInt64(second)) }
        #expect(history.since(0).isEmpty)
    }
}
