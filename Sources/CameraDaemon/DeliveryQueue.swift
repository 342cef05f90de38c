import CameraIPC

/// Messages posted in order under some lock and handed on once it is let go:
/// a waiter is never woken, nor a sink called, with a lock held (docs/ARCHITECTURE.md,
/// Lock order), and order still holds. One thread at a time hands messages on;
/// a thread that finds another doing so leaves its own to that one, which hands
/// on until none is left.
///
/// A stream's outbox (``StreamOutbox``) and the registry's broadcasts to its
/// watchers use it.
final class DeliveryQueue<Message: Sendable>: Sendable {
    private struct Queue {
        var messages: [Message] = []
        var delivering = false
    }
    private let queue: OrderedMutex<Queue>

    /// - Parameter level: where the queue's own lock stands (a leaf).
    init(_ level: LockLevel) {
        queue = OrderedMutex(level, Queue())
    }

    /// Queues a message, in order with every other posted.
    ///
    /// - Returns: whether none was waiting: the caller sees that ``deliver(_:)``
    ///   is called (one waiting is handed on by whoever posted it, or with it).
    @discardableResult
    func post(_ message: Message) -> Bool {
        queue.withLock { queue in
            defer { queue.messages.append(message) }
            return queue.messages.isEmpty
        }
    }

    /// Hands on what was posted, in order, with no lock held by the caller;
    /// returns at once when another thread is handing on (it takes these too).
    func deliver(_ hand: (Message) -> Void) {
        let mine = queue.withLock { queue -> Bool in
            guard !queue.delivering, !queue.messages.isEmpty else { return false }
            queue.delivering = true
            return true
        }
        guard mine else { return }
        var batch: [Message] = []
        while true {
            queue.withLock { queue in
                swap(&batch, &queue.messages)
                if batch.isEmpty { queue.delivering = false }
            }
            if batch.isEmpty { return }
            for message in batch { hand(message) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
