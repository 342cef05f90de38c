import CameraIPC

/// A stream's messages in the order the streamer decided them under its lock,
/// handed to its sink once the lock is let go.
///
/// A FrameReady is a `sendmsg` that wakes the client, which on a small machine
/// takes the core from the sender at once. Sent under the streamer's lock, each
/// of those preemptions held the lock, and every ReleaseFrames on the event loop
/// spun and slept on it: per client, per frame. And a stream's end cancels its
/// call's task, whose handlers wake waiters: never under a lock. So the streamer
/// only posts under its lock (``post(_:)``), and ``DeviceStreamer/locked(_:)``
/// sends what was posted after unlocking, in order (``DeliveryQueue``).
///
/// A copying stream's frame is copied as it is posted (the slot may be written
/// again once the lock is let go); a copy its sink refuses (its client too far
/// behind to take another) is reported dropped, late, right after it.
///
/// A stream with a frame ring (``FrameAnnouncer``) gets its frames and drops
/// written there, under the lock, and its news both there (a news record) and
/// here; its client's signal is raised once the lock is let go, once for all
/// the streams of that user.
final class StreamOutbox: Sendable {
    enum Message: Sendable {
        // News boxed: a message is copied with every frame posted, and news is rare.
        indirect case started(StreamNews)
        case frame(FrameHandle)
        case dropped(DropTally)
        indirect case formatChanged(StreamNews)
        case interrupted(StreamInterruption, CameraError)
        case end(CameraError?)
    }

    let sink: any FrameSink
    /// Whether its frames are copied into its messages (``StreamOptions/inline``).
    let copies: Bool
    /// Where frames are announced under the lock instead of sent after it (a
    /// client's frame ring: ``FrameSink/announcer``).
    let announcer: (any FrameAnnouncing)?
    /// The streamer's list of outboxes with messages to send.
    private let unsent: UnsentOutboxes
    private let queue = DeliveryQueue<Message>(.streamOutbox)

    init(sink: any FrameSink, copies: Bool, unsent: UnsentOutboxes) {
        self.sink = sink
        self.copies = copies
        self.unsent = unsent
        announcer = sink.announcer
    }

    /// Posts a message, under the streamer's lock. False when a frame found no
    /// room in the frame ring (late).
    @discardableResult
    func post(_ message: Message) -> Bool {
        if copies, case .frame(let handle) = message {
            enqueue(.frame(handle.copied()))
            return true
        }
        if let announcer {
            switch message {
            case .frame(let handle):
                guard announcer.frame(handle.frame) else { return false }
                unsent.raise(announcer.signal)
                return true
            case .dropped(let drops):
                if announcer.dropped(drops) { unsent.raise(announcer.signal) }
                return true
            case .formatChanged:
                // Its record waits for room if need be: frames wait behind it.
                if announcer.news() { unsent.raise(announcer.signal) }
            case .interrupted:
                // The end follows: the client reads the message then if the ring had no room.
                if announcer.news() { unsent.raise(announcer.signal) }
            case .end:
                // Drops that never found room go ahead of the end, as messages.
                let drops = announcer.takeWaiting()
                if !drops.isEmpty { enqueue(.dropped(drops)) }
            case .started:
                break
            }
        }
        enqueue(message)
        return true
    }

    /// Queues a message for ``send()``, under the streamer's lock.
    private func enqueue(_ message: Message) {
        // The first waiting: listed, so that the streamer sends once its lock is let go.
        if queue.post(message) { unsent.list(self) }
    }

    /// Sends what was posted, in order, with no lock of the streamer's held.
    func send() {
        queue.deliver { message in
            switch message {
            case .started(let news): sink.started(news)
            case .frame(let handle):
                // A shared frame a sink refuses is gone with its call; a copy, late.
                if !sink.frame(handle), copies {
                    var late = DropTally()
                    late.add(.frameWasLate, count: 1, sequence: handle.frame.sequence)
                    sink.dropped(late)
                }
            case .dropped(let drops): sink.dropped(drops)
            case .formatChanged(let news): sink.formatChanged(news)
            case .interrupted(let reason, let error): sink.interrupted(reason, error)
            case .end(let error): sink.end(with: error)
            }
        }
    }
}

/// The outboxes a streamer posted to since it last sent, and the frame
/// signals of rings it wrote to: filled under the streamer's lock, taken at
/// its end (``DeviceStreamer/locked(_:)``).
final class UnsentOutboxes: Sendable {
    private struct Lists {
        var outboxes: [StreamOutbox] = []
        var signals: [FrameSignal] = []
    }
    private let lists = OrderedMutex(.unsentOutboxes, Lists())

    /// An outbox with a first message waiting.
    func list(_ outbox: StreamOutbox) {
        lists.withLock { $0.outboxes.append(outbox) }
    }

    /// A signal to raise once the lock is let go (once, however many rings it wakes).
    func raise(_ signal: FrameSignal) {
        lists.withLock { lists in
            if !lists.signals.contains(where: { $0 === signal }) { lists.signals.append(signal) }
        }
    }

    /// Takes the lists, under the streamer's lock.
    func take() -> (outboxes: [StreamOutbox], signals: [FrameSignal]) {
        lists.withLock { lists in
            guard !lists.outboxes.isEmpty || !lists.signals.isEmpty else { return ([], []) }
            defer {
                lists.outboxes.removeAll(keepingCapacity: true)
                lists.signals.removeAll(keepingCapacity: true)
            }
            return (lists.outboxes, lists.signals)
        }
    }
}

extension UnsentOutboxes {
    /// Runs `body` under a node's `lock`, then raises the frame signals of the
    /// rings it wrote to and sends the messages it posted to subscriptions,
    /// the lock free. Every use of a node's lock goes through it.
    func locked<Value: Sendable, Result, Failure: Error>(
        _ lock: borrowing OrderedMutex<Value>, _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var unsent: (outboxes: [StreamOutbox], signals: [FrameSignal]) = ([], [])
        defer {
            for signal in unsent.signals { signal.raise() }
            for outbox in unsent.outboxes { outbox.send() }
        }
        return try lock.withLock { (value) throws(Failure) -> Result in
            defer { unsent = take() }
            return try body(&value)
        }
    }
}

extension DeviceStreamer {
    /// Runs `body` under the streamer's lock; what it posted is sent once the
    /// lock is let go (``UnsentOutboxes/locked(_:_:)``).
    func locked<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        try unsent.locked(state, body)
    }
}
