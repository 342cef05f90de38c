import CaptureKit
import Foundation

/// Reads an output's sample buffers; a class, so closures can share it.
public final class FrameReader {
    private var iterator: CaptureVideoDataOutput.SampleBufferSequence.AsyncIterator

    /// Begins iterating `sequence` now: frames from now on wait here.
    public init(_ sequence: CaptureVideoDataOutput.SampleBufferSequence) {
        iterator = sequence.makeAsyncIterator()
    }

    /// The next sample buffer (a frame or a drop report); nil when the session stopped.
    public func next() async -> SampleBuffer? {
        await iterator.next()
    }

    /// The next frame, skipping drop reports.
    public func nextFrame() async throws -> SampleBuffer {
        while let sample = await next() {
            if sample.imageBuffer != nil { return sample }
        }
        throw DaemonFailure("the session stopped before a frame came")
    }

    /// Hands `body` the next `count` frames, each with how many frames the drop
    /// reports that came just before it stand for.
    ///
    /// - Returns: how many frames came (fewer when the session stopped).
    @discardableResult
    public func forEachFrame(
        _ count: Int, _ body: (_ frame: SampleBuffer, _ droppedBefore: Int) throws -> Void
    ) async rethrows -> Int {
        var frames = 0
        var dropped = 0
        while frames < count, let sample = await next() {
            guard sample.imageBuffer != nil else {
                dropped += sample.attachments.droppedFrameCount
                continue
            }
            frames += 1
            try body(sample, dropped)
            dropped = 0
        }
        return frames
    }
}

/// A session's events, as short names, collected as they come.
public final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String] = []
    private var task: Task<Void, Never>?

    public init(_ session: CaptureSession) {
        let events = session.events()
        task = Task { [weak self] in
            for await event in events {
                let name = switch event {
                case .didStartRunning: "started"
                case .didStopRunning: "stopped"
                case .wasInterrupted(let reason): "interrupted \(reason)"
                case .runtimeError(let error): "error \(error.code)"
                case .interruptionEnded: "interruption ended"
                }
                self?.lock.withLock { self?.seen.append(name) }
            }
        }
    }

    public var names: [String] { lock.withLock { seen } }

    /// Waits until every one of `names` has been seen.
    public func wait(for names: [String], timeout: Duration = .seconds(30)) async -> Bool {
        await waitUntil(timeout: timeout) { Set(names).isSubset(of: Set(self.names)) }
    }

    deinit { task?.cancel() }
}
