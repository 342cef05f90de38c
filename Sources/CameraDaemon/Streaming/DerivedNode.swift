import CameraIPC
import CameraMedia
import Logging
import Synchronization

/// What a derived node reads: any node of the graph — a ``MediaNode``, a
/// camera's variant (``CameraSource``), a microphone's layout
/// (``MicrophoneSource``) — subscribed to as camerad's own. The one way a
/// derived node (a resampler, a meter, an encoder, a detector) is attached.
protocol NodeSource: Sendable {
    /// Subscribes `input` as camerad's own, holding at most `inFlight` of
    /// the source's buffers at once; returns what ends that subscription.
    func attach(_ input: NodeInput, inFlight: Int) async throws -> Detach
}

/// Ends a derived node's subscription to its source.
typealias Detach = @Sendable () -> Void

extension MediaNode: NodeSource {
    /// Synchronous: a node of the graph is subscribed to at once.
    func attach(_ input: NodeInput, inFlight: Int) throws(CameraError) -> Detach {
        let id = try subscribe(input, policy: SubscriptionPolicy(maxInFlight: inFlight), for: .daemon)
        return { [self] in unsubscribe(id) }
    }
}

/// A camera's variant as a derived node reads it: a stream of `request`
/// (its format, size, turn and frame rate), the camera started if idle.
struct CameraSource: NodeSource {
    let streamer: DeviceStreamer
    let request: StreamRequest

    func attach(_ input: NodeInput, inFlight: Int) async throws -> Detach {
        var request = request
        request.maxFramesInFlight = inFlight
        let id = try await streamer.open(request, for: .daemon, sink: input)
        return { [streamer] in streamer.close(id) }
    }
}

/// A microphone heard in `layout` as a derived node reads it (its own
/// periods, or a variant's; `onTheClock`: resampled onto CLOCK_MONOTONIC),
/// the microphone started if idle.
struct MicrophoneSource: NodeSource {
    let microphone: MicrophoneStreamer
    let layout: AudioLayout
    var onTheClock = false

    func attach(_ input: NodeInput, inFlight: Int) async throws -> Detach {
        let id = try await microphone.listen(layout, onTheClock: onTheClock, policy: SubscriptionPolicy(maxInFlight: inFlight),
                                             sink: input, for: .daemon)
        return { [microphone] in microphone.close(id) }
    }
}

/// A derived node attached to what it reads (a ``NodeSource``): its
/// ``NodeInput`` subscribed as camerad's own until ``stop()``, which ends the
/// node once the buffers it was given are processed and only then lets go of
/// its source. What an audio variant, a meter and both encoders are made of,
/// and a detector next.
///
/// ```
/// source ─► NodeInput (worker thread of its own) ─► process ─► node.publish ─► node's subscriptions
/// stop(): the buffers queued processed, finish (an encoder's flush), node ended ─► source let go
/// ```
struct DerivedNode: Sendable {
    let node: MediaNode
    private let input: NodeInput
    private let detach: Detach

    /// Attaches `node`, running `process` for each of `source`'s buffers, to a
    /// node of the graph, at once; `node` is ended if that fails.
    ///
    /// - Parameters:
    ///   - inFlight: the source's buffers its worker may hold (one processing, the rest waiting).
    ///   - passesDropsOn: whether the source's drops reach the node's subscriptions as they are
    ///     (``NodeInput``); false for a node that numbers its buffers its own way.
    ///   - finish: what the node publishes once its input ended, after its last buffer (an encoder's held packets).
    /// - Throws: RESOURCE_EXHAUSTED when no worker or subscription can be had.
    init(_ node: MediaNode, reading source: MediaNode, inFlight: Int = 4, passesDropsOn: Bool = true,
         priority: PollingThread.Priority = .normal, process: @escaping NodeInput.Process,
         finish: (@Sendable (_ node: MediaNode) -> Void)? = nil) throws(CameraError) {
        let input = try Self.input(to: node, passesDropsOn: passesDropsOn, priority: priority, process: process, finish: finish)
        do {
            detach = try source.attach(input, inFlight: inFlight)
        } catch {
            input.end(with: nil)
            throw error
        }
        (self.node, self.input) = (node, input)
    }

    /// Attaches `node` to any source (a camera's variant, a microphone's
    /// layout), started if idle; `node` is ended if that fails.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when no worker can be had; what attaching to the source throws.
    init(_ node: MediaNode, reading source: some NodeSource, inFlight: Int = 4, passesDropsOn: Bool = true,
         priority: PollingThread.Priority = .normal, process: @escaping NodeInput.Process,
         finish: (@Sendable (_ node: MediaNode) -> Void)? = nil) async throws {
        let input = try Self.input(to: node, passesDropsOn: passesDropsOn, priority: priority, process: process, finish: finish)
        do {
            detach = try await source.attach(input, inFlight: inFlight)
        } catch {
            input.end(with: nil)
            throw error
        }
        (self.node, self.input) = (node, input)
    }

    private static func input(to node: MediaNode, passesDropsOn: Bool, priority: PollingThread.Priority,
                              process: @escaping NodeInput.Process,
                              finish: (@Sendable (MediaNode) -> Void)?) throws(CameraError) -> NodeInput {
        do {
            return try NodeInput(to: node, passesDropsOn: passesDropsOn, priority: priority, process: process, finish: finish)
        } catch {
            node.end()
            throw CameraError(.resourceExhausted, "no worker for \(node.name): \(error)")
        }
    }

    /// Ends the node once the buffers given to it so far are processed (its
    /// `finish` run after them: every packet an encoder holds reaches its
    /// subscribers), then lets go of the source — not before: let go, the
    /// source would take back the buffers still queued here and fill them again.
    func stop() {
        input.stop(then: detach)
    }

    /// Runs `job` on the node's worker, between two buffers; false (and it
    /// never runs) once its input ended.
    func run(_ job: @escaping @Sendable () -> Void) -> Bool { input.run(job) }
}

/// A derived node's input: a sink on another node (a camera's variant, or a
/// ``MediaNode``) whose frames `process` makes into buffers of `node` —
/// none, one or several per frame (``MediaNode/publish(sequence:timestampNanoseconds:durationNanoseconds:packet:write:)``) —
/// on a worker thread of its own, so the node it reads from never waits for
/// it. Each frame is given back once processed; while the worker is behind,
/// the upstream subscription's in-flight limit drops frames for it alone,
/// and those drops, like any upstream drop, reach the node's subscriptions
/// in order with its buffers. The upstream end ends the node.
final class NodeInput: FrameSink {
    typealias Process = @Sendable (_ frame: PooledFrame, _ node: MediaNode) -> Void

    let node: MediaNode
    /// Its worker: a thread of its own.
    private let thread: WorkerThread
    private let process: Process
    /// Whether upstream drops reach the node's subscriptions as they are; false
    /// for a node that numbers its buffers its own way and reports its gaps itself
    /// (an audio variant, whose periods are not its source's).
    private let passesDropsOn: Bool
    /// Run once on the worker after the last frame, before the node ends (an encoder's flush).
    private let finish: (@Sendable (_ node: MediaNode) -> Void)?
    private let finished = Atomic(false)

    /// - Throws: when no worker thread can be made.
    /// - Parameter finish: what the node publishes once its input ended, after its last frame (an encoder's held packets).
    init(to node: MediaNode, passesDropsOn: Bool = true, priority: PollingThread.Priority = .normal,
         process: @escaping Process, finish: (@Sendable (_ node: MediaNode) -> Void)? = nil) throws(SystemError) {
        self.node = node
        self.process = process
        self.passesDropsOn = passesDropsOn
        self.finish = finish
        thread = try WorkerThread(name: "camerad-node", priority: priority)
    }

    func started(_ news: StreamNews) {}

    func frame(_ handle: FrameHandle) -> Bool {
        thread.async { [node, process] in
            process(handle.frame, node)
            do {
                try handle.release()
            } catch {
                node.logger.error("\(node.name): giving back frame \(handle.frame.sequence) failed: \(error)")
            }
        }
        return true
    }

    func dropped(_ drops: DropTally) {
        guard passesDropsOn else { return }
        thread.async { [node] in node.report(drops) }
    }

    func formatChanged(_ news: StreamNews) {}

    /// Runs `job` on the worker, between two buffers; false (and it never runs) once the input ended.
    func run(_ job: @escaping @Sendable () -> Void) -> Bool { thread.asyncUnlessFinished(job) }

    func interrupted(_ reason: StreamInterruption, _ error: CameraError) {
        thread.async { [self] in
            finishOnce()
            node.end(reason, error)
        }
    }

    func end(with error: CameraError?) {
        thread.async { [self] in
            finishOnce()
            node.end(nil, error)
        }
        thread.finish()
    }

    /// Ends the node once the frames given so far are processed (``finish``
    /// run after them); `then` runs on the worker after — where its upstream
    /// stream is closed, not before: closed, it would give back the frames
    /// still queued here, whose slots the camera then fills again.
    func stop(then after: @escaping @Sendable () -> Void) {
        thread.async { [self] in
            finishOnce()
            node.end()
            after()
        }
        thread.finish()
    }

    /// On the worker: ``finish``, the first time its input ends.
    private func finishOnce() {
        guard let finish, !finished.exchange(true, ordering: .relaxed) else { return }
        finish(node)
    }
}
