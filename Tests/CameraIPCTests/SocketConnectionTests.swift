import CameraIPC
import CameraTestSupport
import Glibc
import Synchronization
import Testing

/// Records what a connection delivers; claims `claim` descriptors per frame.
final class RecordingDelegate: SocketConnectionDelegate, @unchecked Sendable {
    struct Received {
        var payload: [UInt8]
        var descriptors: [OwnedFD]
    }

    private let state = Mutex<(frames: [Received], closed: Bool, error: String?)>(([], false, nil))
    let claim: @Sendable ([UInt8]) -> Int

    init(claim: @escaping @Sendable ([UInt8]) -> Int = { _ in 0 }) {
        self.claim = claim
    }

    func connection(_ connection: SocketConnection, didReceive frame: [UInt8], descriptors: inout DescriptorQueue) throws {
        let taken = try descriptors.take(claim(frame))
        state.withLock { $0.frames.append(Received(payload: frame, descriptors: taken)) }
    }

    func connectionDidClose(_ connection: SocketConnection, error: (any Error)?) {
        state.withLock {
            $0.closed = true
            $0.error = error.map { "\($0)" }
        }
    }

    var frames: [Received] { state.withLock { $0.frames } }
    var isClosed: Bool { state.withLock { $0.closed } }
    var closeError: String? { state.withLock { $0.error } }

    func wait(until condition: @escaping (RecordingDelegate) -> Bool, timeout: Duration = .seconds(30)) async -> Bool {
        await waitUntil(timeout: timeout, every: .milliseconds(2)) { condition(self) }
    }
}

/// Two connections joined by a socketpair, on one event loop.
struct ConnectionPair {
    let loop: EventLoop
    let a: SocketConnection
    let b: SocketConnection
    let aDelegate: RecordingDelegate
    let bDelegate: RecordingDelegate

    /// - Parameter bTakes: the most descriptors `b` lets wait for their message (0: none).
    init(backlogLimit: Int = SocketConnection.defaultBacklogLimit, bTakes: Int = DescriptorQueue.limit,
         claim: @escaping @Sendable ([UInt8]) -> Int = { _ in 0 }) throws {
        loop = try EventLoop(name: "test")
        let (left, right) = try UnixSocket.pair()
        a = try SocketConnection(socket: left, loop: loop, backlogLimit: backlogLimit)
        b = try SocketConnection(socket: right, loop: loop, backlogLimit: backlogLimit, maxDescriptors: bTakes)
        aDelegate = RecordingDelegate()
        bDelegate = RecordingDelegate(claim: claim)
        try a.start(delegate: aDelegate)
        try b.start(delegate: bDelegate)
    }

    func close() async {
        a.close()
        b.close()
        _ = await aDelegate.wait { $0.isClosed }
        _ = await bDelegate.wait { $0.isClosed }
        loop.stop()
    }
}

@Suite struct SocketConnectionTests {
    @Test func framesArriveInOrderAndWhole() async throws {
        let pair = try ConnectionPair()
        let payloads = (0..<500).map { index in [UInt8](repeating: UInt8(index % 256), count: index * 37 % 5000) }
        for payload in payloads { #expect(pair.a.send(payload) != .closed) }
        #expect(await pair.bDelegate.wait { $0.frames.count == payloads.count })
        #expect(pair.bDelegate.frames.map(\.payload) == payloads)
        await pair.close()
    }

    @Test func descriptorsTravelWithTheirFrameAndShareTheFile() async throws {
        let pair = try ConnectionPair(claim: { frame in Int(frame[0]) })
        let memory = try SharedMemory(name: "test", size: 4096)
        memory.bytes.storeBytes(of: 0xC0FFEE, as: UInt32.self)
        #expect(pair.a.send([0, 9]) != .closed)
        #expect(pair.a.send([2], descriptors: [memory.descriptor, try memory.descriptor.duplicate()]) != .closed)
        #expect(pair.a.send([1, 5], descriptors: [memory.descriptor]) != .closed)
        #expect(await pair.bDelegate.wait { $0.frames.count == 3 })

        let frames = pair.bDelegate.frames
        #expect(frames.map(\.descriptors.count) == [0, 2, 1])
        for descriptor in frames.flatMap(\.descriptors) {
            #expect(descriptor.rawValue != memory.descriptor.rawValue)
            #expect(fcntl(descriptor.rawValue, F_GETFD) & FD_CLOEXEC != 0, "received descriptors are close-on-exec")
            let mapped = try SharedMemory(mapping: descriptor, size: 4096)
            #expect(mapped.bytes.load(as: UInt32.self) == 0xC0FFEE)
        }
        await pair.close()
    }

    /// Descriptors ride with their message's first byte, so once a message is
    /// read, any it did not claim can belong to no later one: they are closed
    /// at once, not kept for the life of the connection.
    @Test func unclaimedDescriptorsAreClosedOnceTheirMessageIsRead() async throws {
        let name = "unclaimed-\(UInt64.random(in: 0...UInt64.max))"
        let pair = try ConnectionPair()  // claims nothing
        let memory = try SharedMemory(name: name, size: 4096)
        let target = try #require(descriptorTarget(memory.descriptor.rawValue))
        for _ in 0..<10 { _ = pair.a.send([1], descriptors: [memory.descriptor]) }
        #expect(await pair.bDelegate.wait { $0.frames.count == 10 })
        #expect(openFileDescriptors().filter { descriptorTarget($0) == target } == [memory.descriptor.rawValue],
                "only the sender's own is open")
        #expect(!pair.b.isClosed)
        await pair.close()
    }

    /// A connection that takes no descriptors (camerad's, where the kernel
    /// cannot refuse them at the sender) never opens those sent: the kernel
    /// drops them, so it never has to close a file its peer chose. Its frames
    /// still arrive, and one that claims descriptors closes it.
    @Test func aConnectionThatTakesNoDescriptorsNeverOpensThoseSent() async throws {
        let name = "refused-\(UInt64.random(in: 0...UInt64.max))"
        let pair = try ConnectionPair(bTakes: 0)
        let memory = try SharedMemory(name: name, size: 4096)
        let target = try #require(descriptorTarget(memory.descriptor.rawValue))
        for _ in 0..<10 { _ = pair.a.send([1], descriptors: [memory.descriptor, memory.descriptor]) }
        #expect(await pair.bDelegate.wait { $0.frames.count == 10 })
        #expect(openFileDescriptors().filter { descriptorTarget($0) == target } == [memory.descriptor.rawValue],
                "only the sender's own is open")
        #expect(!pair.b.isClosed)
        let claiming = try ConnectionPair(bTakes: 0, claim: { _ in 1 })
        _ = claiming.a.send([1], descriptors: [memory.descriptor])
        #expect(await claiming.bDelegate.wait { $0.isClosed })
        #expect(claiming.bDelegate.closeError?.contains("claims 1") == true, "\(claiming.bDelegate.closeError ?? "")")
        await claiming.close()
        await pair.close()
    }

    /// Several messages in one sendmsg: each message's descriptors still reach
    /// it, not an earlier one, however the receiver's reads split the bytes.
    @Test func descriptorsReachTheirOwnMessageAmongMany() async throws {
        let pair = try ConnectionPair(claim: { $0.count == 1 ? 1 : 0 })
        let memories = try (0..<20).map { try SharedMemory(name: "own-\($0)", size: 4096) }
        for (index, memory) in memories.enumerated() {
            memory.bytes.storeBytes(of: UInt32(index), as: UInt32.self)
            // Every third message carries a descriptor; the others are large, so reads split them.
            if index % 3 == 0 {
                _ = pair.a.send([UInt8(index)], descriptors: [memory.descriptor])
            } else {
                _ = pair.a.send([UInt8](repeating: UInt8(index), count: 100_000))
            }
        }
        #expect(await pair.bDelegate.wait { $0.frames.count == 20 })
        for frame in pair.bDelegate.frames where frame.descriptors.count == 1 {
            let mapped = try SharedMemory(mapping: frame.descriptors[0], size: 4096)
            #expect(Int(mapped.bytes.load(as: UInt32.self)) == Int(frame.payload[0]), "message \(frame.payload[0])'s own memfd")
        }
        #expect(pair.bDelegate.frames.filter { $0.descriptors.count == 1 }.count == 7)
        await pair.close()
    }

    /// A frame sent as a prefix and a shared body (an envelope and a frame
    /// for many clients) arrives as one, whole, its descriptors with it —
    /// also when the socket takes only part of it at once and the rest waits.
    @Test func aFrameSentInTwoPartsArrivesAsOne() async throws {
        let pair = try ConnectionPair(claim: { $0[0] == 1 ? 1 : 0 })
        let memory = try SharedMemory(name: "two-parts", size: 4096)
        memory.bytes.storeBytes(of: 0xFEED, as: UInt32.self)
        var expected: [[UInt8]] = []
        for index in 0..<12 {
            let head: [UInt8] = [UInt8(index % 2), UInt8(index)]
            // Larger than the socket's buffer every fourth time: written in pieces.
            let body = [UInt8](repeating: UInt8(0x40 + index), count: index % 4 == 3 ? 600_000 : 100 + index)
            let descriptors = index % 2 == 1 ? [memory.descriptor] : []
            let result = head.withUnsafeBytes { head in
                body.withUnsafeBytes { pair.a.send(head, $0, descriptors: descriptors) }
            }
            #expect(result == .written || result == .queued)
            expected.append(head + body)
        }
        #expect(await pair.bDelegate.wait { $0.frames.count == expected.count })
        #expect(pair.bDelegate.frames.map(\.payload) == expected)
        for frame in pair.bDelegate.frames {
            #expect(frame.descriptors.count == Int(frame.payload[0]), "frame \(frame.payload[1])'s descriptors")
            if let descriptor = frame.descriptors.first {
                let mapped = try SharedMemory(mapping: descriptor, size: 4096)
                #expect(mapped.bytes.load(as: UInt32.self) == 0xFEED)
            }
        }
        await pair.close()
    }

    @Test func aPeerThatSendsMoreDescriptorsThanItsFramesClaimIsCutOff() async throws {
        let pair = try ConnectionPair()
        let memory = try SharedMemory(name: "flood", size: 4096)
        let descriptors = (0..<200).map { _ in memory.descriptor }
        for _ in 0..<6 { _ = pair.a.send([1], descriptors: descriptors) }
        #expect(await pair.bDelegate.wait { $0.isClosed })
        #expect(pair.bDelegate.closeError?.contains("file descriptors") == true)
        await pair.close()
    }

    @Test func aFrameClaimingDescriptorsThatDidNotArriveClosesTheConnection() async throws {
        let pair = try ConnectionPair(claim: { _ in 3 })
        _ = pair.a.send([1])
        #expect(await pair.bDelegate.wait { $0.isClosed })
        #expect(pair.bDelegate.closeError?.contains("claims 3") == true)
        await pair.close()
    }

    /// A send that blocked would never return here (nothing reads `right`).
    @Test(.timeLimit(.minutes(4))) func aPeerThatStopsReadingIsClosedWhenTheBacklogOverflows() async throws {
        let loop = try EventLoop(name: "test")
        let (left, right) = try UnixSocket.pair()
        let writer = try SocketConnection(socket: left, loop: loop, backlogLimit: 1 << 20)
        let writerDelegate = RecordingDelegate()
        try writer.start(delegate: writerDelegate)
        // `right` is never read.
        let chunk = [UInt8](repeating: 1, count: 64 * 1024)
        var results: [SocketConnection.SendResult] = []
        for _ in 0..<200 { results.append(writer.send(chunk)) }
        #expect(results.contains(.queued))
        #expect(results.last == .closed)
        #expect(await writerDelegate.wait { $0.isClosed })
        #expect(writerDelegate.closeError?.contains("stopped reading") == true)
        _ = right
        loop.stop()
    }

    @Test func droppableMessagesAreDroppedAboveTheThresholdInsteadOfQueued() async throws {
        let loop = try EventLoop(name: "test")
        let (left, right) = try UnixSocket.pair()
        let writer = try SocketConnection(socket: left, loop: loop)
        try writer.start(delegate: RecordingDelegate())
        let chunk = [UInt8](repeating: 1, count: 64 * 1024)
        var results: [SocketConnection.SendResult] = []
        for _ in 0..<100 { results.append(writer.send(chunk, droppingAbove: 256 * 1024)) }
        #expect(results.contains(.dropped))
        #expect(!results.contains(.closed))
        #expect(writer.queuedByteCount <= 256 * 1024 + chunk.count + Frame.headerLength)
        _ = right
        writer.close()
        loop.stop()
    }

    @Test func closingTellsThePeer() async throws {
        let pair = try ConnectionPair()
        pair.a.close()
        #expect(await pair.bDelegate.wait { $0.isClosed })
        #expect(pair.bDelegate.closeError == nil)
        #expect(pair.a.send([1]) == .closed)
        await pair.close()
    }

    @Test func closeAfterFlushingDeliversWhatWasQueued() async throws {
        let pair = try ConnectionPair()
        let payloads = (0..<50).map { [UInt8](repeating: UInt8($0), count: 100_000) }
        for payload in payloads { _ = pair.a.send(payload) }
        pair.a.closeAfterFlushing()
        #expect(await pair.bDelegate.wait { $0.isClosed })
        #expect(pair.bDelegate.frames.map(\.payload) == payloads)
        await pair.close()
    }

    @Test func connectionsLeaveNoDescriptorsBehind() async throws {
        var targets: Set<String> = []
        for _ in 0..<20 {
            let pair = try ConnectionPair()
            targets.insert(try #require(descriptorTarget(pair.a.socket.rawValue)))
            targets.insert(try #require(descriptorTarget(pair.b.socket.rawValue)))
            _ = pair.a.send([1, 2, 3])
            #expect(await pair.bDelegate.wait { $0.frames.count == 1 })
            await pair.close()
        }
        #expect(targets.count == 40)
        #expect(await descriptorsStillOpen(to: targets) == [])
    }

    @Test func sendsFromManyThreadsArriveWhole() async throws {
        let pair = try ConnectionPair()
        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<8 {
                group.addTask {
                    for index in 0..<200 {
                        _ = pair.a.send([UInt8(sender), UInt8(index % 256)] + [UInt8](repeating: UInt8(sender), count: 3000))
                    }
                }
            }
        }
        #expect(await pair.bDelegate.wait { $0.frames.count == 1600 })
        let frames = pair.bDelegate.frames.map(\.payload)
        for sender in 0..<8 {
            let own = frames.filter { $0[0] == UInt8(sender) }
            #expect(own.map { $0[1] } == (0..<200).map { UInt8($0 % 256) }, "each sender's frames stay in order")
            #expect(own.allSatisfy { $0.dropFirst(2).allSatisfy { $0 == UInt8(sender) } }, "no frame is interleaved")
        }
        await pair.close()
    }
}
