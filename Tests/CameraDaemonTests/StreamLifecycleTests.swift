@testable import CameraDaemon
import Testing

/// Every pair of state and event of ``StreamLifecycle``.
@Suite struct StreamLifecycleTests {
    static func lifecycle(_ events: StreamLifecycle.Event...) -> StreamLifecycle {
        var lifecycle = StreamLifecycle()
        for event in events { _ = lifecycle.handle(event) }
        return lifecycle
    }

    @Test func anOpeningStreamGetsNothingUntilItStarts() {
        var lifecycle = StreamLifecycle()
        #expect(lifecycle.state == .opening && !lifecycle.receivesFrames)
        #expect(lifecycle.handle(.started) == .moved)
        #expect(lifecycle.state == .streaming && lifecycle.receivesFrames)
        #expect(lifecycle.handle(.closed) == .moved)
        #expect(lifecycle.state == .closed && !lifecycle.receivesFrames)
    }

    @Test func aStreamWhoseCaptureNeverRanCloses() {
        var lifecycle = StreamLifecycle()
        #expect(lifecycle.handle(.closed) == .moved)
        #expect(lifecycle.state == .closed)
    }

    @Test func closingTwiceIsNothing() {
        var lifecycle = Self.lifecycle(.started, .closed)
        #expect(lifecycle.handle(.closed) == .ignored)
        #expect(lifecycle.state == .closed)
    }

    @Test func startingAgainOrAfterClosingIsIllegal() {
        var streaming = Self.lifecycle(.started)
        guard case .illegal = streaming.handle(.started) else { Issue.record("started twice"); return }
        #expect(streaming.state == .streaming, "an illegal event changes nothing")
        var closed = Self.lifecycle(.closed)
        guard case .illegal = closed.handle(.started) else { Issue.record("started after closing"); return }
        #expect(closed.state == .closed)
    }
}
