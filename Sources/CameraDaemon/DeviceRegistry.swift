import CameraIPC
import Glibc
import Logging
import Synchronization

/// The devices the daemon serves — cameras and microphones, each in the order
/// it found them — and everyone watching them come and go.
///
/// Events reach every subscriber in the same order. Subscribing takes the
/// current devices and the subscription in one step, so a watcher misses nothing.
final class DeviceRegistry: Sendable {
    typealias Event = DeviceEvent

    private struct State {
        var devices: [any CameraBackend] = []
        var streamers: [String: DeviceStreamer] = [:]
        /// The microphones, each with its fan-out, in the order they arrived.
        var microphones: [MicrophoneStreamer] = []
        var subscribers: [UInt64: AsyncStream<Event>.Continuation] = [:]
        var nextSubscriberID: UInt64 = 1
    }
    private let state = OrderedMutex(.deviceRegistry, State())
    /// Events decided under the state's lock, each with the watchers it goes
    /// to, yielded once the lock is let go (``withState(_:)``).
    private let broadcasts = DeliveryQueue<(events: [Event], to: [AsyncStream<Event>.Continuation])>(.registryWatchers)
    /// Subscriptions whose streams ended, dropped at the next look.
    private let endedSubscribers = OrderedMutex<Set<UInt64>>(.registryWatchers, [])
    private let logger: Logger
    /// Who may configure each device.
    let locks: ConfigurationLocks
    /// Where timers run (a lock waiter's deadline, a photo's, a settling
    /// adjustment's end): the daemon's event loop.
    let timers: EventLoop
    /// What clients, their streams and frame pools may take, across every device.
    let clientBudget: ClientBudget
    private let additionObserver = OrderedMutex<@Sendable (any CameraBackend) -> Void>(.registryWatchers, { _ in })

    /// `handler` is given each device as it is added, after the watchers heard of it.
    func observeAdditions(_ handler: @escaping @Sendable (any CameraBackend) -> Void) {
        additionObserver.withLock { $0 = handler }
    }

    init(timers: EventLoop, budget: ClientBudget = ClientBudget(), logger: Logger = Logger(label: "camerad")) {
        self.timers = timers
        locks = ConfigurationLocks(timers: timers)
        clientBudget = budget
        self.logger = logger
        locks.observe { [weak self] uniqueID in self?.lockDidChange(uniqueID) }
    }

    /// A device as clients see it: its own description, the mode it runs in
    /// now, and who holds its lock.
    func describe(_ device: any CameraBackend) -> DeviceDescription {
        state.withLock { state in describe(device, state) }
    }

    private func describe(_ device: any CameraBackend, _ state: State) -> DeviceDescription {
        var description = device.describe()
        if let mode = state.streamers[device.uniqueID]?.runningMode { description.activeMode = mode }
        description.lockHolder = locks.holder(of: device.uniqueID)
        description.linkedUniqueIDs = linked(to: device.uniqueID, on: device.usbDevice, state)
        return description
    }

    private func describe(_ microphone: any MicrophoneBackend, _ state: State) -> DeviceDescription {
        var description = microphone.describe()
        description.lockHolder = locks.holder(of: microphone.uniqueID)
        description.linkedUniqueIDs = linked(to: microphone.uniqueID, on: microphone.usbDevice, state)
        description.inputGain = microphone.inputGain
        return description
    }

    /// The devices on the USB device `usbDevice` but `uniqueID`: a webcam's
    /// camera and microphone (AVFoundation's linkedDevices).
    private func linked(to uniqueID: String, on usbDevice: String?, _ state: State) -> [String] {
        guard let usbDevice else { return [] }
        return (state.devices.filter { $0.usbDevice == usbDevice }.map(\.uniqueID)
            + state.microphones.map(\.microphone).filter { $0.usbDevice == usbDevice }.map(\.uniqueID))
            .filter { $0 != uniqueID }
    }

    /// Tells the watchers that the devices linked to `uniqueID`, which came or went, changed.
    private func linksChanged(_ uniqueID: String, on usbDevice: String?, _ state: inout State) {
        guard let usbDevice else { return }
        for device in state.devices where device.usbDevice == usbDevice && device.uniqueID != uniqueID {
            broadcast(.changed, describe(device, state), &state)
        }
        for microphone in state.microphones.map(\.microphone) where microphone.usbDevice == usbDevice && microphone.uniqueID != uniqueID {
            broadcast(.changed, describe(microphone, state), &state)
        }
    }

    /// Every camera, in the order they arrived.
    var devices: [any CameraBackend] { state.withLock { $0.devices } }

    /// Every microphone's fan-out, in the order they arrived.
    var microphones: [MicrophoneStreamer] { state.withLock { $0.microphones } }

    /// A microphone's fan-out.
    func microphone(_ uniqueID: String) -> MicrophoneStreamer? {
        state.withLock { state in state.microphones.first { $0.microphone.uniqueID == uniqueID } }
    }

    /// Every device as clients see it: the cameras, then the microphones.
    var descriptions: [DeviceDescription] {
        state.withLock { state in
            state.devices.map { describe($0, state) }
                + state.microphones.map { describe($0.microphone, state) }
        }
    }

    /// A camera or a microphone as clients see it; nil when there is none.
    func description(of uniqueID: String) -> DeviceDescription? {
        state.withLock { state in
            if let camera = state.devices.first(where: { $0.uniqueID == uniqueID }) {
                return describe(camera, state)
            }
            return state.microphones.first { $0.microphone.uniqueID == uniqueID }.map { describe($0.microphone, state) }
        }
    }

    private func isTaken(_ uniqueID: String, _ state: State) -> Bool {
        state.devices.contains { $0.uniqueID == uniqueID } || state.microphones.contains { $0.microphone.uniqueID == uniqueID }
    }

    func device(_ uniqueID: String) -> (any CameraBackend)? {
        state.withLock { state in state.devices.first { $0.uniqueID == uniqueID } }
    }

    /// The fan-out engine of a device.
    func streamer(_ uniqueID: String) -> DeviceStreamer? {
        state.withLock { $0.streamers[uniqueID] }
    }

    /// Ends every stream of every device (the daemon is stopping).
    func interruptAllStreams(_ reason: StreamInterruption, _ error: CameraError) {
        for streamer in state.withLock({ Array($0.streamers.values) }) { streamer.interrupt(reason, error) }
        for microphone in microphones { microphone.interrupt(reason, error) }
    }

    /// Adds a device and tells the watchers.
    ///
    /// - Throws: `ALREADY_EXISTS` when a device has the same uniqueID.
    func add(_ device: any CameraBackend) throws {
        try withState { state in
            guard !isTaken(device.uniqueID, state) else {
                throw CameraError(.alreadyExists, "a device '\(device.uniqueID)' already exists; pick another index")
            }
            state.devices.append(device)
            let uniqueID = device.uniqueID
            state.streamers[uniqueID] = DeviceStreamer(device: device, timers: timers, budget: clientBudget, logger: logger, onDeviceLost: { [weak self] error in
                self?.remove(uniqueID, because: error)
            })
            broadcast(.connected, describe(device, state), &state)
            linksChanged(uniqueID, on: device.usbDevice, &state)
        }
        additionObserver.withLock { $0 }(device)
    }

    /// Adds a microphone and tells the watchers.
    ///
    /// - Throws: `ALREADY_EXISTS` when a device has the same uniqueID.
    func add(microphone: any MicrophoneBackend) throws {
        try withState { state in
            guard !isTaken(microphone.uniqueID, state) else {
                throw CameraError(.alreadyExists, "a device '\(microphone.uniqueID)' already exists; pick another index")
            }
            let uniqueID = microphone.uniqueID
            state.microphones.append(MicrophoneStreamer(microphone: microphone, budget: clientBudget, logger: logger) { [weak self] error in
                self?.remove(uniqueID, because: error)
            })
            broadcast(.connected, describe(microphone, state), &state)
            linksChanged(uniqueID, on: microphone.usbDevice, &state)
        }
    }

    /// Removes a device, ends its streams as disconnected (with `error`, else a
    /// generic one), and tells the watchers; false when there was none.
    @discardableResult
    func remove(_ uniqueID: String, because error: CameraError? = nil) -> Bool {
        let disconnected = error ?? CameraError(.deviceDisconnected,
            "\(uniqueID) was disconnected; streams resume when a session starts again with the device back")
        let microphone = withState { state -> MicrophoneStreamer? in
            guard let index = state.microphones.firstIndex(where: { $0.microphone.uniqueID == uniqueID }) else { return nil }
            let microphone = state.microphones.remove(at: index)
            var description = describe(microphone.microphone, state)
            description.isConnected = false
            broadcast(.disconnected, description, &state)
            linksChanged(uniqueID, on: microphone.microphone.usbDevice, &state)
            return microphone
        }
        if let microphone {
            microphone.interrupt(.deviceDisconnected, disconnected)
            return true
        }
        let removed = withState { state -> (any CameraBackend, DeviceStreamer?)? in
            guard let index = state.devices.firstIndex(where: { $0.uniqueID == uniqueID }) else { return nil }
            let device = state.devices.remove(at: index)
            var description = describe(device, state)
            description.isConnected = false
            broadcast(.disconnected, description, &state)
            linksChanged(uniqueID, on: device.usbDevice, &state)
            return (device, state.streamers.removeValue(forKey: uniqueID))
        }
        guard let (_, streamer) = removed else { return false }
        streamer?.interrupt(.deviceDisconnected, disconnected)
        return true
    }

    /// Tells the watchers a device's description changed.
    func deviceDidChange(_ device: any CameraBackend) {
        withState { state in
            guard state.devices.contains(where: { $0 === device }) else { return }
            broadcast(.changed, describe(device, state), &state)
        }
    }

    /// Tells the watchers a microphone's description changed (its input gain).
    func microphoneDidChange(_ uniqueID: String) {
        withState { state in
            guard let microphone = state.microphones.first(where: { $0.microphone.uniqueID == uniqueID }) else { return }
            broadcast(.changed, describe(microphone.microphone, state), &state)
        }
    }

    /// Tells the watchers a device's configuration lock was taken or released.
    private func lockDidChange(_ uniqueID: String) {
        withState { state in
            let description: DeviceDescription
            if let device = state.devices.first(where: { $0.uniqueID == uniqueID }) {
                description = describe(device, state)
            } else if let microphone = state.microphones.first(where: { $0.microphone.uniqueID == uniqueID }) {
                description = describe(microphone.microphone, state)
            } else {
                return
            }
            broadcast(description.lockHolder != nil ? .locked : .unlocked, description, &state)
        }
    }

    /// Device events from now on: first a CONNECTED for each present device if
    /// `includeExisting`, then SUBSCRIBED, then every change. Ends when the
    /// iterating task is cancelled.
    func subscribe(includeExisting: Bool) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let id = withState { state in
            var events: [Event] = []
            if includeExisting {
                for device in state.devices {
                    events.append(Self.event(.connected, describe(device, state)))
                }
                for microphone in state.microphones {
                    events.append(Self.event(.connected, describe(microphone.microphone, state)))
                }
            }
            events.append(Self.event(.subscribed, nil))
            broadcasts.post((events, [continuation]))
            defer { state.nextSubscriberID += 1 }
            state.subscribers[state.nextSubscriberID] = continuation
            return state.nextSubscriberID
        }
        // Not the state's lock: a task being cancelled holds its own lock while
        // this runs, and a broadcast holds the state's while it wakes that task.
        continuation.onTermination = { [weak self] _ in
            _ = self?.endedSubscribers.withLock { $0.insert(id) }
        }
        return stream
    }

    /// Watchers now, for tests of subscription clean-up.
    var subscriberCount: Int { state.withLock { liveSubscribers(&$0).count } }

    /// The subscribers, once those whose streams ended are dropped.
    private func liveSubscribers(_ state: inout State) -> [UInt64: AsyncStream<Event>.Continuation] {
        for id in endedSubscribers.withLock({ ended in defer { ended.removeAll() }; return ended }) {
            state.subscribers[id] = nil
        }
        return state.subscribers
    }

    /// Posts an event to every watcher, under the state's lock.
    private func broadcast(_ kind: Event.Kind, _ device: DeviceDescription, _ state: inout State) {
        broadcasts.post(([Self.event(kind, device)], Array(liveSubscribers(&state).values)))
    }

    /// Runs `body` under the state's lock, then yields the events it posted,
    /// in order, the lock free: a watcher's task is never woken under it.
    private func withState<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        defer {
            broadcasts.deliver { delivery in
                for continuation in delivery.to {
                    for event in delivery.events { continuation.wake(with: event) }
                }
            }
        }
        return try state.withLock { state in try body(&state) }
    }

    private static func event(_ kind: Event.Kind, _ device: DeviceDescription?) -> Event {
        Event(kind: kind, device: device, timestampNanoseconds: monotonicNanoseconds())
    }
}
