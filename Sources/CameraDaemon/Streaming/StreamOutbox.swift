import Synchronization

/// A stream's messages in the order the streamer decided them under its lock,
/// handed to its sink once the lock is let go.
///
/// A FrameReady is a `sendmsg` that wakes the client, which on a small machine
/// takes the core from the sender at once. Sent under the streamer's lock, each
/// of those preemptions held the lock, and every ReleaseFrames on the event loop
/// spun and slept on it: per client, per frame. So the streamer only posts
/// under its lock (``post(_:)``), and ``DeviceStreamer/locked(_:)`` sends what
/// was posted after unlocking.
///
/// Order holds per stream: messages are posted in the order decided, and one
/// thread at a time sends them; a thread that finds another sending leaves its
/// messages to that one, which sends until none are left.
///
/// A copying stream's messages go at once, under the lock (``immediate``): its
/// sink may refuse a frame (its client too far behind to take another copy),
/// which the streamer counts as a drop there and then.
final class StreamOutbox: @unchecked Sendable {
    enum Message: Sendable {
        case started(StreamNews)
        case frame(PooledFrame)
        case dropped(DropTally)
        case formatChanged(StreamNews)
        case interrupted(StreamInterruption, CameraError)
        case end(CameraError?)
    }

    let sink: any FrameSink
    let immediate: Bool
    /// The streamer's list of outboxes with messages to send.
    private let unsent: UnsentOutboxes
    /// Whether this outbox is in `unsent`. Guarded by the streamer's lock.
    fileprivate var listed = false

    private struct Queue {
        var messages: [Message] = []
        var sending = false
    }
    private let queue = Mutex(Queue())

    init(sink: any FrameSink, immediate: Bool, unsent: UnsentOutboxes) {
        self.sink = sink
        self.immediate = immediate
        self.unsent = unsent
    }

    /// Posts a message, under the streamer's lock. False only when an
    /// immediate frame was refused by the sink.
    @discardableResult
    func post(_ message: Message) -> Bool {
        if immediate { return hand(message) }
        queue.withLock { $0.messages.append(message) }
        if !listed {
            listed = true
            unsent.outboxes.append(self)
        }
        return true
    }

    /// Sends what was posted, in order, with no lock of the streamer's held.
    func send() {
        let mine = queue.withLock { queue -> Bool in
            guard !queue.sending, !queue.messages.isEmpty else { return false }
            queue.sending = true
            return true
        }
        guard mine else { return }
        var batch: [Message] = []
        while true {
            queue.withLock { queue in
                swap(&batch, &queue.messages)
                if batch.isEmpty { queue.sending = false }
            }
            if batch.isEmpty { return }
            for message in batch { hand(message) }
            batch.removeAll(keepingCapacity: true)
        }
    }

    @discardableResult
    private func hand(_ message: Message) -> Bool {
        switch message {
        case .started(let news): sink.started(news)
        case .frame(let frame): return sink.frame(frame)
        case .dropped(let drops): sink.dropped(drops)
        case .formatChanged(let news): sink.formatChanged(news)
        case .interrupted(let reason, let error): sink.interrupted(reason, error)
        case .end(let error): sink.end(with: error)
        }
        return true
    }
}

/// The outboxes a streamer posted to since it last sent. Guarded by the
/// streamer's lock.
final class UnsentOutboxes: @unchecked Sendable {
    fileprivate(set) var outboxes: [StreamOutbox] = []

    /// Takes the list, under the streamer's lock.
    func take() -> [StreamOutbox] {
        guard !outboxes.isEmpty else { return [] }
        for outbox in outboxes { outbox.listed = false }
        defer { outboxes.removeAll(keepingCapacity: true) }
        return outboxes
    }
}

extension DeviceStreamer {
    /// Runs `body` under the streamer's lock, then sends the messages it
    /// posted to streams, the lock free. Every use of the lock goes through it.
    func locked<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        var outboxes: [StreamOutbox] = []
        defer { for outbox in outboxes { outbox.send() } }
        return try state.withLock { (state) throws(Failure) -> Result in
            defer { outboxes = unsent.take() }
            return try body(&state)
        }
    }
}
