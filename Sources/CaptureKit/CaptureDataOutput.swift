import CameraProtocol
import Dispatch
import Synchronization

/// What a video and an audio data output share: the ``sampleBuffers``
/// sequence and its readers, over the session's run. Each output adds its
/// settings and its delegate.
public class CaptureDataOutput: CaptureOutput, @unchecked Sendable {
    struct Readers {
        /// The iterations of ``sampleBuffers`` under way, by number.
        var channels: [UInt64: SampleBufferChannel] = [:]
        var nextID: UInt64 = 1
        /// The last run ended by itself while nobody iterated its buffers.
        var unseenRunEnded = false
    }
    let readers = Mutex(Readers())

    /// The frames (periods) of this output while its session runs, in order;
    /// dropped ones come as sample buffers without an image or data buffer and
    /// with `attachments.droppedFrameReason`. (AVFoundation has only the delegate.)
    ///
    /// Reading the property does nothing; iterating does. An iteration gets the
    /// frames that come from the moment it begins (`makeAsyncIterator()`, which
    /// `for await` calls) until it is dropped or the session stops, when it
    /// ends; a later run needs a new iteration. One begun while the session is
    /// stopped waits for the next run — unless the last run ended by itself
    /// (its device or the daemon went) while nobody iterated: then it ends at
    /// once, so code that begins just after starting sees the end instead of
    /// waiting for a run that is not coming. Several iterations each get every frame.
    ///
    /// Frames wait in an iteration until read, each holding one of the
    /// frames (periods) in flight the daemon lets this output have: an iteration
    /// that stops reading without ending stops the flow, to the delegate too.
    public var sampleBuffers: SampleBufferSequence { SampleBufferSequence(output: self) }

    /// ``sampleBuffers``: an output's frames, from when iteration begins.
    public struct SampleBufferSequence: AsyncSequence, Sendable {
        public typealias Element = SampleBuffer
        public typealias Failure = Never
        let output: CaptureDataOutput

        public func makeAsyncIterator() -> AsyncIterator {
            let channel = SampleBufferChannel()
            let id = output.readers.withLock { readers -> UInt64? in
                if readers.unseenRunEnded {
                    readers.unseenRunEnded = false
                    return nil
                }
                defer { readers.nextID += 1 }
                readers.channels[readers.nextID] = channel
                return readers.nextID
            }
            if id == nil { channel.finish() }
            return AsyncIterator(frames: channel, reader: Reader(output: output, id: id))
        }

        public struct AsyncIterator: AsyncIteratorProtocol {
            let frames: SampleBufferChannel
            /// Ends the iteration's registration when the iterator goes.
            let reader: Reader

            public mutating func next() async -> SampleBuffer? {
                await frames.next()
            }

            public mutating func next(isolation actor: isolated (any Actor)?) async -> SampleBuffer? {
                await frames.next(isolation: actor)
            }
        }

        /// One iteration's place among the output's readers: frames stop
        /// going to it (and those it still holds go back) once its iterator is gone.
        final class Reader: Sendable {
            let output: CaptureDataOutput
            let id: UInt64?

            init(output: CaptureDataOutput, id: UInt64?) {
                self.output = output
                self.id = id
            }

            deinit {
                guard let id else { return }
                output.readers.withLock { $0.channels.removeValue(forKey: id) }?.finish()
            }
        }
    }

    /// Where frames of ``sampleBuffers`` are read from camerad (Linux only):
    /// iterate inside `withTaskExecutorPreference(output.sampleBufferExecutor)`
    /// and each frame reaches the loop's body on the thread that read it from
    /// the socket, with no other thread woken for it — about half the CPU per
    /// frame of a loop on the global executor. That thread is CaptureKit's
    /// connection thread: the body may await anything but must not block (a
    /// blocking read or write there holds up every call and stream of the
    /// process); code isolated to an actor still runs on that actor.
    ///
    /// ```swift
    /// await withTaskExecutorPreference(output.sampleBufferExecutor) {
    ///     for await sample in output.sampleBuffers { measure(sample) }
    /// }
    /// ```
    public var sampleBufferExecutor: any TaskExecutor { DaemonClient.shared.loop }

    /// How an output's buffers travel, whatever its media: shared memory
    /// coming and going through the stream's rings (no message per buffer, no
    /// wake-up in camerad for a release), or inline; at most `inFlight` held.
    static func transport(inline: Bool, inFlight: Int) -> Camerad_V1_OutputSettings {
        var settings = Camerad_V1_OutputSettings()
        settings.delivery = inline ? .inline : .sharedMemory
        settings.releaseRing = !inline
        settings.frameRing = !inline
        settings.maxFramesInFlight = UInt32(inFlight)
        return settings
    }

    /// Calls `handler` with each of this output's sample buffers — frames or
    /// periods, and drops (no image or data buffer) — on CaptureKit's
    /// connection thread, synchronously, as each is read from camerad: no task
    /// resumed and no queue woken for it. The path of least CPU and latency,
    /// as PipeWire's `process` callback (a quarter to a third of a microphone
    /// listener's CPU less than ``sampleBuffers`` read on that thread). Beyond
    /// AVFoundation; Linux only.
    ///
    /// The handler must return quickly and never block: while it runs, no
    /// other call or stream of the process moves. A buffer's slot goes back to
    /// camerad when it is invalidated or let go of; one kept holds one of the
    /// output's frames in flight. It runs beside the delegate and any
    /// ``sampleBuffers`` iteration, which each get every buffer too; nil
    /// removes it.
    ///
    /// ```swift
    /// output.setSampleBufferHandler { sample in
    ///     meter.add(sample)   // quick, and never blocking
    ///     sample.invalidate()
    /// }
    /// ```
    public func setSampleBufferHandler(_ handler: (@Sendable (SampleBuffer) -> Void)?) {
        let boxed = handler.map(SampleBufferHandler.init)
        self.handler.withLock { $0 = boxed }
    }

    /// A handler, boxed: a closure kept in a Mutex itself is wrapped in a new
    /// thunk on every read.
    private final class SampleBufferHandler: Sendable {
        let call: @Sendable (SampleBuffer) -> Void
        init(_ call: @escaping @Sendable (SampleBuffer) -> Void) { self.call = call }
    }
    private let handler = Mutex<SampleBufferHandler?>(nil)

    /// Hands a buffer to the handler, then to every iteration under way.
    func yieldToReaders(_ buffer: SampleBuffer) {
        handler.withLock { $0 }?.call(buffer)
        for channel in readers.withLock({ $0.channels.values }) { channel.yield(buffer) }
    }

    override func sessionWillStart() {
        readers.withLock { $0.unseenRunEnded = false }
    }

    override func sessionDidStop(endedByItself: Bool) {
        let channels = readers.withLock { readers in
            defer { readers.channels = [:] }
            readers.unseenRunEnded = endedByItself && readers.channels.isEmpty
            return readers.channels.values
        }
        for channel in channels { channel.finish() }
    }
}

/// A data output's delegate (held weakly, as AVFoundation does) and the
/// serial queue it is called on, for the video and the audio output alike.
/// Unchecked Sendable: the delegate is called only on that queue, one call at
/// a time (AVFoundation's contract), so its adopter need not be `Sendable`.
struct SampleBufferDelegateBox: @unchecked Sendable {
    weak var delegate: (any CaptureDataOutputSampleBufferDelegate)?
    let queue: DispatchQueue
}
