@testable import CameraDaemon
import CameraIPC
import CameraMedia
import CameraProtocol
import CameraTestSupport
import Dispatch
import Logging
import Synchronization
import Testing

/// A camera for the streamer's tests: its description is a virtual camera's
/// (YUYV 640x480), its frames come when the test says (``emit(_:)``), its
/// captures log their starts and stops, a stop can be held up, and — like a
/// V4L2 node — it refuses to start while a capture of its own still holds it.
final class FakeCamera: CameraBackend, @unchecked Sendable {
    private let base = VirtualCamera(index: 9)
    var uniqueID: String { base.uniqueID }
    var executor: DeviceExecutor { base.executor }
    func describe() -> DeviceDescription { base.describe() }
    var formats: [DeviceFormat] { base.formats }
    var supportedPresets: [SessionPreset] { base.supportedPresets }
    var controls: [CameraControl] { base.controls }
    var activeMode: CaptureMode { base.activeMode }
    var configuredMode: CaptureMode? { base.configuredMode }
    func configure(_ mode: CaptureMode) throws { try base.configure(mode) }
    func clearConfiguredMode() { base.clearConfiguredMode() }
    var settingsState: CameraSettingsState { base.settingsState }
    func setControls(_ changes: [ControlChange]) throws { try base.setControls(changes) }

    struct State {
        var log: [String] = []
        var holding: FakeCapture?
        var captures = 0
        var holdStops = false
    }
    let state = Mutex(State())
    private let stopGate = DispatchSemaphore(value: 0)

    var log: [String] { state.withLock { $0.log } }

    func startCapture(
        _ mode: CaptureMode, onFrame: @escaping @Sendable (CapturedFrame) -> Void,
        onFailure: @escaping @Sendable (CameraError) -> Void
    ) throws -> any CaptureStream {
        try state.withLock { state throws(CameraError) in
            guard state.holding == nil else {
                state.log.append("busy")
                throw CameraError(.deviceBusy, "\(uniqueID) is in use by another program")
            }
            state.captures += 1
            let capture = FakeCapture(number: state.captures, mode: mode, onFrame: onFrame, camera: self)
            state.holding = capture
            state.log.append("start \(capture.number)")
            return capture
        }
    }

    /// Makes the stops of later captures wait for ``releaseStops()``.
    func holdStops() { state.withLock { $0.holdStops = true } }

    func releaseStops() {
        state.withLock { $0.holdStops = false }
        stopGate.signal()
    }

    fileprivate func stopping(_ capture: FakeCapture) {
        let hold = state.withLock { state in
            state.log.append("stop \(capture.number) begins")
            return state.holdStops
        }
        if hold { stopGate.wait() }
        state.withLock { state in
            state.holding = nil
            state.log.append("stop \(capture.number) ends")
        }
    }

    /// One frame, numbered `sequence`, from the capture running now (on the
    /// caller's thread, as a capture thread would), in a buffer of its own. By
    /// default waits until the frame's buffer comes back: every variant's
    /// worker is done with it.
    func emit(_ sequence: UInt64, waitUntilDone: Bool = true) {
        guard let capture = state.withLock({ $0.holding }) else { return }
        let buffer = FrameBuffer(count: capture.mode.layout.capacity, filling: UInt8(truncatingIfNeeded: sequence))
        let done = DispatchSemaphore(value: 0)
        capture.onFrame(CapturedFrame(bytes: UnsafeRawBufferPointer(buffer.bytes), sequence: sequence,
                                      timestampNanoseconds: Int64(sequence) * 33_333_333, durationNanoseconds: 33_333_333,
                                      giveBack: { buffer.free(); done.signal() }))
        if waitUntilDone { done.wait() }
    }
}

/// A frame's memory in the fake camera, freed when the frame gives it back.
final class FrameBuffer: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer

    init(count: Int, filling value: UInt8) {
        bytes = .allocate(byteCount: count, alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: value)
    }

    func free() { bytes.deallocate() }
}

final class FakeCapture: CaptureStream, @unchecked Sendable {
    let number: Int
    let mode: CaptureMode
    let onFrame: @Sendable (CapturedFrame) -> Void
    private weak var camera: FakeCamera?
    /// Its frames are each in memory of their own: nothing to share.
    let buffers: DeviceBuffers? = nil

    init(number: Int, mode: CaptureMode, onFrame: @escaping @Sendable (CapturedFrame) -> Void, camera: FakeCamera) {
        self.number = number
        self.mode = mode
        self.onFrame = onFrame
        self.camera = camera
    }

    func stop() { camera?.stopping(self) }
}

/// A consumer inside the daemon: records its events as short lines and holds
/// the frames it is given until told to release them.
final class RecordingSink: FrameSink, @unchecked Sendable {
    private let state = Mutex<(events: [String], held: [FrameHandle])>(([], []))

    var events: [String] { state.withLock { $0.events } }
    var held: [PooledFrame] { state.withLock { $0.held.map(\.frame) } }

    /// Gives back the first `count` frames held, each through its own handle.
    func releaseHeld(first count: Int) throws {
        let handles = state.withLock { state in
            defer { state.held.removeFirst(min(count, state.held.count)) }
            return Array(state.held.prefix(count))
        }
        for handle in handles { try handle.release() }
    }

    /// A release of the first `count` frames held.
    func release(first count: Int) -> Camerad_V1_ReleaseFrames {
        state.withLock { state in
            let frames = state.held.prefix(count).map(\.frame)
            state.held.removeFirst(frames.count)
            var release = Camerad_V1_ReleaseFrames()
            release.poolID = frames.first?.pool.id ?? 0
            release.slots = frames.map { UInt32($0.slot) }
            return release
        }
    }

    func started(_ news: StreamNews) { state.withLock { $0.events.append("started") } }

    func frame(_ frame: FrameHandle) -> Bool {
        state.withLock { state in
            state.events.append("frame \(frame.frame.sequence)")
            state.held.append(frame)
        }
        return true
    }

    func dropped(_ drops: DropTally) {
        state.withLock { state in
            for report in drops.reports {
                state.events.append("dropped \(report.reason) \(report.count) up to \(report.lastSequence)")
            }
        }
    }

    func formatChanged(_ news: StreamNews) { state.withLock { $0.events.append("format changed") } }
    func interrupted(_ reason: StreamInterruption, _ error: CameraError) { state.withLock { $0.events.append("interrupted") } }
    func end(with error: CameraError?) { state.withLock { $0.events.append("ended") } }
}

/// Records what a stream is sent, as short lines: "started", "frame 3",
/// "dropped outOfBuffers 1 up to 5", "ended", and any handed over under an ordered lock.
final class RecordingResponder: StreamResponder, @unchecked Sendable {
    private let lines = Mutex<[String]>([])
    private let frames = Mutex<[Camerad_V1_FrameReady]>([])
    /// Each message handed over while the handing thread held an ordered lock (none, ever).
    private let underLock = Mutex<[String]>([])

    var recorded: [String] { lines.withLock { $0 } }
    var receivedFrames: [Camerad_V1_FrameReady] { frames.withLock { $0 } }
    var locksHeld: [String] { underLock.withLock { $0 } }

    func send(_ response: Camerad_V1_StreamResponse, descriptors: [OwnedFD]) -> Bool {
        record(response)
        return true
    }

    func send(_ response: Camerad_V1_StreamResponse, descriptors: [OwnedFD], droppingAbove threshold: Int) -> Bool {
        record(response)
        return true
    }

    func send(serialized response: [UInt8], descriptors: [OwnedFD]) -> Bool {
        record(try! Camerad_V1_StreamResponse(serializedBytes: response))
        return true
    }

    func end(with error: RPCError?) {
        append("ended \(error?.message ?? "OK")")
    }

    private func append(_ line: String) {
        let held = LockOrder.held
        if !held.isEmpty { underLock.withLock { $0.append("\(line): \(held)") } }
        lines.withLock { $0.append(line) }
    }

    private func record(_ response: Camerad_V1_StreamResponse) {
        let line: String
        switch response.kind {
        case .started: line = "started"
        case .frame(let frame):
            frames.withLock { $0.append(frame) }
            line = "frame \(frame.sequence)"
        case .dropped(let dropped): line = "dropped \(dropped.reason) \(dropped.count) up to \(dropped.lastSequence)"
        case .formatChanged: line = "format changed"
        case .interrupted: line = "interrupted"
        case nil: line = "?"
        }
        append(line)
    }
}

@Suite struct DeviceStreamerTests {
    let camera = FakeCamera()
    let streamer: DeviceStreamer

    init() {
        streamer = DeviceStreamer(device: camera, timers: .testTimers, logger: Logger(label: "test"))
    }

    /// Who the tests' streams are charged to.
    static let owner = ClientBudget.Owner(connection: 1, user: 0)
    /// How long a photo here waits for a frame: a generous deadline, as the
    /// frames pass a SCHED_IDLE worker that a machine busy with the other
    /// suites runs last (the daemon's own 5 s timed out in full runs).
    static let photoFrameTimeout = Duration.seconds(60)

    static func open(framesInFlight: UInt32 = 3, keepLateFrames: Bool = false, width: UInt32 = 0) -> Camerad_V1_OpenStream {
        var request = Camerad_V1_OpenStream()
        request.uniqueID = "virtual-9"
        request.settings.width = width
        request.settings.maxFramesInFlight = framesInFlight
        request.settings.alwaysDiscardsLateVideoFrames = !keepLateFrames
        return request
    }

    /// The bug the capture lifecycle fixes: a stream closed and another opened
    /// at once used to start the device while its stop was still under way
    /// (a V4L2 node then says EBUSY, "in use by another program"). Now the
    /// start waits behind the stop on the device's executor.
    @Test func aStartAskedForWhileAStopIsUnderWayWaitsForIt() async throws {
        let first = try await streamer.open(Self.open(), for: Self.owner, writer: RecordingResponder())
        camera.holdStops()
        streamer.close(first)
        #expect(await waitUntil { camera.log.contains("stop 1 begins") })
        let responder = RecordingResponder()
        let opening = Task { try await streamer.open(Self.open(), for: Self.owner, writer: responder) }
        camera.releaseStops()
        let second = try await opening.value
        #expect(camera.log == ["start 1", "stop 1 begins", "stop 1 ends", "start 2"])
        #expect(responder.recorded == ["started"])
        streamer.close(second)
        await camera.executor.drain()
        #expect(camera.log.last == "stop 2 ends")
    }

    /// Fifty opens and closes with no pause: each start after the stop before it.
    @Test func fiftyOpensAndClosesInARowNeverFindTheDeviceBusy() async throws {
        for _ in 0..<50 {
            let id = try await streamer.open(Self.open(), for: Self.owner, writer: RecordingResponder())
            streamer.close(id)
        }
        await camera.executor.drain()
        let log = camera.log
        #expect(!log.contains("busy"), "\(log)")
        #expect(log.count == 150 && log.suffix(3) == ["start 50", "stop 50 begins", "stop 50 ends"], "\(log.suffix(6))")
    }

    /// Late frames queue (keepLateFrames) and then drop; each drop is reported
    /// ahead of the next frame, and queued frames go in order as slots come back.
    @Test func queuedFramesAndTheirDropsReachTheClientInCaptureOrder() async throws {
        let responder = RecordingResponder()
        let id = try await streamer.open(Self.open(framesInFlight: 2, keepLateFrames: true), for: Self.owner, writer: responder)
        for sequence in 0...5 as ClosedRange<UInt64> { camera.emit(sequence) }
        // Two in flight, three queued, the sixth out of buffers.
        #expect(responder.recorded == ["started", "frame 0", "frame 1"])
        for index in 0..<4 {
            let frame = responder.receivedFrames[index]
            var release = Camerad_V1_ReleaseFrames()
            release.poolID = frame.poolID
            release.slots = [frame.slot]
            try streamer.release(id, release)
        }
        camera.emit(6)
        #expect(responder.recorded == ["started", "frame 0", "frame 1", "frame 2", "frame 3", "frame 4",
                                       "dropped outOfBuffers 1 up to 5", "frame 6"])
        streamer.close(id)
    }

    /// A consumer inside the daemon is a sink like a client stream: the same
    /// in-flight limit and late-frame policy, the same drop accounting (each
    /// frame missed while it holds all it may reported as it is missed), and
    /// it reads the frames it holds in place.
    @Test func aSinkInsideTheDaemonHasAClientsLimitsAndAccounting() async throws {
        let sink = RecordingSink()
        let id = try await streamer.open(StreamRequest(Self.open(framesInFlight: 2)), for: Self.owner, sink: sink)
        for sequence in 0...4 as ClosedRange<UInt64> { camera.emit(sequence) }
        #expect(sink.events == ["started", "frame 0", "frame 1", "dropped frameWasLate 1 up to 2", "dropped frameWasLate 1 up to 3",
                                "dropped frameWasLate 1 up to 4"], "two in flight; the rest late, each told at once")
        #expect(streamer.statistics().variants.map(\.conversions) == [2], "frames no sink had room for were not converted")
        #expect(sink.held.map { frame in frame.bytes.allSatisfy { $0 == UInt8(frame.sequence) } } == [true, true],
                "each frame's own bytes, read in place")
        // The sink gives its frame back by itself: no stream id, no streamer.
        try sink.releaseHeld(first: 1)
        camera.emit(5)
        #expect(sink.events.suffix(2) == ["dropped frameWasLate 1 up to 4", "frame 5"])
        #expect(streamer.statistics().variants.map(\.conversions) == [3])
        streamer.close(id)
        #expect(streamer.statistics().variants.isEmpty, "its pool went with it")
    }

    /// A device that skips frames: the gap is reported as a discontinuity, ahead
    /// of the next frame; frames skipped by min_frame_duration are not drops.
    @Test func aGapInTheDevicesNumbersIsReportedAsADiscontinuity() async throws {
        let responder = RecordingResponder()
        let id = try await streamer.open(Self.open(), for: Self.owner, writer: responder)
        camera.emit(0)
        camera.emit(4)
        #expect(responder.recorded == ["started", "frame 0", "dropped discontinuity 3 up to 3", "frame 4"])
        streamer.close(id)
    }

    /// Each variant converts on a worker of its own, off the capture thread:
    /// while one variant's conversion is stuck, another's streams keep every
    /// frame; the stuck one's streams learn that the frames it could not take
    /// were late, in order, ahead of its next frame.
    @Test func aSlowVariantNeverDelaysAnother() async throws {
        let cheap = RecordingResponder()
        let slow = RecordingResponder()
        let cheapID = try await streamer.open(Self.open(framesInFlight: 8), for: Self.owner, writer: cheap)
        let slowID = try await streamer.open(Self.open(framesInFlight: 8, width: 320), for: Self.owner, writer: slow)
        camera.emit(0)
        // Holds up the slow variant's worker, as a long conversion would.
        let gate = DispatchSemaphore(value: 0)
        let (slowVariant, cheapVariant) = try #require(streamer.state.withLock { state in
            state.streams[slowID].flatMap { slow in state.streams[cheapID].map { (slow, $0) } }
        })
        let slowWorker = try #require(streamer.state.withLock { $0.variants[slowVariant]?.thread })
        slowWorker.async { gate.wait() }
        for sequence in 1...5 as ClosedRange<UInt64> {
            camera.emit(sequence, waitUntilDone: false)
            // Its own worker done with it, so the cheap one is never behind itself.
            #expect(await waitUntil { streamer.state.withLock { $0.variants[cheapVariant]?.framesHeld == 0 } })
        }
        #expect(cheap.recorded == ["started"] + (0...5).map { "frame \($0)" })
        #expect(slow.recorded == ["started", "frame 0"])
        gate.signal()
        #expect(await waitUntil { streamer.state.withLock { ($0.variants[slowVariant]?.pending ?? 0) == 0 } })
        camera.emit(6)
        // Frames 1 and 2 waited for the stuck worker (it holds two); 3 to 5 came meanwhile.
        #expect(slow.recorded == ["started", "frame 0", "frame 1", "frame 2", "dropped frameWasLate 3 up to 5", "frame 6"])
        #expect(cheap.recorded.last == "frame 6")
        streamer.close(cheapID)
        streamer.close(slowID)
    }

    /// A device removed mid-stream ends its streams with the reason, and the
    /// capture stops.
    @Test func anInterruptionEndsEveryStreamAndStopsTheCapture() async throws {
        let responder = RecordingResponder()
        _ = try await streamer.open(Self.open(), for: Self.owner, writer: responder)
        streamer.interrupt(.deviceDisconnected, CameraError(.deviceDisconnected, "gone"))
        await camera.executor.drain()
        #expect(responder.recorded == ["started", "interrupted", "ended gone"])
        #expect(camera.log == ["start 1", "stop 1 begins", "stop 1 ends"])
        #expect(streamer.statistics().streams == 0 && !streamer.statistics().isCapturing)
    }

    /// The path the lock-order checker found: a copying stream's frames and its
    /// end were handed to its call under the streamer's lock, and the end
    /// cancels the call's task, whose handlers wake waiters. Now every one of
    /// its messages reaches the call with no lock held.
    @Test func aCopyingStreamsMessagesReachItsCallWithNoLockHeld() async throws {
        let responder = RecordingResponder()
        var request = Self.open()
        request.settings.delivery = .inline
        _ = try await streamer.open(request, for: Self.owner, writer: responder)
        for sequence in 0..<3 { camera.emit(UInt64(sequence)) }
        streamer.interrupt(.deviceDisconnected, CameraError(.deviceDisconnected, "gone"))
        await camera.executor.drain()
        #expect(responder.recorded.first == "started" && responder.recorded.last == "ended gone")
        #expect(responder.recorded.count { $0.hasPrefix("frame") || $0.hasPrefix("dropped") } >= 1)
        #expect(responder.locksHeld.isEmpty, "locks held as the call was handed a message: \(responder.locksHeld)")
    }

    /// A stream still opening when its device goes (its start planned, its
    /// wait not yet begun) is told why — the device went — not that it
    /// "stopped as it started" (a photo of a removed device said DEVICE_BUSY).
    @Test func aStreamOpeningAsItsDeviceGoesIsToldWhy() async throws {
        streamer.interrupt(.deviceDisconnected, CameraError(.deviceDisconnected, "gone"))
        let error = await #expect(throws: CameraError.self) { try await streamer.waitUntilRunning() }
        #expect(error?.code == .deviceDisconnected && error?.message == "gone")
        // The next open starts afresh.
        let id = try await streamer.open(Self.open(), for: Self.owner, writer: RecordingResponder())
        streamer.close(id)
    }

    /// Frames from the fake camera, numbered on from `start`, until `body` is
    /// done: what a running camera does while a photo waits. Returns its
    /// result and the next number.
    private func emittingFrames<Result: Sendable>(
        from start: UInt64 = 0, _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> (Result, next: UInt64) {
        let done = Mutex(false)
        let task = Task {
            defer { done.withLock { $0 = true } }
            return try await body()
        }
        var sequence = start
        while !done.withLock({ $0 }) {
            camera.emit(sequence)
            sequence += 1
            await Task.yield()
        }
        return (try await task.value, sequence)
    }

    /// A photo is a stream of the device's own variant, charged to its
    /// connection: an idle device starts for it in its photo mode (the largest)
    /// and stops after it.
    @Test func aPhotoOfAnIdleDeviceIsAStreamThatStartsAndStopsIt() async throws {
        let (photo, next) = try await emittingFrames { [camera, streamer] in
            try await PhotoCapture.take(PhotoSettings(), device: camera, streamer: streamer, owner: .init(connection: 7, user: 0),
                                        holdsLock: false, frameTimeout: Self.photoFrameTimeout)
        }
        #expect(photo.sequence < next && photo.pixelFormat == .mjpeg && photo.data.starts(with: [0xFF, 0xD8]))
        #expect(photo.width == 1920 && photo.height == 1080 && photo.note == nil)
        await camera.executor.drain()
        #expect(camera.log == ["start 1", "stop 1 begins", "stop 1 ends"])
        #expect(streamer.statistics().streams == 0 && streamer.statistics().variants.isEmpty)
        #expect(streamer.budget.streamCount() == 0, "its charge went back")
    }

    /// A photo while a client streams the device's own variant joins its pool.
    /// The first grows it, as any stream joining a full pool does: the client
    /// hears of it once, and a frame being converted into the old pool meanwhile
    /// is reported to it as a discontinuity. A second finds room: one conversion
    /// per frame serves both, and the client gets every frame.
    @Test func aPhotoBesideAClientSharesItsVariant() async throws {
        let client = RecordingSink()
        let id = try await streamer.open(StreamRequest(Self.open(framesInFlight: 8)), for: Self.owner, sink: client)
        let takePhoto = { @Sendable [client, streamer, camera] in
            // The client gives every frame back as it comes.
            let releasing = Task {
                while !Task.isCancelled {
                    if !client.held.isEmpty { try? streamer.release(id, client.release(first: client.held.count)) }
                    await Task.yield()
                }
            }
            defer { releasing.cancel() }
            return try await PhotoCapture.take(PhotoSettings(), device: camera, streamer: streamer, owner: .init(connection: 2, user: 0),
                                               holdsLock: false, frameTimeout: Self.photoFrameTimeout)
        }
        let (first, afterFirst) = try await emittingFrames(takePhoto)
        #expect(client.events.filter { $0 == "format changed" }.count == 1, "the pool grew for the photo")
        let eventsBefore = client.events.count
        let converted = streamer.statistics().variants.map(\.conversions)
        let (second, afterSecond) = try await emittingFrames(from: afterFirst, takePhoto)

        let variants = streamer.statistics().variants
        #expect(variants.count == 1, "no variant of its own")
        #expect(variants.map(\.conversions) == converted.map { $0 + afterSecond - afterFirst },
                "one conversion per frame, for the client and the photo alike")
        #expect(Array(client.events.dropFirst(eventsBefore)) == (afterFirst..<afterSecond).map { "frame \($0)" },
                "the second photo: every frame, in order, nothing else")
        // Every frame of the first is the client's, or reported to it as lost to the move.
        var accounted: [UInt64] = []
        for event in client.events {
            let words = event.split(separator: " ")
            if words.first == "frame" { accounted.append(UInt64(words[1])!) }
            if words.first == "dropped" {
                #expect(words[1] == "discontinuity", "\(event)")
                let last = UInt64(words[5])!
                accounted += (last + 1 - UInt64(words[2])!)...last
            }
        }
        #expect(accounted == Array(0..<afterSecond), "each frame delivered or reported, in order")
        let frames = client.events.filter { $0.hasPrefix("frame") }
        #expect(frames.contains("frame \(second.sequence)") && first.sequence < afterFirst,
                "a photo is one of the client's frames")
        streamer.close(id)
    }
}

extension EventLoop {
    /// The timers of the registries and streamers tests make (camerad's are its event loop's).
    static let testTimers = try! EventLoop(name: "test-timers")
}

extension DeviceExecutor {
    /// Waits until every job queued so far has run.
    func drain() async {
        await run { () -> Void in }
    }
}
