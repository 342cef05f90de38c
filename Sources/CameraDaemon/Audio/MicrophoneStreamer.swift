import CameraIPC
import CameraMedia
import Logging

/// The fan-out of one microphone (the audio side of ``DeviceStreamer``), on
/// the media graph: the microphone runs while anyone listens; each distinct
/// layout listeners ask for is one ``AudioVariant`` of its periods (the
/// device's own layout is its source node itself: no conversion), and its
/// levels are one ``AudioMeter`` for everyone who watches them. A listener is a
/// subscription to one of those nodes, with its in-flight limit and drop
/// accounting; when the last listener of a variant goes, the variant stops,
/// and with the last of all, the microphone.
///
/// ```
/// microphone's capture ─► source node ─┬─► listeners of its own layout
///                                      ├─► AudioVariant (16 kHz mono s16) ─► its listeners
///                                      └─► AudioMeter ─► levels watchers
/// ```
final class MicrophoneStreamer: Sendable {
    let microphone: any MicrophoneBackend
    let budget: ClientBudget
    private let logger: Logger
    private let onDeviceLost: @Sendable (CameraError) -> Void
    /// Where the microphone starts and stops, and its variants and meter are
    /// made and stopped, one job after another: a device is never opened while
    /// its last capture is still closing, and no lock is held while a pool is made.
    private let executor: DeviceExecutor
    private let state: OrderedMutex<State>

    /// The microphone capturing, and the nodes made of it.
    private struct Running {
        let capture: any AudioCapture
        /// By layout, and whether on the clock (a recording's) or on the microphone's.
        var variants: [VariantKey: AudioVariant] = [:]
        var meter: AudioMeter?
    }

    private struct VariantKey: Hashable {
        let layout: AudioLayout
        let onTheClock: Bool
    }

    private struct Listener {
        /// The layout it hears; nil for a levels watcher.
        let layout: AudioLayout?
        /// Whether it hears a variant kept on CLOCK_MONOTONIC.
        let onTheClock: Bool
        let node: MediaNode
        let subscription: UInt64
        /// The variant or meter it uses, charged to its client; nil for the microphone's own layout.
        let claim: ClientBudget.Claim?
    }

    /// Guarded by ``state``'s lock; ``State/running`` is changed only on the executor.
    private struct State {
        var running: Running?
        var listeners: [UInt64: Listener] = [:]
        var nextID: UInt64 = 1
        /// Set once the microphone went or the daemon stops: nothing starts again.
        var interruption: CameraError?
    }

    /// `onDeviceLost` is told when the microphone fails while capturing (it
    /// went): the registry removes it.
    init(microphone: any MicrophoneBackend, budget: ClientBudget, logger: Logger,
         onDeviceLost: @escaping @Sendable (CameraError) -> Void) {
        self.microphone = microphone
        self.budget = budget
        self.logger = logger
        self.onDeviceLost = onDeviceLost
        executor = DeviceExecutor(label: microphone.uniqueID)
        state = OrderedMutex(.microphoneStreamer, State())
    }

    /// Periods in `layout` for `sink` (a client's stream), from the next one
    /// on; the microphone starts if it was idle.
    ///
    /// - Returns: the listener's id, for ``close(_:)`` and ``release(_:poolID:slots:)``.
    /// - Throws: the microphone's error when it cannot start; RESOURCE_EXHAUSTED
    ///   past the owner's budget or the variant's slots; DEVICE_DISCONNECTED
    ///   once it went.
    ///
    /// `onTheClock`: a variant even in the microphone's own layout, its frames
    /// resampled onto CLOCK_MONOTONIC (an encoder's, whose file counts samples);
    /// the microphone's own periods keep its clock, stamped with their capture times.
    func listen(_ layout: AudioLayout, onTheClock: Bool = false, policy: SubscriptionPolicy, sink: any FrameSink,
                for owner: ClientBudget.Owner) async throws -> UInt64 {
        try await executor.run { try self.attach(layout, onTheClock: onTheClock, policy: policy, sink: sink, owner: owner) }
    }

    /// The microphone's levels for `sink`, a reading every 100 ms (records
    /// of ``AudioMeter``), copied: the sink holds no slot.
    func watchLevels(sink: any FrameSink, for owner: ClientBudget.Owner) async throws -> UInt64 {
        try await executor.run {
            try self.attach(nil, policy: SubscriptionPolicy(maxInFlight: 1, copies: true), sink: sink, owner: owner)
        }
    }

    /// On the executor.
    private func attach(_ layout: AudioLayout?, onTheClock: Bool = false, policy: SubscriptionPolicy, sink: any FrameSink,
                        owner: ClientBudget.Owner) throws(CameraError) -> UInt64 {
        if let interruption = state.withLock({ $0.interruption }) { throw interruption }
        do throws(CameraError) {
            // A variant or the meter costs a worker thread: charged to the client before it is made.
            let key = layout.map { "\(microphone.uniqueID) as \($0)" } ?? "\(microphone.uniqueID)'s levels"
            let native = layout == microphone.audio.native && !onTheClock
            let claim = native ? nil : try budget.claim(.audioNode, key, for: owner)
            let node = try node(for: layout, native: native, onTheClock: onTheClock)
            let subscription = try node.subscribe(sink, policy: policy, for: owner)
            return state.withLock { state in
                defer { state.nextID += 1 }
                state.listeners[state.nextID] = Listener(layout: layout, onTheClock: onTheClock, node: node, subscription: subscription,
                                                         claim: claim)
                return state.nextID
            }
        } catch {
            stopUnused()
            throw error
        }
    }

    /// The node that serves `layout` (nil: the levels; `native`, the
    /// microphone's own periods), started or made if need be; on the executor, no lock held.
    private func node(for layout: AudioLayout?, native: Bool, onTheClock: Bool) throws(CameraError) -> MediaNode {
        let running: Running
        if let current = state.withLock({ $0.running }) {
            running = current
        } else {
            let lost = onDeviceLost
            running = Running(capture: try microphone.startCapture(budget: budget, logger: logger) { error in
                // Not on the capture's thread: stopping it waits for that thread.
                Task { lost(error) }
            })
            state.withLock { $0.running = running }
        }
        let own = microphone.audio.native
        guard let layout else {
            if let meter = running.meter { return meter.node }
            let meter = try AudioMeter(of: running.capture.node, layout: own, budget: budget, logger: logger)
            state.withLock { $0.running?.meter = meter }
            return meter.node
        }
        if native { return running.capture.node }
        let key = VariantKey(layout: layout, onTheClock: onTheClock)
        if let variant = running.variants[key] { return variant.node }
        let variant = try AudioVariant(of: running.capture.node, layout: own, as: layout, onTheClock: onTheClock, budget: budget, logger: logger)
        state.withLock { $0.running?.variants[key] = variant }
        return variant.node
    }

    /// Sets the microphone's input gain (0 to 1 over its capture volume), on its executor.
    ///
    /// - Throws: INVALID_ARGUMENT outside 0 to 1; UNSUPPORTED without a capture
    ///   volume; the device's error.
    func setInputGain(_ gain: Float) async throws {
        guard (0...1).contains(gain) else {
            throw CameraError(.invalidArgument, "input gain \(gain) is outside 0 to 1")
        }
        let microphone = self.microphone
        try await executor.run { () throws -> Void in try microphone.setInputGain(gain) }
    }

    /// Ends a listener as its client asked: what it holds goes back at once;
    /// the microphone stops, on its executor, if nobody else listens.
    func close(_ id: UInt64) {
        guard let listener = state.withLock({ $0.listeners.removeValue(forKey: id) }) else { return }
        listener.node.unsubscribe(listener.subscription)
        executor.enqueue { self.stopUnused() }
    }

    /// A listener is done with some slots (ReleaseFrames).
    ///
    /// - Throws: INVALID_ARGUMENT for a slot it does not hold.
    func release(_ id: UInt64, poolID: UInt64, slots: [Int]) throws {
        guard let listener = state.withLock({ $0.listeners[id] }) else { return }
        try listener.node.release(listener.subscription, poolID: poolID, slots: slots)
    }

    /// Ends every listener with `reason` (the microphone went, the daemon
    /// stops), and the capture; nothing starts again.
    func interrupt(_ reason: StreamInterruption, _ error: CameraError) {
        state.withLock { state in
            state.interruption = error
            state.listeners = [:]
        }
        executor.enqueue {
            guard let running = self.state.withLock({ state in defer { state.running = nil }; return state.running }) else { return }
            // Variants and the meter hear it through their inputs and end their listeners alike.
            running.capture.node.end(reason, error)
            running.capture.stop()
        }
    }

    /// Stops the variants and the meter nobody listens to, and the microphone
    /// when nobody listens at all; on the executor.
    private func stopUnused() {
        let (variants, meter, capture) = state.withLock { state -> ([AudioVariant], AudioMeter?, (any AudioCapture)?) in
            guard var running = state.running else { return ([], nil, nil) }
            // Those of a variant or the meter hold a claim; the microphone's own listeners do not.
            let listeners = state.listeners.values.filter { $0.claim != nil }
            let heard = Set(listeners.compactMap { listener in listener.layout.map { VariantKey(layout: $0, onTheClock: listener.onTheClock) } })
            let unheard = running.variants.filter { !heard.contains($0.key) }
            for key in unheard.keys { running.variants[key] = nil }
            var meter: AudioMeter?
            if !listeners.contains(where: { $0.layout == nil }) {
                meter = running.meter
                running.meter = nil
            }
            state.running = state.listeners.isEmpty ? nil : running
            return (Array(unheard.values), meter, state.listeners.isEmpty ? running.capture : nil)
        }
        for variant in variants { variant.stop() }
        meter?.stop()
        capture?.stop()
    }
}
