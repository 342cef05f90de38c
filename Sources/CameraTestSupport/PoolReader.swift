import CameraIPC
import CameraMedia
import CameraProtocol
import Foundation

/// A client of the raw protocol streaming one device in its own format with
/// the pool mapped as a C or Python client would: it checks each frame where
/// the pool says it lies, and can hold frames or die holding them.
public final class PoolReader: @unchecked Sendable {
    public struct Frame: Sendable {
        public let sequence: UInt64
        /// The check said its bytes are as the device made them.
        public let intact: Bool
        /// It lies in one of the device's buffers, not a slot of the pool's own.
        public let inDeviceBuffer: Bool
    }

    /// Whether a frame's bytes are as the device made them.
    public typealias Check = @Sendable (_ bytes: UnsafeRawBufferPointer, _ sequence: UInt64, _ pool: Camerad_V1_FramePool) -> Bool

    /// A virtual camera's frames: their stamps say their own sequence number.
    public static let stampsMatch: Check = { bytes, sequence, pool in
        let stamp = FrameStampDecoder.decode(frame: bytes, format: PixelFormat(fourcc: pool.fourcc),
                                             width: Int(pool.width), height: Int(pool.height)).stamp
        return stamp?.sequence == UInt32(truncatingIfNeeded: sequence)
    }

    public let device: String
    private let check: Check
    private let loop: EventLoop
    private let client: RPCClient
    private let call: BidirectionalCall<Camerad_V1_StreamRequest, Camerad_V1_StreamResponse>
    private var responses: ResponseStream<Camerad_V1_StreamResponse>.WithDescriptors.AsyncIterator
    private var pools: [UInt64: MappedFramePool] = [:]
    /// Where frames go back when the stream asked for a release ring.
    public private(set) var ring: ReleaseRing?
    /// Frames given back through the ring, and by ReleaseFrames.
    public private(set) var releasedThroughRing = 0
    public private(set) var releasedByMessage = 0
    /// The pool of the last frame read.
    public private(set) var pool: Camerad_V1_FramePool
    /// The slot of the last frame read.
    public private(set) var lastSlot: UInt32?

    /// Opens a stream of `device` in its own format; `framesInFlight` 0 is the daemon's default.
    public init(_ daemon: DaemonProcess, device: String, name: String, framesInFlight: UInt32 = 0, releaseRing: Bool = false,
                check: @escaping Check = PoolReader.stampsMatch) async throws {
        self.device = device
        self.check = check
        loop = try EventLoop(name: name)
        client = try await RPCClient.connect(to: daemon.socketPath, clientName: name, loop: loop)
        call = try client.bidirectional(CameraService.stream)
        var open = Camerad_V1_StreamRequest()
        open.open.uniqueID = device
        open.open.settings.maxFramesInFlight = framesInFlight
        open.open.settings.releaseRing = releaseRing
        try call.send(open)
        responses = call.responses.withDescriptors.makeAsyncIterator()
        guard let started = try await responses.next(), case .started(let news) = started.message.kind else {
            throw DaemonFailure("\(name): no StreamStarted")
        }
        pools[news.pool.poolID] = try MappedFramePool(news.pool, descriptors: started.descriptors)
        pool = news.pool
        if news.hasReleaseRing {
            ring = try ReleaseRing(mapping: started.descriptors[Int(news.releaseRing.fdIndex)], capacity: Int(news.releaseRing.capacity))
        }
    }

    /// The next `count` frames, each checked and, if `releasing`, given back.
    public func read(_ count: Int, releasing: Bool = true) async throws -> [Frame] {
        var frames: [Frame] = []
        while frames.count < count {
            guard let received = try await responses.next() else { throw DaemonFailure("\(device): the stream ended") }
            switch received.message.kind {
            case .frame(let frame):
                guard let mapped = pools[frame.poolID], let bytes = mapped.slot(frame.slot, bytes: Int(frame.bytesUsed)) else {
                    throw DaemonFailure("\(device): frame \(frame.sequence) lies outside its pool")
                }
                pool = mapped.description
                lastSlot = frame.slot
                let slots = mapped.description.slots
                frames.append(Frame(sequence: frame.sequence, intact: check(bytes, frame.sequence, mapped.description),
                                    inDeviceBuffer: !slots.isEmpty && slots[Int(frame.slot)].fdIndex != 0))
                if releasing {
                    if let ring, ring.push(poolID: frame.poolID, slot: frame.slot) {
                        releasedThroughRing += 1
                    } else {
                        var release = Camerad_V1_StreamRequest()
                        release.release.poolID = frame.poolID
                        release.release.slots = [frame.slot]
                        try call.send(release)
                        releasedByMessage += 1
                    }
                }
            case .formatChanged(let changed):
                pools[changed.pool.poolID] = try MappedFramePool(changed.pool, descriptors: received.descriptors)
            default:
                continue
            }
        }
        return frames
    }

    /// The device's statistics now: its first variant (the one streamed, when it is the only one).
    public func variant() async throws -> Camerad_V1_VariantStatistics {
        var request = Camerad_V1_GetDeviceStatisticsRequest()
        request.uniqueID = device
        guard let variant = try await client.unary(CameraService.getDeviceStatistics, request).variants.first else {
            throw DaemonFailure("\(device) makes no variant")
        }
        return variant
    }

    /// Gone, as a client killed: the daemon takes back all it held.
    public func close() {
        call.cancel()
        client.close()
        loop.stop()
    }
}
