@testable import CameraDaemon
import Dispatch
import Synchronization
import Testing

/// A stream's messages are decided under the streamer's lock and sent after
/// it: the sink must still get every one, in the order decided, whichever
/// thread happens to send them.
@Suite struct StreamOutboxTests {
    /// Stands for the streamer's lock: the order of posts is the order under it.
    final class StreamerLock: Sendable {
        let next = Mutex<UInt64>(0)
    }

    @Test func messagesPostedFromManyThreadsReachTheSinkInTheOrderPosted() async {
        let sink = RecordingSink()
        let unsent = UnsentOutboxes()
        let outbox = StreamOutbox(sink: sink, copies: false, unsent: unsent)
        let streamerLock = StreamerLock()
        let threads = 4, each = 2000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<threads {
                group.addTask {
                    for _ in 0..<each {
                        let posted = streamerLock.next.withLock { next -> [StreamOutbox] in
                            next += 1
                            var drops = DropTally()
                            drops.add(.frameWasLate, count: 1, sequence: next)
                            outbox.post(.dropped(drops))
                            return unsent.take().outboxes
                        }
                        for outbox in posted { outbox.send() }
                    }
                }
            }
        }
        let sequences = sink.events.map { UInt64($0.split(separator: " ").last!)! }
        #expect(sequences == Array(1...UInt64(threads * each)), "every message once, in the order posted")
    }

    /// A copying stream's messages wait for the lock to be let go too: its
    /// end cancels its call's task, which must not happen under the
    /// streamer's lock (the lock-order checker's rule).
    @Test func aCopyingOutboxHandsNothingOverWhereItIsPosted() {
        let sink = RecordingSink()
        let unsent = UnsentOutboxes()
        let outbox = StreamOutbox(sink: sink, copies: true, unsent: unsent)
        outbox.post(.end(nil))
        #expect(sink.events.isEmpty)
        let posted = unsent.take().outboxes
        #expect(posted.count == 1)
        for outbox in posted { outbox.send() }
        #expect(sink.events == ["ended"])
    }
}
