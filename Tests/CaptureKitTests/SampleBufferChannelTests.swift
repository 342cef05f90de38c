@testable import CaptureKit
import Testing

/// The queue behind a `sampleBuffers` iteration: in order, nothing lost
/// between a yield and a waiting reader, the end after what was queued, and
/// the end when the reading task is cancelled, as AsyncStream ends.
@Suite struct SampleBufferChannelTests {
    static func buffer(_ sequence: UInt64) -> SampleBuffer {
        SampleBuffer(dropped: .frameWasLate, count: 1, lastSequence: sequence)
    }

    @Test func framesYieldedFromAnotherThreadWhileTheReaderWaitsArriveInOrder() async {
        let channel = SampleBufferChannel()
        let writer = Task.detached {
            for sequence in 0..<5000 as Range<UInt64> {
                channel.yield(Self.buffer(sequence))
                if sequence % 64 == 0 { await Task.yield() }
            }
            channel.finish()
        }
        var read: [UInt64] = []
        while let buffer = await channel.next() { read.append(buffer.sequenceNumber) }
        await writer.value
        #expect(read == Array(0..<5000))
    }

    @Test func finishingEndsAfterWhatWasQueuedAndDropsLaterFrames() async {
        let channel = SampleBufferChannel()
        channel.yield(Self.buffer(1))
        channel.yield(Self.buffer(2))
        channel.finish()
        channel.yield(Self.buffer(3))
        #expect(await channel.next()?.sequenceNumber == 1)
        #expect(await channel.next()?.sequenceNumber == 2)
        #expect(await channel.next() == nil)
        #expect(await channel.next() == nil)
    }

    @Test func cancellingTheReadingTaskEndsAWaitingRead() async {
        let channel = SampleBufferChannel()
        let reader = Task { await channel.next() }
        reader.cancel()
        #expect(await reader.value == nil)
        channel.yield(Self.buffer(1))
        #expect(await channel.next() == nil, "cancelled: finished for good, as AsyncStream")
    }
}
