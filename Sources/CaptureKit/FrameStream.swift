import CameraIPC
import CameraProtocol
import Foundation
import Synchronization

/// One Stream call, from CaptureKit's side: opens it, maps each pool it is sent
/// once, and turns frame messages into sample buffers whose slots go back to the
/// daemon when their last reference goes.
final class FrameStream: Sendable {
    /// What arrives on a stream.
    enum Event: Sendable {
        case frame(SampleBuffer)
        case dropped(SampleBuffer.DroppedFrameReason, count: Int, lastSequence: UInt64)
        /// New frames come from another pool; `modeNote` is set when the device's
        /// mode changed (nil when only the pool grew).
        case formatChanged(modeNote: String?)
    }

    let started: Camerad_V1_StreamStarted
    private let call: BidirectionalCall<Camerad_V1_StreamRequest, Camerad_V1_StreamResponse>
    private let pools: Mutex<[UInt64: MappedPool]>
    private let messages: MessageReader

    private init(
        call: BidirectionalCall<Camerad_V1_StreamRequest, Camerad_V1_StreamResponse>,
        started: Camerad_V1_StreamStarted, pool: MappedPool,
        messages: MessageStream<Camerad_V1_StreamResponse>.WithDescriptors.AsyncIterator
    ) {
        self.call = call
        self.started = started
        pools = Mutex([pool.id: pool])
        self.messages = MessageReader(iterator: messages)
    }

    /// Opens a stream and waits for the daemon to start it.
    static func open(_ request: Camerad_V1_OpenStream) async throws(CaptureError) -> FrameStream {
        let client = try await DaemonClient.shared.connection()
        return try await CaptureError.converting {
            let call = try client.bidirectional(CameraService.stream)
            var open = Camerad_V1_StreamRequest()
            open.open = request
            try call.send(open)
            var messages = call.responses.withDescriptors.makeAsyncIterator()
            guard let first = try await messages.next() else {
                throw CaptureError(.internalError, "camerad ended the stream before starting it")
            }
            guard case .started(let started)? = first.message.kind else {
                call.cancel()
                throw CaptureError(.internalError, "camerad's first stream message was not StreamStarted")
            }
            let pool = try MappedPool(started.pool, descriptors: first.descriptors)
            return FrameStream(call: call, started: started, pool: pool, messages: messages)
        }
    }

    /// The next event; nil when the stream ended cleanly.
    ///
    /// - Throws: the status the stream ended with (`deviceDisconnected`, `shuttingDown`...).
    func next() async throws(CaptureError) -> Event? {
        while true {
            let received: Received<Camerad_V1_StreamResponse>?
            do {
                received = try await messages.iterator.next()
            } catch {
                throw CaptureError(converting: error)
            }
            guard let received else { return nil }
            switch received.message.kind {
            case .frame(let frame):
                guard let pool = pools.withLock({ $0[frame.poolID] }) ?? (frame.data.isEmpty ? nil : MappedPool.inline) else {
                    throw CaptureError(.internalError, "frame of unknown pool \(frame.poolID)")
                }
                return .frame(SampleBuffer(frame, pool: pool, stream: self))
            case .dropped(let dropped):
                return .dropped(SampleBuffer.DroppedFrameReason(dropped.reason), count: Int(dropped.count),
                                lastSequence: dropped.lastSequence)
            case .formatChanged(let changed):
                let pool: MappedPool
                do {
                    pool = try MappedPool(changed.pool, descriptors: received.descriptors)
                } catch {
                    throw CaptureError(converting: error)
                }
                pools.withLock { $0[pool.id] = pool }
                guard changed.hasDevice else { return .formatChanged(modeNote: nil) }
                LiveDevices.shared.update(changed.device)
                return .formatChanged(modeNote: changed.note)
            case .interrupted, .started, nil:
                // The call's end follows and says why.
                continue
            }
        }
    }

    /// Gives a slot back to the daemon.
    func release(poolID: UInt64, slot: UInt32) {
        var request = Camerad_V1_StreamRequest()
        request.release.poolID = poolID
        request.release.slots = [slot]
        // If the call is over the daemon has taken the slots back already.
        try? call.send(request)
    }

    /// Ends the stream; its slots go back with it.
    func close() {
        call.finishSending()
        call.cancel()
    }
}

/// The stream's messages. One task reads them — the output's consumer — so the
/// iterator is never used concurrently.
private final class MessageReader: @unchecked Sendable {
    var iterator: MessageStream<Camerad_V1_StreamResponse>.WithDescriptors.AsyncIterator

    init(iterator: MessageStream<Camerad_V1_StreamResponse>.WithDescriptors.AsyncIterator) {
        self.iterator = iterator
    }
}

/// A frame pool mapped into this process.
final class MappedPool: Sendable {
    let id: UInt64
    let description: Camerad_V1_FramePool
    let memory: SharedMemory?

    /// A stand-in for inline frames, whose bytes come with their message.
    static let inline = MappedPool()

    private init() {
        id = 0
        description = Camerad_V1_FramePool()
        memory = nil
    }

    init(_ description: Camerad_V1_FramePool, descriptors: [OwnedFD]) throws {
        id = description.poolID
        self.description = description
        guard description.shared else {
            memory = nil
            return
        }
        guard Int(description.fdIndex) < descriptors.count else {
            throw CaptureError(.internalError, "camerad sent a pool without its memory")
        }
        memory = try SharedMemory(mapping: descriptors[Int(description.fdIndex)],
                                  size: Int(description.slotSize) * Int(description.slotCount))
    }

    func slot(_ index: UInt32, bytes: Int) -> UnsafeRawBufferPointer? {
        guard let memory, index < description.slotCount, bytes <= Int(description.slotSize) else { return nil }
        return UnsafeRawBufferPointer(start: memory.baseAddress + Int(index) * Int(description.slotSize), count: bytes)
    }
}
