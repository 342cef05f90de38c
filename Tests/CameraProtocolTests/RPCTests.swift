import CameraIPC
import CameraProtocol
import CameraTestSupport
import Foundation
import Logging
import Synchronization
import Testing

/// Test methods, on messages the real service already has.
enum TestService {
    static let echo = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(service: "test.Test", method: "Echo", kind: .unary)
    static let fail = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(service: "test.Test", method: "Fail", kind: .unary)
    static let count = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(service: "test.Test", method: "Count", kind: .serverStreaming)
    static let forever = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(service: "test.Test", method: "Forever", kind: .serverStreaming)
    static let echoes = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(service: "test.Test", method: "Echoes", kind: .bidirectionalStreaming)
    /// Echoes on the loop (forEachOnLoop) after the first request, once `gate` opens; sequence 999 is refused.
    static let echoesOnLoop = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(service: "test.Test", method: "EchoesOnLoop", kind: .bidirectionalStreaming)
    static let descriptorSize = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(service: "test.Test", method: "DescriptorSize", kind: .unary)
    static let missing = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(service: "test.Test", method: "Missing", kind: .unary)
}

/// What EchoesOnLoop waits for and what it did.
final class EchoesOnLoopRecord: Sendable {
    /// Opened by the test: then the handler takes its requests on the loop.
    let gate = Mutex(false)
    /// Each request handled on the loop: its sequence and whether on the loop's thread.
    let handled = Mutex<[(sequence: UInt64, onLoop: Bool)]>([])
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// An RPC server with the test methods on a real socket.
final class TestServer: @unchecked Sendable {
    let path: String
    let loop: EventLoop
    let server: RPCServer
    let cancellations = Counter()
    let echoesOnLoop = EchoesOnLoopRecord()

    init(path: String) throws {
        self.path = path
        loop = try EventLoop(name: "rpc-test")
        let cancellations = self.cancellations
        var router = RPCRouter()
        router.register(TestService.echo, unary: { request, _ in
            var response = Camerad_V1_PingResponse()
            response.sequence = request.sequence
            response.payload = request.payload
            return response
        })
        router.register(TestService.fail, unary: { _, _ in
            throw RPCError(.deviceLocked, "held by pid 42; try later")
        })
        router.register(TestService.count, serverStreaming: { request, writer, _ in
            for index in 0..<request.sequence {
                var response = Camerad_V1_PingResponse()
                response.sequence = index
                writer.send(response)
            }
        })
        router.register(TestService.forever, serverStreaming: { _, writer, _ in
            writer.send(Camerad_V1_PingResponse())
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                cancellations.increment()
                throw error
            }
        })
        router.register(TestService.echoes, bidirectional: { requests, writer, _ in
            for try await request in requests {
                var response = Camerad_V1_PingResponse()
                response.sequence = request.sequence
                writer.send(response)
            }
        })
        let (record, loop) = (echoesOnLoop, loop)
        router.register(TestService.echoesOnLoop, bidirectional: { requests, writer, _ in
            var iterator = requests.makeAsyncIterator()
            guard let first = try await iterator.next() else { return }
            writer.send(Camerad_V1_PingResponse.with { $0.sequence = first.sequence })
            _ = await waitUntil { record.gate.withLock { $0 } }
            do {
                try await iterator.forEachOnLoop { request in
                    record.handled.withLock { $0.append((request.sequence, loop.inEventLoop)) }
                    guard request.sequence != 999 else { throw RPCError(.invalidArgument, "999 is refused; send another") }
                    writer.send(Camerad_V1_PingResponse.with { $0.sequence = request.sequence })
                }
            } catch is CancellationError {
                cancellations.increment()
                throw CancellationError()
            }
        })
        router.register(TestService.descriptorSize, unary: { _, context in
            var response = Camerad_V1_PingResponse()
            response.sequence = UInt64(context.descriptors.count)
            if let first = context.descriptors.first {
                var info = stat()
                fstat(first.rawValue, &info)
                response.serverTimeNs = Int64(info.st_size)
            }
            return response
        })
        server = RPCServer(
            listener: try UnixSocket.listen(at: path), loop: loop, router: router,
            logger: Logger(label: "rpc-test"), clientDescriptors: DescriptorQueue.limit,
            hello: { request, _ in
                guard request.protocolVersion == CameraService.protocolVersion else {
                    throw RPCError(.versionMismatch, "speak version \(CameraService.protocolVersion)")
                }
                var response = Camerad_V1_HelloResponse()
                response.serverVersion = "test"
                return response
            })
        try server.start()
    }

    func client() async throws -> RPCClient {
        try await RPCClient.connect(to: path, clientName: "rpc-test-client", loop: loop)
    }

    func waitForNoOpenCalls() async -> Bool {
        await waitUntil { server.connections.allSatisfy { $0.openCallCount == 0 } }
    }
}

func withTestServer(_ body: (TestServer) async throws -> Void) async throws {
    try await withTemporarySocketPath { path in
        let server = try TestServer(path: path)
        try await body(server)
        await server.server.shutDown(with: RPCError(.shuttingDown, "test over"))
        server.loop.stop()
    }
}

func ping(_ sequence: UInt64, payload: [UInt8] = []) -> Camerad_V1_PingRequest {
    var request = Camerad_V1_PingRequest()
    request.sequence = sequence
    request.payload = Data(payload)
    return request
}

@Suite struct RPCTests {
    @Test func aUnaryCallReturnsItsResponse() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let response = try await client.unary(TestService.echo, ping(42, payload: [1, 2, 3]))
            #expect(response.sequence == 42)
            #expect(Array(response.payload) == [1, 2, 3])
            #expect(client.hello.serverVersion == "test")
        }
    }

    @Test func manyConcurrentCallsOnOneConnectionEachGetTheirOwnAnswer() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let answers = try await withThrowingTaskGroup(of: (UInt64, UInt64).self) { group in
                for sequence in 0..<200 as Range<UInt64> {
                    group.addTask { (sequence, try await client.unary(TestService.echo, ping(sequence)).sequence) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 200)
            #expect(answers.allSatisfy { $0.0 == $0.1 })
        }
    }

    @Test func aHandlersErrorReachesTheClientWithItsReason() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let error = await #expect(throws: RPCError.self) { try await client.unary(TestService.fail, ping(0)) }
            #expect(error?.reason == .deviceLocked)
            #expect(error?.code == .failedPrecondition)
            #expect(error?.message == "held by pid 42; try later")
        }
    }

    @Test func aServerStreamDeliversEveryResponseInOrder() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            var received: [UInt64] = []
            for try await response in try client.serverStreaming(TestService.count, ping(1000)) {
                received.append(response.sequence)
            }
            #expect(received == Array(0..<1000))
        }
    }

    @Test func stoppingAStreamEarlyCancelsTheHandler() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let task = Task {
                for try await _ in try client.serverStreaming(TestService.forever, ping(0)) {}
            }
            #expect(await waitUntil { server.server.connections.contains { $0.openCallCount == 1 } }, "the handler runs")
            task.cancel()
            _ = await task.result
            #expect(await server.waitForNoOpenCalls())
            #expect(await waitUntil { server.cancellations.value == 1 })
            // The connection still works.
            #expect(try await client.unary(TestService.echo, ping(5)).sequence == 5)
        }
    }

    @Test func aBidirectionalCallEchoesUntilTheClientHalfCloses() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let call = try client.bidirectional(TestService.echoes)
            var responses = call.responses.makeAsyncIterator()
            for sequence in 0..<50 as Range<UInt64> {
                try call.send(ping(sequence))
                #expect(try await responses.next()?.sequence == sequence)
            }
            call.finishSending()
            #expect(try await responses.next() == nil, "the call ends OK after the half-close")
            #expect(await server.waitForNoOpenCalls())
        }
    }

    @Test func aHandledCallGetsEveryResponseInOrderOnOneThreadThenItsEndOnce() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let seen = Mutex<(sequences: [UInt64], threads: Set<pthread_t>, ends: [RPCError?], afterEnd: Int)>(([], [], [], 0))
            let call = try client.bidirectional(TestService.echoes) { (event: CallEvent<Camerad_V1_PingResponse>) in
                seen.withLock { seen in
                    switch event {
                    case .message(let received):
                        if !seen.ends.isEmpty { seen.afterEnd += 1 }
                        seen.sequences.append(received.message.sequence)
                        seen.threads.insert(pthread_self())
                    case .end(let error):
                        seen.ends.append(error)
                    }
                }
            }
            for sequence in 0..<200 as Range<UInt64> { try call.send(ping(sequence)) }
            call.finishSending()
            #expect(await waitUntil { seen.withLock { !$0.ends.isEmpty } })
            let result = seen.withLock { $0 }
            #expect(result.sequences == Array(0..<200), "every response, in order")
            #expect(result.threads.count == 1, "all on the event loop's thread")
            #expect(result.ends.count == 1 && result.ends.first.map { $0 == nil } == true, "ended once, OK")
            #expect(result.afterEnd == 0)
            #expect(await server.waitForNoOpenCalls())
        }
    }

    @Test func requestsTakenOnTheLoopComeInOrderThoseQueuedFirstThenOnTheLoopsThread() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let call = try client.bidirectional(TestService.echoesOnLoop)
            var responses = call.responses.makeAsyncIterator()
            try call.send(ping(0))
            #expect(try await responses.next()?.sequence == 0)
            for sequence in 1...100 as ClosedRange<UInt64> { try call.send(ping(sequence)) }
            // The loop reads in order: once Echo is answered, the hundred wait in the handler's queue.
            _ = try await client.unary(TestService.echo, ping(7))
            server.echoesOnLoop.gate.withLock { $0 = true }
            for sequence in 101...200 as ClosedRange<UInt64> { try call.send(ping(sequence)) }
            for sequence in 1...200 as ClosedRange<UInt64> {
                #expect(try await responses.next()?.sequence == sequence)
            }
            // Once caught up, each request is handled on the loop's thread as it arrives.
            try call.send(ping(201))
            #expect(try await responses.next()?.sequence == 201)
            call.finishSending()
            #expect(try await responses.next() == nil, "the call ends OK after the half-close")
            let handled = server.echoesOnLoop.handled.withLock { $0 }
            #expect(handled.map(\.sequence) == Array(1...201), "each once, in order")
            #expect(handled.first?.onLoop == false, "those queued before are handled on the handler's task")
            #expect(handled.last?.onLoop == true)
            #expect(await server.waitForNoOpenCalls())
        }
    }

    @Test func aHalfCloseBeforeTheRequestsAreTakenOnTheLoopEndsTheCallAfterThem() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let call = try client.bidirectional(TestService.echoesOnLoop)
            var responses = call.responses.makeAsyncIterator()
            try call.send(ping(0))
            #expect(try await responses.next()?.sequence == 0)
            for sequence in 1...3 as ClosedRange<UInt64> { try call.send(ping(sequence)) }
            call.finishSending()
            // Once Echo is answered, the loop has read the half-close too.
            _ = try await client.unary(TestService.echo, ping(7))
            server.echoesOnLoop.gate.withLock { $0 = true }
            for sequence in 1...3 as ClosedRange<UInt64> {
                #expect(try await responses.next()?.sequence == sequence)
            }
            #expect(try await responses.next() == nil, "the call ends OK")
            #expect(await server.waitForNoOpenCalls())
        }
    }

    @Test func anErrorThrownOnTheLoopEndsTheCallWithItAndNothingFollows() async throws {
        try await withTestServer { server in
            server.echoesOnLoop.gate.withLock { $0 = true }
            let client = try await server.client()
            let call = try client.bidirectional(TestService.echoesOnLoop)
            var responses = call.responses.makeAsyncIterator()
            try call.send(ping(0))
            #expect(try await responses.next()?.sequence == 0)
            try call.send(ping(1))
            #expect(try await responses.next()?.sequence == 1)
            for sequence: UInt64 in [999, 2, 3] { try? call.send(ping(sequence)) }
            let error = await #expect(throws: RPCError.self) { _ = try await responses.next() }
            #expect(error?.reason == .invalidArgument && error?.message.contains("999") == true)
            #expect(server.echoesOnLoop.handled.withLock { $0.map(\.sequence) } == [1, 999], "nothing after the error")
            #expect(await server.waitForNoOpenCalls())
        }
    }

    @Test func cancellingACallWhoseRequestsAreOnTheLoopCancelsItsHandler() async throws {
        try await withTestServer { server in
            server.echoesOnLoop.gate.withLock { $0 = true }
            let client = try await server.client()
            let call = try client.bidirectional(TestService.echoesOnLoop)
            var responses = call.responses.makeAsyncIterator()
            try call.send(ping(0))
            #expect(try await responses.next()?.sequence == 0)
            try call.send(ping(1))
            #expect(try await responses.next()?.sequence == 1)
            call.cancel()
            #expect(await server.waitForNoOpenCalls())
            #expect(await waitUntil { server.cancellations.value == 1 }, "the handler saw the cancel")
        }
    }

    @Test func cancellingAHandledCallEndsItOnceWithCancelled() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let ends = Mutex<[RPCError?]>([])
            let first = Mutex(false)
            let call = try client.bidirectional(TestService.echoes) { (event: CallEvent<Camerad_V1_PingResponse>) in
                switch event {
                case .message: first.withLock { $0 = true }
                case .end(let error): ends.withLock { $0.append(error) }
                }
            }
            try call.send(ping(1))
            #expect(await waitUntil { first.withLock { $0 } })
            call.cancel()
            call.cancel()
            #expect(await server.waitForNoOpenCalls())
            let ended = ends.withLock { $0 }
            #expect(ended.count == 1)
            #expect(ended.first??.reason == .cancelled)
            #expect(throws: RPCError.self) { try call.send(ping(2)) }
        }
    }

    @Test func cancellingABidirectionalCallEndsItWithCancelled() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let call = try client.bidirectional(TestService.echoes)
            try call.send(ping(1))
            var responses = call.responses.makeAsyncIterator()
            #expect(try await responses.next()?.sequence == 1)
            call.cancel()
            let error = await #expect(throws: RPCError.self) { _ = try await responses.next() }
            #expect(error?.reason == .cancelled)
            #expect(await server.waitForNoOpenCalls())
        }
    }

    @Test func descriptorsSentWithACallReachTheHandler() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let memory = try SharedMemory(name: "rpc-test", size: 12345)
            let response = try await client.unary(TestService.descriptorSize, ping(0), descriptors: [memory.descriptor])
            #expect(response.sequence == 1)
            #expect(response.serverTimeNs == 12345)
        }
    }

    @Test func anUnknownMethodIsUnimplemented() async throws {
        try await withTestServer { server in
            let client = try await server.client()
            let error = await #expect(throws: RPCError.self) { try await client.unary(TestService.missing, ping(0)) }
            #expect(error?.code == .unimplemented)
            #expect(error?.message.contains("/test.Test/Missing") == true)
        }
    }

    @Test func aCallBeforeHelloIsRefused() async throws {
        try await withTestServer { server in
            let raw = try RawProtocolClient(path: server.path)
            let (_, status) = try await raw.call(TestService.echo.name, request: [])
            #expect(status.code == .failedPrecondition)
            #expect(status.reason == .helloRequired)
            try await raw.hello()
            #expect(try await raw.call(TestService.echo.name, request: []).status.code == .ok)
        }
    }

    @Test func anUndecodableRequestIsAnInvalidArgument() async throws {
        try await withTestServer { server in
            let raw = try RawProtocolClient(path: server.path)
            try await raw.hello()
            let (_, status) = try await raw.call(TestService.echo.name, request: [0xFF, 0xFF, 0xFF])
            #expect(status.code == .invalidArgument)
            #expect(try await raw.call(TestService.echo.name, request: []).status.code == .ok, "the connection survives")
        }
    }

    @Test func anOldClientIsToldItsVersionDoesNotMatch() async throws {
        try await withTestServer { server in
            let raw = try RawProtocolClient(path: server.path)
            var request = Camerad_V1_HelloRequest()
            request.protocolVersion = 99
            let (_, status) = try await raw.call(CameraService.hello.name, request: try request.serializedBytes())
            #expect(status.reason == .versionMismatch)
        }
    }

    @Test(arguments: [
        ("garbage", Array("this is not a camerad frame".utf8)),
        ("oversize length", [0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0]),
        ("a frame that is not an envelope", Frame.encode([0xFF, 0xFF, 0xFF])),
    ])
    func badBytesCloseOnlyThatConnection(name: String, bytes: [UInt8]) async throws {
        try await withTestServer { server in
            let healthy = try await server.client()
            let raw = try RawProtocolClient(path: server.path)
            try await raw.hello()
            try await raw.sendBytes(bytes)
            #expect(await raw.waitForClose(), "\(name) closes the connection")
            #expect(try await healthy.unary(TestService.echo, ping(7)).sequence == 7, "others are still served")
        }
    }

    @Test func reusingAnOpenCallIDClosesTheConnection() async throws {
        try await withTestServer { server in
            let raw = try RawProtocolClient(path: server.path)
            try await raw.hello()
            try await raw.send(EnvelopeCodec.start(callID: 9, method: TestService.forever.name, request: []))
            try await raw.send(EnvelopeCodec.start(callID: 9, method: TestService.forever.name, request: []))
            #expect(await raw.waitForClose())
        }
    }

    @Test func callsFailWithConnectionLostWhenTheServerGoes() async throws {
        try await withTemporarySocketPath { path in
            let server = try TestServer(path: path)
            let client = try await server.client()
            let stream = try client.serverStreaming(TestService.forever, ping(0))
            var iterator = stream.makeAsyncIterator()
            _ = try await iterator.next()
            for connection in server.server.connections { connection.socket.close() }
            let error = await #expect(throws: RPCError.self) { _ = try await iterator.next() }
            #expect(error?.reason == .connectionLost)
            await #expect(throws: RPCError.self) { try await client.unary(TestService.echo, ping(0)) }
            server.loop.stop()
        }
    }

    @Test func shuttingDownEndsOpenCallsWithTheReasonGiven() async throws {
        try await withTemporarySocketPath { path in
            let server = try TestServer(path: path)
            let client = try await server.client()
            var iterator = try client.serverStreaming(TestService.forever, ping(0)).makeAsyncIterator()
            _ = try await iterator.next()
            await server.server.shutDown(with: RPCError(.shuttingDown, "bye"))
            let error = await #expect(throws: RPCError.self) { _ = try await iterator.next() }
            #expect(error?.reason == .shuttingDown)
            #expect(error?.message == "bye")
            server.loop.stop()
        }
    }

    @Test func connectingWhereNothingListensSaysWhatToDo() async throws {
        let loop = try EventLoop(name: "rpc-test")
        let error = await #expect(throws: RPCError.self) {
            try await RPCClient.connect(to: "/tmp/no-camerad-here.sock", clientName: "test", loop: loop)
        }
        #expect(error?.reason == .daemonUnavailable)
        #expect(error?.message.contains("CAMERAD_SOCKET") == true)
        loop.stop()
    }
}
