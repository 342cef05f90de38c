import CameraProtocol
import Foundation
import Synchronization

/// AVCaptureSession: runs frames from a device input to its outputs.
///
/// Lifecycle (``isRunning``, ``isInterrupted``):
///
/// ```
///          start               all streams open            stop
/// stopped ───────► starting ─────────────────► running ───────────► stopping ──► stopped
///    ▲                │ a stream cannot open:     │ a stream ends by itself (its device or the
///    │◄───────────────┘ runtime error             │ daemon went): every stream closes;
///    │                                            │ wasInterrupted + runtime error
///    │◄──────── no resume asked: didStopRunning ──┤
///    │                                            ▼ automaticallyResumesAfterInterruption
///    │◄──────────────── stop ──────────────── interrupted ──the device is back: streams
///                                                            reopen, interruptionEnded──► running
/// ```
///
/// One state, changed in one place (`transition`), which lists every pair of
/// state and event; an impossible pair is a bug, reported in debug builds.
/// ``isInterrupted`` is true only while interrupted: a stopped session is not.
///
/// Start, stop and reconfiguration happen one at a time, in the order asked.
/// Changes to outputs and connections while running apply at once, or, inside
/// ``beginConfiguration()`` / ``commitConfiguration()``, together at the commit.
public final class CaptureSession: @unchecked Sendable {
    public typealias Preset = SessionPreset

    /// AVCaptureSession.InterruptionReason, for what interrupts a session on
    /// Linux. The reasons Apple has keep Apple's raw values; Linux's own are
    /// numbered from 101, clear of Apple's.
    public enum InterruptionReason: Int, Sendable {
        /// Another program holds the device (Apple's 3).
        case videoDeviceInUseByAnotherClient = 3
        /// The device went away or failed. Linux only: an iPhone's cameras do not go.
        case videoDeviceNotAvailable = 101
        /// camerad stopped, or the connection to it broke. Linux only.
        case daemonNotAvailable = 102
    }

    /// What the notifications say, as an AsyncSequence (``events()``).
    public enum Event: Sendable {
        case didStartRunning
        case didStopRunning
        case runtimeError(CaptureError)
        case wasInterrupted(InterruptionReason)
        case interruptionEnded
    }

    // Notification names and userInfo keys, as AVFoundation's.
    public static let runtimeErrorNotification = Notification.Name("CaptureSessionRuntimeErrorNotification")
    public static let didStartRunningNotification = Notification.Name("CaptureSessionDidStartRunningNotification")
    public static let didStopRunningNotification = Notification.Name("CaptureSessionDidStopRunningNotification")
    public static let wasInterruptedNotification = Notification.Name("CaptureSessionWasInterruptedNotification")
    public static let interruptionEndedNotification = Notification.Name("CaptureSessionInterruptionEndedNotification")
    /// userInfo key of a runtime error: the ``CaptureError``.
    public static let errorKey = "CaptureSessionErrorKey"
    /// userInfo key of an interruption: the ``InterruptionReason``'s raw value.
    public static let interruptionReasonKey = "CaptureSessionInterruptionReasonKey"

    private enum Lifecycle: Equatable {
        case stopped, starting, running, interrupted, stopping
    }

    private enum LifecycleEvent {
        case start, started, startFailed, stop, stopped
        /// A stream ended without being asked to; `resumes`: the session waits for its device.
        case streamEnded(resumes: Bool)
        /// The device came back and every stream reopened.
        case resumed
    }

    /// The session's state after `event`, or nil when the event changes nothing
    /// (a start while not stopped, a stop while stopped, a stream of a session
    /// already stopping or interrupted ending).
    private static func transition(_ state: Lifecycle, _ event: LifecycleEvent) -> Lifecycle? {
        switch (state, event) {
        case (.stopped, .start): return .starting
        case (.starting, .started): return .running
        case (.starting, .startFailed): return .stopped
        case (.running, .stop), (.interrupted, .stop): return .stopping
        case (.stopping, .stopped): return .stopped
        case (.running, .streamEnded(let resumes)): return resumes ? .interrupted : .stopped
        case (.interrupted, .resumed): return .running

        case (.starting, .start), (.running, .start), (.interrupted, .start), (.stopping, .start):
            return nil  // startRunning while not stopped does nothing, as in AVFoundation
        case (.stopped, .stop), (.stopping, .stop):
            return nil
        case (.stopped, .streamEnded), (.stopping, .streamEnded), (.interrupted, .streamEnded):
            return nil  // a stream closing as the session stops, or another of an interrupted session
        case (.stopped, .resumed), (.stopping, .resumed):
            return nil  // stopped while the device came back
        case (.starting, .stop):
            illegal("a stop while starting: operations run one at a time, and a stop waits for the start")
        case (.starting, .streamEnded):
            illegal("a stream ended while starting: streams are consumed only once the session runs")
        case (.stopped, .started), (.running, .started), (.interrupted, .started), (.stopping, .started),
             (.stopped, .startFailed), (.running, .startFailed), (.interrupted, .startFailed), (.stopping, .startFailed):
            illegal("\(event) while \(state): only a session starting finishes starting")
        case (.stopped, .stopped), (.starting, .stopped), (.running, .stopped), (.interrupted, .stopped):
            illegal("stopped while \(state): only a session stopping finishes stopping")
        case (.starting, .resumed), (.running, .resumed):
            illegal("resumed while \(state): only an interrupted session resumes")
        }
        return nil
    }

    private static func illegal(_ reason: String) {
        assertionFailure("CaptureSession lifecycle: \(reason)")
    }

    /// Moves the state on by `event`; whether it changed.
    @discardableResult
    private static func apply(_ event: LifecycleEvent, to state: inout State) -> Bool {
        guard let next = transition(state.lifecycle, event) else { return false }
        state.lifecycle = next
        return true
    }

    private struct Running {
        let output: CaptureOutput
        let connection: CaptureConnection
        let request: Camerad_V1_OpenStream
        let stream: FrameStream
    }

    private struct State {
        var preset = Preset.high
        var inputs: [CaptureInput] = []
        var outputs: [CaptureOutput] = []
        var configurationDepth = 0
        var changedDuringConfiguration = false
        var lifecycle = Lifecycle.stopped
        var running: [ObjectIdentifier: Running] = [:]
        var listeners: [UInt64: AsyncStream<Event>.Continuation] = [:]
        var nextListenerID: UInt64 = 1
        var resumesAfterInterruption = false
        /// Waits for the device to come back while interrupted.
        var resumer: Task<Void, Never>?
    }
    private let state = Mutex(State())
    private let work = Mutex<Task<Void, Never>?>(nil)

    public init() {
        LiveSessions.shared.add(self)
    }

    // MARK: - Inputs, outputs, connections

    public var inputs: [CaptureInput] { state.withLock { $0.inputs } }
    public var outputs: [CaptureOutput] { state.withLock { $0.outputs } }
    public var connections: [CaptureConnection] { outputs.flatMap(\.connections) }

    /// One camera and one microphone per session, as on a phone without
    /// multi-camera: false when the session already has a device input of the
    /// same media type — and, as in AVFoundation, for a camera that does not
    /// support the session's preset (set the preset it supports first, or `.inputPriority`).
    public func canAddInput(_ input: CaptureInput) -> Bool {
        guard let input = input as? CaptureDeviceInput else { return false }
        let media = input.device.mediaType
        let (taken, preset) = state.withLock { state in
            (state.inputs.contains { ($0 as? CaptureDeviceInput)?.device.mediaType == media }, state.preset)
        }
        return !taken && (media == .audio || input.device.supportsSessionPreset(preset))
    }

    /// - Precondition: ``canAddInput(_:)``, as AVFoundation requires.
    public func addInput(_ input: CaptureInput) {
        precondition(canAddInput(input), "cannot add \(input): check canAddInput first (one camera and one microphone per session, "
                     + "the camera supporting the session's preset)")
        state.withLock { $0.inputs.append(input) }
        rebuildConnections()
    }

    public func removeInput(_ input: CaptureInput) {
        state.withLock { $0.inputs.removeAll { $0 === input } }
        rebuildConnections()
    }

    /// False for an output already in a session.
    public func canAddOutput(_ output: CaptureOutput) -> Bool {
        output.connections.isEmpty && !state.withLock { state in state.outputs.contains { $0 === output } }
    }

    /// - Precondition: ``canAddOutput(_:)``.
    public func addOutput(_ output: CaptureOutput) {
        precondition(canAddOutput(output), "cannot add the output: it is already in a session")
        state.withLock { $0.outputs.append(output) }
        rebuildConnections()
    }

    public func removeOutput(_ output: CaptureOutput) {
        state.withLock { $0.outputs.removeAll { $0 === output } }
        output.setConnections([])
        configurationDidChange()
    }

    /// Connections form between each output and the device input of each
    /// media type it takes (a camera's for video and photos, a microphone's for
    /// audio; a movie output takes both), as in AVFoundation. A connection
    /// whose input stays is kept, with its settings.
    private func rebuildConnections() {
        let (inputs, outputs) = state.withLock { state in
            (state.inputs.compactMap { $0 as? CaptureDeviceInput }, state.outputs)
        }
        for output in outputs {
            let wanted = output.mediaTypes.compactMap { media in inputs.first { $0.device.hasMediaType(media) } }
            let existing = output.connections
            guard wanted.map(ObjectIdentifier.init) != existing.map({ ObjectIdentifier($0.input) }) else { continue }
            output.setConnections(wanted.map { input in
                existing.first { $0.input === input } ?? CaptureConnection(input: input, output: output, session: self)
            })
        }
        configurationDidChange()
    }

    // MARK: - Presets and configuration

    /// Default `.high`. Picks the device's mode when this session starts it.
    ///
    /// - Precondition: ``canSetSessionPreset(_:)``, as AVFoundation requires.
    public var sessionPreset: Preset {
        get { state.withLock { $0.preset } }
        set {
            precondition(canSetSessionPreset(newValue),
                         "the input's device does not support \(newValue): check canSetSessionPreset first")
            state.withLock { $0.preset = newValue }
            configurationDidChange()
        }
    }

    /// The session's device got an `activeFormat`: as in AVFoundation, the
    /// preset becomes `.inputPriority` (the format is already in force), and a
    /// running session's buffers follow the new format (its outputs that name
    /// no size of their own get the format's, not the old preset's).
    func activeFormatWasSet() {
        let changed = state.withLock { state -> Bool in
            defer { state.preset = .inputPriority }
            return state.preset != .inputPriority
        }
        if changed { configurationDidChange() }
    }

    /// Whether every device input supports `preset` (true with none).
    public func canSetSessionPreset(_ preset: Preset) -> Bool {
        inputs.compactMap { ($0 as? CaptureDeviceInput)?.device }.allSatisfy { $0.supportsSessionPreset(preset) }
    }

    /// Holds changes until the matching ``commitConfiguration()``; nestable.
    public func beginConfiguration() {
        state.withLock { $0.configurationDepth += 1 }
    }

    /// Applies the changes since the outermost ``beginConfiguration()`` as one change.
    public func commitConfiguration() {
        let apply = state.withLock { state -> Bool in
            precondition(state.configurationDepth > 0, "commitConfiguration without beginConfiguration")
            state.configurationDepth -= 1
            guard state.configurationDepth == 0 else { return false }
            defer { state.changedDuringConfiguration = false }
            return state.changedDuringConfiguration
        }
        if apply { enqueue { await self.reconcile() } }
    }

    func configurationDidChange() {
        let apply = state.withLock { state -> Bool in
            if state.configurationDepth > 0 {
                state.changedDuringConfiguration = true
                return false
            }
            return state.lifecycle == .running
        }
        if apply { enqueue { await self.reconcile() } }
    }

    // MARK: - Running

    /// False while interrupted.
    public var isRunning: Bool { state.withLock { $0.lifecycle == .running } }
    /// True while interrupted (waiting for its device to come back); a stopped session is not.
    public var isInterrupted: Bool { state.withLock { $0.lifecycle == .interrupted } }

    /// When true, a session whose device goes away (or whose daemon does) stays
    /// interrupted instead of stopping, and resumes — ``Event/interruptionEnded``
    /// — when a device with the same uniqueID is back. Default false: it stops.
    /// Linux only; AVFoundation resumes from its own interruptions by itself.
    public var automaticallyResumesAfterInterruption: Bool {
        get { state.withLock { $0.resumesAfterInterruption } }
        set { state.withLock { $0.resumesAfterInterruption = newValue } }
    }

    /// Starts the flow of frames. Failures are posted as ``runtimeErrorNotification``
    /// (and ``Event/runtimeError(_:)``), as in AVFoundation; ``start()`` throws them.
    public func startRunning() async {
        try? await start()
    }

    /// ``startRunning()`` that also throws what went wrong. Linux only.
    public func start() async throws(CaptureError) {
        let failure = Mutex<CaptureError?>(nil)
        await enqueue {
            do throws(CaptureError) {
                try await self.performStart()
            } catch {
                failure.withLock { $0 = error }
            }
        }.value
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Stops the flow of frames; returns once no more will be delivered.
    public func stopRunning() async {
        await enqueue { await self.performStop() }.value
    }

    /// The session's events from now on, for as long as the sequence is iterated.
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let id = state.withLock { state in
            defer { state.nextListenerID += 1 }
            state.listeners[state.nextListenerID] = continuation
            return state.nextListenerID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// Runs `operation` after every operation enqueued before it.
    @discardableResult
    private func enqueue(_ operation: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        work.withLock { previous in
            let last = previous
            let task = Task {
                await last?.value
                await operation()
            }
            previous = task
            return task
        }
    }

    /// What each output wants now: its connection and the stream to open; and
    /// the outputs whose settings no stream can give, with why.
    private func plan() -> (streams: [(CaptureOutput, CaptureConnection, Camerad_V1_OpenStream)], refused: [CaptureError]) {
        let preset = sessionPreset
        var refused: [CaptureError] = []
        let streams = outputs.compactMap { output -> (CaptureOutput, CaptureConnection, Camerad_V1_OpenStream)? in
            guard let connection = output.connections.first else { return nil }
            let settings: Camerad_V1_OutputSettings
            do throws(CaptureError) {
                guard let wanted = try output.streamSettings(for: connection) else { return nil }
                settings = wanted
            } catch {
                refused.append(error)
                return nil
            }
            var request = Camerad_V1_OpenStream()
            request.uniqueID = connection.input.device.uniqueID
            request.settings = settings
            if output.mediaType == .audio {
                do throws(CaptureError) {
                    request.audio = try output.audioFormat()
                } catch {
                    refused.append(error)
                    return nil
                }
            } else {
                request.preset = preset.proto
            }
            return (output, connection, request)
        }
        return (streams, refused)
    }

    private func performStart() async throws(CaptureError) {
        guard state.withLock({ Self.apply(.start, to: &$0) }) else { return }
        for output in outputs { output.sessionWillStart() }
        var opened: [Running] = []
        do throws(CaptureError) {
            let (streams, refused) = plan()
            if let error = refused.first { throw error }
            for (output, connection, request) in streams {
                let stream = try await FrameStream.open(request)
                opened.append(Running(output: output, connection: connection, request: request, stream: stream))
            }
        } catch {
            for running in opened { running.stream.close() }
            state.withLock { _ = Self.apply(.startFailed, to: &$0) }
            // The run ends before it began: a sequence waiting for it ends too.
            for output in outputs { output.sessionDidStop(endedByItself: true) }
            post(.runtimeError(error))
            CaptureDiagnostics.report("the session did not start", error)
            throw error
        }
        state.withLock { state in
            Self.apply(.started, to: &state)
            for running in opened { state.running[ObjectIdentifier(running.output)] = running }
        }
        for running in opened { consume(running) }
        post(.didStartRunning)
    }

    private func performStop() async {
        let stopped = state.withLock { state -> (streams: [Running], resumer: Task<Void, Never>?)? in
            guard Self.apply(.stop, to: &state) else { return nil }
            defer {
                state.running.removeAll()
                state.resumer = nil
            }
            return (Array(state.running.values), state.resumer)
        }
        guard let stopped else { return }
        stopped.resumer?.cancel()
        for running in stopped.streams { running.stream.close() }
        for output in outputs { output.sessionDidStop(endedByItself: false) }
        for device in Set(stopped.streams.map(\.connection.input.device)) { await Self.waitForTorchOff(device) }
        state.withLock { _ = Self.apply(.stopped, to: &$0) }
        post(.didStopRunning)
    }

    /// AVFoundation's stopRunning returns once the session has stopped, and the
    /// torch, which shines only while its device runs, is off then. camerad
    /// turns it off when the device stops, a moment after its last stream
    /// closed: wait for that (a few milliseconds; at most five seconds), unless
    /// another client keeps the device running and the torch with it.
    private static func waitForTorchOff(_ device: CaptureDevice) async {
        guard device.isTorchActive else { return }
        for _ in 0..<500 {
            guard (try? await device.refresh()) != nil, device.isTorchActive,
                  (try? await CaptureDaemon.statistics(for: device).streams) == 0 else { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Reopens every stream after an interruption.
    private func performResume() async {
        guard state.withLock({ $0.lifecycle == .interrupted }) else { return }
        var opened: [Running] = []
        let (streams, refused) = plan()
        for error in refused { post(.runtimeError(error)) }
        for (output, connection, request) in streams {
            guard let stream = try? await FrameStream.open(request) else {
                for running in opened { running.stream.close() }
                return  // still away; the resumer keeps watching
            }
            opened.append(Running(output: output, connection: connection, request: request, stream: stream))
        }
        let resumed = state.withLock { state -> Bool in
            guard Self.apply(.resumed, to: &state) else { return false }
            state.resumer?.cancel()
            state.resumer = nil
            for running in opened { state.running[ObjectIdentifier(running.output)] = running }
            return true
        }
        guard resumed else {
            for running in opened { running.stream.close() }
            return
        }
        for running in opened { consume(running) }
        post(.interruptionEnded)
    }

    /// Watches for the input's device to come back (reconnecting to the daemon
    /// when it was the daemon that went), then resumes.
    private func watchForDevice(_ uniqueID: String) -> Task<Void, Never> {
        Task { [weak self] in
            while !Task.isCancelled {
                if let events = try? await CaptureDevice.events(includeExisting: true) {
                    do {
                        for try await event in events where event.kind == .connected && event.device.uniqueID == uniqueID {
                            guard let self else { return }
                            await self.enqueue { await self.performResume() }.value
                            if !self.isInterrupted { return }
                        }
                    } catch {}
                }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    /// Reopens the streams whose settings changed, opens new ones, closes gone ones.
    private func reconcile() async {
        guard state.withLock({ $0.lifecycle == .running }) else { return }
        let (wanted, refused) = plan()
        // An output whose new settings no stream can give loses its stream, and says why.
        for error in refused { post(.runtimeError(error)) }
        let current = state.withLock { $0.running }
        var stale: [Running] = []
        for (key, running) in current where !wanted.contains(where: { ObjectIdentifier($0.0) == key && $0.2 == running.request }) {
            stale.append(running)
        }
        state.withLock { state in for running in stale { state.running[ObjectIdentifier(running.output)] = nil } }
        for running in stale { running.stream.close() }
        for (output, connection, request) in wanted where current[ObjectIdentifier(output)]?.request != request {
            do {
                let stream = try await FrameStream.open(request)
                let running = Running(output: output, connection: connection, request: request, stream: stream)
                state.withLock { $0.running[ObjectIdentifier(output)] = running }
                consume(running)
            } catch {
                post(.runtimeError(error))
            }
        }
    }

    /// Delivers a stream's events to its output, on the connection's event-loop
    /// thread as they arrive (the output hands each on to its delegate's queue
    /// or its sequence: one hop), until the stream ends.
    private func consume(_ running: Running) {
        let key = ObjectIdentifier(running.output)
        let stream = running.stream
        running.connection.setModeNote(stream.started.note)
        stream.consume(FrameStream.Consumer(
            event: { event in running.output.deliver(event, from: running.connection) },
            end: { [weak self] error in
                // Off the event loop: ending a run posts notifications, which run observers' code.
                Task { self?.streamEnded(key, stream, error) }
            }))
    }

    /// A stream ended without being asked to: its device or the daemon went
    /// away, or its output can no longer be made. The whole session is
    /// interrupted: every other stream closes too, and they come back together
    /// (when asked to) or the session stops.
    private func streamEnded(_ key: ObjectIdentifier, _ stream: FrameStream, _ error: CaptureError?) {
        let ended = state.withLock { state -> (others: [Running], resumes: String?)? in
            guard let running = state.running[key], running.stream === stream else { return nil }
            state.running[key] = nil
            let resumes = state.resumesAfterInterruption
            guard Self.apply(.streamEnded(resumes: resumes), to: &state) else { return nil }
            defer { state.running.removeAll() }
            return (Array(state.running.values), resumes ? running.connection.input.device.uniqueID : nil)
        }
        guard let ended else { return }
        for running in ended.others { running.stream.close() }
        let error = error ?? CaptureError(.deviceDisconnected, "camerad ended the stream")
        let reason: InterruptionReason = switch error.code {
        case .deviceBusy: .videoDeviceInUseByAnotherClient
        case .shuttingDown, .connectionLost, .daemonUnavailable: .daemonNotAvailable
        default: .videoDeviceNotAvailable
        }
        post(.wasInterrupted(reason))
        post(.runtimeError(error))
        if let uniqueID = ended.resumes {
            let resumer = watchForDevice(uniqueID)
            state.withLock { state in
                if state.lifecycle == .interrupted { state.resumer = resumer } else { resumer.cancel() }
            }
        } else {
            for output in outputs { output.sessionDidStop(endedByItself: true) }
            post(.didStopRunning)
        }
    }

    private func post(_ event: Event) {
        for listener in state.withLock({ Array($0.listeners.values) }) { listener.yield(event) }
        let center = NotificationCenter.default
        switch event {
        case .didStartRunning:
            center.post(name: Self.didStartRunningNotification, object: self)
        case .didStopRunning:
            center.post(name: Self.didStopRunningNotification, object: self)
        case .runtimeError(let error):
            center.post(name: Self.runtimeErrorNotification, object: self, userInfo: [Self.errorKey: error])
        case .wasInterrupted(let reason):
            center.post(name: Self.wasInterruptedNotification, object: self, userInfo: [Self.interruptionReasonKey: reason.rawValue])
        case .interruptionEnded:
            center.post(name: Self.interruptionEndedNotification, object: self)
        }
    }
}

// The notification names and keys as AVFoundation spells them, without the
// `AV` (`.AVCaptureSessionRuntimeError` → `.CaptureSessionRuntimeError`).
extension Notification.Name {
    /// ``CaptureSession/runtimeErrorNotification``.
    public static let CaptureSessionRuntimeError = CaptureSession.runtimeErrorNotification
    /// ``CaptureSession/didStartRunningNotification``.
    public static let CaptureSessionDidStartRunning = CaptureSession.didStartRunningNotification
    /// ``CaptureSession/didStopRunningNotification``.
    public static let CaptureSessionDidStopRunning = CaptureSession.didStopRunningNotification
    /// ``CaptureSession/wasInterruptedNotification``.
    public static let CaptureSessionWasInterrupted = CaptureSession.wasInterruptedNotification
    /// ``CaptureSession/interruptionEndedNotification``.
    public static let CaptureSessionInterruptionEnded = CaptureSession.interruptionEndedNotification
}

/// AVFoundation's names, for seed code that keeps the `AV` prefix.
extension Notification.Name {
    public static let AVCaptureSessionRuntimeError = CaptureSession.runtimeErrorNotification
    public static let AVCaptureSessionDidStartRunning = CaptureSession.didStartRunningNotification
    public static let AVCaptureSessionDidStopRunning = CaptureSession.didStopRunningNotification
    public static let AVCaptureSessionWasInterrupted = CaptureSession.wasInterruptedNotification
    public static let AVCaptureSessionInterruptionEnded = CaptureSession.interruptionEndedNotification
}

/// AVCaptureSessionErrorKey, with its prefix: ``CaptureSession/errorKey``.
public let AVCaptureSessionErrorKey = CaptureSession.errorKey
/// AVCaptureSessionInterruptionReasonKey, with its prefix: ``CaptureSession/interruptionReasonKey``.
public let AVCaptureSessionInterruptionReasonKey = CaptureSession.interruptionReasonKey

extension CaptureSession {
    /// The clock the session's media is stamped on (AVCaptureSession.synchronizationClock):
    /// the host's monotonic clock, every session's, every process's.
    public var synchronizationClock: CMClock { CMClockGetHostTimeClock() }
}

/// AVCaptureSessionErrorKey: ``CaptureSession/errorKey``.
public let CaptureSessionErrorKey = CaptureSession.errorKey
/// AVCaptureSessionInterruptionReasonKey: ``CaptureSession/interruptionReasonKey``.
public let CaptureSessionInterruptionReasonKey = CaptureSession.interruptionReasonKey

/// Every CaptureSession alive in the process, so that a device's new
/// `activeFormat` reaches the sessions using it.
final class LiveSessions: Sendable {
    static let shared = LiveSessions()

    private struct Entry {
        weak var session: CaptureSession?
    }
    private let entries = Mutex<[Entry]>([])

    func add(_ session: CaptureSession) {
        entries.withLock { entries in
            entries.removeAll { $0.session == nil }
            entries.append(Entry(session: session))
        }
    }

    func deviceActiveFormatWasSet(_ device: CaptureDevice) {
        let sessions = entries.withLock { $0.compactMap(\.session) }
        for session in sessions where session.inputs.contains(where: { ($0 as? CaptureDeviceInput)?.device == device }) {
            session.activeFormatWasSet()
        }
    }
}
