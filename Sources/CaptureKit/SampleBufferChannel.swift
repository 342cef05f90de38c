import Synchronization

/// The queue between the connection's thread, which yields each frame, and
/// one `sampleBuffers` iteration, which awaits them: an unbounded FIFO with at
/// most one waiting reader.
///
/// What `AsyncStream` does for this one element type, without its generic
/// storage: AsyncStream's buffer and continuation look up type metadata on
/// every yield and every `next()`, a measurable share of a frame's cost when
/// the frame itself costs nothing to read. Ends on `finish()` (frames still
/// queued are read first) or when the reading task is cancelled, as AsyncStream does.
final class SampleBufferChannel: Sendable {
    private struct State {
        /// Frames yielded and not yet read, oldest at `head`.
        var queue: [SampleBuffer] = []
        var head = 0
        var reader: UnsafeContinuation<SampleBuffer?, Never>?
        var finished = false

        mutating func pop() -> SampleBuffer? {
            guard head < queue.count else { return nil }
            let buffer = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            }
            return buffer
        }
    }
    private let state = Mutex(State())

    /// Queues a frame, or hands it to the waiting reader; dropped once finished.
    func yield(_ buffer: SampleBuffer) {
        let reader = state.withLock { state -> UnsafeContinuation<SampleBuffer?, Never>? in
            guard !state.finished else { return nil }
            guard let reader = state.reader else {
                state.queue.append(buffer)
                return nil
            }
            state.reader = nil
            return reader
        }
        reader?.resume(returning: buffer)
    }

    /// No more frames: the reader gets those queued, then nil.
    func finish() {
        let reader = state.withLock { state -> UnsafeContinuation<SampleBuffer?, Never>? in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    /// The next frame, waiting for it; nil once finished and read out, or
    /// once the reading task is cancelled. One reader at a time.
    func next(isolation actor: isolated (any Actor)? = #isolation) async -> SampleBuffer? {
        enum Ready { case buffer(SampleBuffer?), wait }
        let ready = state.withLock { state -> Ready in
            if let buffer = state.pop() { return .buffer(buffer) }
            return state.finished ? .buffer(nil) : .wait
        }
        if case .buffer(let buffer) = ready { return buffer }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<SampleBuffer?, Never>) in
                let ready = state.withLock { state -> Ready in
                    if let buffer = state.pop() { return .buffer(buffer) }
                    if state.finished { return .buffer(nil) }
                    precondition(state.reader == nil, "two tasks iterate one sampleBuffers iterator at once")
                    state.reader = continuation
                    return .wait
                }
                if case .buffer(let buffer) = ready { continuation.resume(returning: buffer) }
            }
        } onCancel: {
            finish()
        }
    }
}
