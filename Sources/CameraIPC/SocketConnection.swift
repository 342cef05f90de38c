import Glibc
import Synchronization

/// Told of what arrives on a ``SocketConnection``. Called on its event loop.
public protocol SocketConnectionDelegate: AnyObject, Sendable {
    /// One complete frame's payload. Take the descriptors it owns from `descriptors`.
    ///
    /// - Throws: anything, to close the connection as broken.
    func connection(
        _ connection: SocketConnection, didReceive frame: [UInt8], descriptors: inout DescriptorQueue
    ) throws

    /// The connection is closed; nothing more arrives. `error` is nil for an
    /// orderly end (the peer closed, or ``SocketConnection/close(error:)`` without one).
    func connectionDidClose(_ connection: SocketConnection, error: (any Error)?)
}

/// One end of a framed Unix-socket connection: moves frames and file descriptors,
/// knows nothing of what they mean.
///
/// Reading happens on the event loop. ``send(_:descriptors:droppingAbove:)`` may be
/// called from any thread and never blocks: it writes what the socket takes now
/// and queues the rest for the loop. A peer that stops reading makes the queue
/// grow; past ``backlogLimit`` the connection is closed (or, for a droppable
/// message, the message is dropped), so a stalled peer never stalls its sender.
public final class SocketConnection: EventHandler, @unchecked Sendable, CustomStringConvertible {
    /// What became of a message given to ``send(_:descriptors:droppingAbove:)``.
    public enum SendResult: Equatable, Sendable {
        /// Handed to the kernel whole.
        case written
        /// Queued behind earlier messages or a full socket buffer; the loop writes it.
        case queued
        /// Not sent: the queue was over the caller's threshold.
        case dropped
        /// Not sent: the connection is closed (perhaps by this very call, for overflow).
        case closed
        /// Not sent: longer than a frame may be (``Frame/maxPayloadLength``).
        case tooLarge
    }

    /// The queue of unsent bytes past which the connection is closed: 8 MiB.
    public static let defaultBacklogLimit = 8 * 1024 * 1024

    public let socket: OwnedFD
    public let loop: EventLoop
    /// The process at the other end.
    public let peer: PeerCredentials
    public let backlogLimit: Int
    /// The most received descriptors that may wait for their message.
    public let maxDescriptors: Int
    /// Where the descriptors received are closed; nil: where they are let go.
    private let closer: DescriptorCloser?

    // Read side: touched only on the loop.
    private var decoder: FrameDecoder
    /// Bytes read from the socket so far.
    private var receivedByteCount = 0
    private var descriptors = DescriptorQueue()
    private var delegate: (any SocketConnectionDelegate)?
    private let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    private let controlBuffer: UnsafeMutableRawBufferPointer

    private struct WriteState {
        var pending: [PendingWrite] = []
        var head = 0
        var queuedBytes = 0
        var registration: EventLoop.Registration?
        var waitingForWritable = false
        var closed = false
        var closeWhenFlushed = false
    }
    private let writeState = OrderedMutex(.connectionWrites, WriteState())
    /// `WriteState.closed`, readable without the lock, which a sender holds
    /// across its sendmsg: the reader checks it between every two frames.
    private let closed = Atomic(false)

    /// Wraps a connected socket; reads nothing until ``start(delegate:)``.
    ///
    /// - Parameters:
    ///   - maxFrameLength: the longest frame the peer may send; a longer one
    ///     closes the connection (``FramingError/frameTooLarge(length:limit:)``).
    ///   - maxDescriptors: the most descriptors that may wait for their message;
    ///     more close the connection (``FramingError/tooManyDescriptors(count:limit:)``).
    ///     0 takes none: the kernel drops those the peer sends, never opened in
    ///     this process, and a message that says it carries some closes the
    ///     connection (``FramingError/missingDescriptors(claimed:available:)``).
    ///   - closesDescriptorsAside: the descriptors received close on a thread
    ///     of the peer's user's pool, one after another (``DescriptorCloser``):
    ///     a server's, whose peers may send files whose close would wait on
    ///     their server.
    public init(
        socket: OwnedFD, loop: EventLoop, backlogLimit: Int = SocketConnection.defaultBacklogLimit,
        maxFrameLength: Int = Frame.maxPayloadLength, maxDescriptors: Int = DescriptorQueue.limit,
        closesDescriptorsAside: Bool = false
    ) throws {
        try socket.setNonBlocking()
        self.socket = socket
        self.loop = loop
        self.backlogLimit = backlogLimit
        self.maxDescriptors = maxDescriptors
        decoder = FrameDecoder(maxPayloadLength: maxFrameLength)
        self.peer = try PeerCredentials(of: socket)
        closer = closesDescriptorsAside ? DescriptorCloser(user: peer.uid) : nil
        controlBuffer = .allocate(
            byteCount: maxDescriptors == 0 ? 0 : SCMRights.controlSpace(for: SCMRights.maxDescriptorsPerMessage), alignment: 8)
    }

    deinit {
        receiveBuffer.deallocate()
        controlBuffer.deallocate()
    }

    public var description: String { "connection \(socket.rawValue) (\(peer))" }

    /// Starts reading; `delegate` is kept until the connection closes.
    public func start(delegate: any SocketConnectionDelegate) throws(SystemError) {
        self.delegate = delegate
        let registration = try loop.register(socket.rawValue, events: [.readable], handler: self)
        let flush = writeState.withLock { state -> Bool in
            state.registration = registration
            return state.head < state.pending.count
        }
        if flush { flushPending() }
    }

    /// Whether the connection has closed.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Bytes given to ``send(_:descriptors:droppingAbove:)`` and not yet written.
    public var queuedByteCount: Int { writeState.withLock { $0.queuedBytes } }

    /// Sends one frame, with `descriptors` riding on its first byte.
    ///
    /// - Parameter threshold: when set and more than this many bytes are already
    ///   queued, the message is dropped instead of queued (`.dropped`). Use it for
    ///   messages that lose nothing by being skipped, such as a superseded frame.
    public func send(
        _ payload: some Collection<UInt8>, descriptors: [OwnedFD] = [], droppingAbove threshold: Int? = nil
    ) -> SendResult {
        if let result = payload.withContiguousStorageIfAvailable({ payload in
            send(UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(payload),
                 descriptors: descriptors, droppingAbove: threshold)
        }) {
            return result
        }
        return Array(payload).withUnsafeBytes { send(UnsafeRawBufferPointer(start: nil, count: 0), $0, descriptors: descriptors,
                                                     droppingAbove: threshold) }
    }

    /// Sends one frame whose payload is `head` and then `body` (an envelope's
    /// prefix and a payload shared by many connections, say), with
    /// `descriptors` riding on its first byte.
    ///
    /// With nothing queued before it, the frame goes straight from the caller's
    /// bytes to the kernel, copied nowhere; only what the socket does not take
    /// at once is copied, to wait for the socket to drain.
    public func send(
        _ head: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer, descriptors: [OwnedFD] = [],
        droppingAbove threshold: Int? = nil
    ) -> SendResult {
        let length = head.count + body.count
        guard length <= Frame.maxPayloadLength, descriptors.count <= SCMRights.maxDescriptorsPerMessage else {
            return .tooLarge
        }
        var overflow = false
        var failure: SystemError?
        let result = writeState.withLock { state -> SendResult in
            // Closing after a flush takes nothing new: only the loop drains the queue then.
            guard !state.closed, !state.closeWhenFlushed else { return .closed }
            if let threshold, state.queuedBytes > threshold { return .dropped }
            if state.queuedBytes + Frame.headerLength + length > backlogLimit {
                overflow = true
                return .closed
            }
            var written = 0
            if state.head == state.pending.count, state.registration != nil {
                let prefix = UInt32(length).bigEndian
                let sent = withUnsafeBytes(of: prefix) { prefix in
                    Result { () throws(SystemError) in try SCMRights.send(prefix, head, body, descriptors: descriptors, on: socket) }
                }
                switch sent {
                case .success(let count): written = count
                case .failure(let error) where error.wouldBlock: break
                case .failure(let error):
                    failure = error
                    return .closed
                }
                if written == Frame.headerLength + length { return .written }
            }
            // The rest waits for the socket to drain; the descriptors went with the first byte.
            let write = PendingWrite(head: head, body: body, descriptors: written > 0 ? [] : descriptors)
            write.advance(by: written)
            state.pending.append(write)
            state.queuedBytes += write.remaining
            watchWritability(&state)
            return .queued
        }
        if overflow {
            close(error: BacklogExceeded(limit: backlogLimit))
        } else if let failure {
            writeFailed(failure)
            return .closed
        }
        return result
    }

    /// A write failed. When the peer is gone, what it sent before it went (its
    /// reason for going, say) is still to be read: that is delivered first.
    private func writeFailed(_ error: SystemError) {
        guard error.errno == EPIPE || error.errno == ECONNRESET else {
            close(error: error)
            return
        }
        loop.execute { [self] in
            readAvailable()
            close(error: error)
        }
    }

    /// Closes the connection: unsent data is dropped, the peer sees end-of-file,
    /// and the delegate hears ``SocketConnectionDelegate/connectionDidClose(_:error:)``
    /// on the loop. Calling it again does nothing.
    public func close(error: (any Error)? = nil) {
        let registration = writeState.withLock { state -> EventLoop.Registration?? in
            guard !state.closed else { return .none }
            state.closed = true
            closed.store(true, ordering: .releasing)
            state.pending.removeAll()
            state.head = 0
            state.queuedBytes = 0
            return .some(state.registration)
        }
        guard case .some(let registration) = registration else { return }
        Syscall.shutdown(socket.rawValue, Int32(SHUT_RDWR))
        loop.execute { [self] in
            if let registration { loop.deregister(registration) }
            descriptors.removeAll()
            let delegate = self.delegate
            self.delegate = nil
            delegate?.connectionDidClose(self, error: error)
        }
    }

    /// Closes the connection once everything queued is written (or at once if
    /// nothing is). Later sends are refused (`.closed`).
    public func closeAfterFlushing() {
        let idle = writeState.withLock { state -> Bool in
            state.closeWhenFlushed = true
            return state.head == state.pending.count
        }
        if idle { close() }
    }

    // MARK: - Event loop side

    public func handleEvents(_ events: EventLoop.Events) {
        if !events.isDisjoint(with: [.readable, .hangup, .error]) { readAvailable() }
        if events.contains(.writable) { flushPending() }
    }

    private func flushPending() {
        var failure: SystemError?
        let done = writeState.withLock { state -> Bool in
            guard !state.closed else { return false }
            failure = flushLocked(&state)
            return state.closeWhenFlushed && state.head == state.pending.count
        }
        if let failure {
            writeFailed(failure)
        } else if done {
            close()
        }
    }

    /// Reads until the socket is empty (a short read says so), or a fair share for one wake-up.
    private func readAvailable() {
        for _ in 0..<16 {
            guard delegate != nil else { return }
            let received: SCMRights.Received
            do {
                guard let result = try SCMRights.receive(on: socket, into: receiveBuffer, control: controlBuffer,
                                                          closer: closer) else {
                    return  // EAGAIN
                }
                received = result
            } catch {
                close(error: error)
                return
            }
            receivedByteCount += received.byteCount
            if let closer, !received.descriptors.isEmpty, closer.userBacklog > DescriptorCloser.backlogPerUser {
                close(error: FramingError.closesBehind(count: closer.userBacklog, limit: DescriptorCloser.backlogPerUser))
                return
            }
            for descriptor in received.descriptors { descriptors.append(descriptor, arrivedBy: receivedByteCount) }
            if received.truncated && maxDescriptors > 0 {
                close(error: FramingError.descriptorsTruncated)
                return
            }
            if descriptors.count > maxDescriptors {
                close(error: FramingError.tooManyDescriptors(count: descriptors.count, limit: maxDescriptors))
                return
            }
            if received.byteCount == 0 {
                close()
                return
            }
            decoder.append(UnsafeRawBufferPointer(rebasing: receiveBuffer[..<received.byteCount]))
            do {
                while let delegate, !isClosed, let frame = try decoder.nextFrame() {
                    try delegate.connection(self, didReceive: frame, descriptors: &descriptors)
                    descriptors.closeUnclaimed(arrivedBy: decoder.consumedByteCount)
                }
            } catch {
                close(error: error)
                return
            }
            // A short read took all there was: the loop (level-triggered) says
            // when more comes, without a read here that finds nothing.
            if received.byteCount < receiveBuffer.count { return }
        }
    }

    /// Writes as much as the socket takes; arms or disarms the writable event.
    private func flushLocked(_ state: inout WriteState) -> SystemError? {
        while state.head < state.pending.count {
            let written: Int
            do {
                written = try SCMRights.send(state.pending[state.head...], on: socket)
            } catch where error.wouldBlock {
                break
            } catch {
                return error
            }
            state.queuedBytes -= written
            var remaining = written
            var index = state.head
            while remaining > 0 {
                let write = state.pending[index]
                let taken = min(remaining, write.remaining)
                write.advance(by: taken)
                remaining -= taken
                index += 1
            }
            while state.head < state.pending.count && state.pending[state.head].remaining == 0 {
                state.head += 1
            }
        }
        if state.head == state.pending.count {
            state.pending.removeAll(keepingCapacity: true)
            state.head = 0
        } else if state.head > 64 {
            state.pending.removeSubrange(0..<state.head)
            state.head = 0
        }
        watchWritability(&state)
        return nil
    }

    /// Asks the loop to say when the socket is writable while anything is queued, and not otherwise.
    private func watchWritability(_ state: inout WriteState) {
        let wantWritable = state.head < state.pending.count
        if wantWritable != state.waitingForWritable, let registration = state.registration {
            state.waitingForWritable = wantWritable
            loop.modify(registration, events: wantWritable ? [.readable, .writable] : [.readable])
        }
    }
}

/// The connection was closed because its peer did not read: more than `limit`
/// bytes were waiting to be written to it.
public struct BacklogExceeded: Error, CustomStringConvertible {
    public let limit: Int
    public var description: String { "peer stopped reading: more than \(limit) bytes queued for it" }
}
