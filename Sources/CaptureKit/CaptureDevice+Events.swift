import CameraIPC
import CameraProtocol
import Foundation
import Synchronization

extension CaptureDevice {
    /// A device came, went, or changed, or its configuration lock was taken or released.
    public struct Event: Sendable, CustomStringConvertible {
        public enum Kind: String, Sendable {
            case connected
            case disconnected
            case changed
            /// A client took the configuration lock: ``CaptureDevice/configurationLockHolder``.
            case locked
            /// The configuration lock was released (unlocked, or its holder went).
            case unlocked
        }

        public let kind: Kind
        /// The device, described as of the event (``isConnected`` false once gone).
        public let device: CaptureDevice
        /// When the daemon saw it, CLOCK_MONOTONIC nanoseconds.
        public let timestampNanoseconds: Int64

        public var description: String { "\(kind.rawValue) \(device)" }
    }

    /// Device events from now on. When this returns, the daemon is already
    /// watching for this process: no later change is missed.
    ///
    /// The sequence outlives the daemon: when camerad goes away (or the
    /// connection breaks) every device it had comes as `.disconnected`
    /// (``CaptureDevice/isConnected`` turns false); CaptureKit then tries to
    /// watch again every second, and when camerad is back every device it has
    /// comes as `.connected`. It ends when iteration stops or its task is cancelled.
    ///
    /// - Parameter includeExisting: first a `.connected` event for each device present now.
    public static func events(includeExisting: Bool = false) async throws(CaptureError) -> Events {
        let (existing, watch) = try await DeviceWatch.start()
        return Events(pending: includeExisting ? existing : [], present: existing, watch: watch)
    }

    /// The sequence ``events(includeExisting:)`` returns. Iterate it once, in the
    /// task that asked for it.
    public struct Events: AsyncSequence {
        public typealias Element = Event
        let pending: [Camerad_V1_DeviceEvent]
        let present: [Camerad_V1_DeviceEvent]
        let watch: ResponseStream<Camerad_V1_DeviceEvent>.AsyncIterator

        public struct AsyncIterator: AsyncIteratorProtocol {
            /// Events to hand out before reading more.
            var pending: [Camerad_V1_DeviceEvent]
            /// The devices connected as far as this sequence knows, by uniqueID.
            var present: [String: Camerad_V1_Device]
            /// The daemon's watch; nil while camerad is away.
            var watch: ResponseStream<Camerad_V1_DeviceEvent>.AsyncIterator?

            public mutating func next() async throws(CaptureError) -> Event? {
                while true {
                    if !pending.isEmpty {
                        let raw = pending.removeFirst()
                        switch raw.kind {
                        case .connected, .changed, .locked, .unlocked: present[raw.device.uniqueID] = raw.device
                        case .disconnected: present[raw.device.uniqueID] = nil
                        default: break
                        }
                        if let event = Event(raw) { return event }
                        continue
                    }
                    if watch != nil {
                        do {
                            if let raw = try await watch?.next() {
                                pending.append(raw)
                                continue
                            }
                        } catch {
                            let error = CaptureError(converting: error)
                            guard DeviceWatch.daemonWent(error) else { throw error }
                        }
                        // camerad went: so did every device it had.
                        watch = nil
                        pending = present.values.sorted { $0.uniqueID < $1.uniqueID }.map(DeviceWatch.disconnected)
                        continue
                    }
                    do {
                        try await Task.sleep(for: .seconds(1))
                        let (existing, watch) = try await DeviceWatch.start()
                        self.watch = watch
                        pending = existing
                    } catch is CancellationError {
                        return nil
                    } catch {
                        if Task.isCancelled { return nil }  // still away: try again
                    }
                }
            }
        }

        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(pending: pending, present: Dictionary(present.map { ($0.device.uniqueID, $0.device) }) { $1 }, watch: watch)
        }
    }
}

/// The daemon's WatchDevices call, as ``CaptureDevice/Events`` uses it.
enum DeviceWatch {
    /// Starts a watch; returns the devices present (as `.connected` events) once
    /// the daemon says it watches.
    static func start() async throws(CaptureError) -> ([Camerad_V1_DeviceEvent], ResponseStream<Camerad_V1_DeviceEvent>.AsyncIterator) {
        let client = try await DaemonClient.shared.connection()
        return try await CaptureError.converting {
            var request = Camerad_V1_WatchDevicesRequest()
            request.includeExisting = true
            var iterator = try client.serverStreaming(CameraService.watchDevices, request).makeAsyncIterator()
            var existing: [Camerad_V1_DeviceEvent] = []
            while let event = try await iterator.next() {
                if event.kind == .subscribed { return (existing, iterator) }
                existing.append(event)
            }
            throw CaptureError(.connectionLost, "camerad ended the device watch before it began")
        }
    }

    /// Whether `error` means camerad (or the connection to it) went, rather than the watch failing.
    static func daemonWent(_ error: CaptureError) -> Bool {
        [.connectionLost, .shuttingDown, .daemonUnavailable].contains(error.code)
    }

    /// A device's disconnection, as CaptureKit sees it when camerad goes.
    static func disconnected(_ device: Camerad_V1_Device) -> Camerad_V1_DeviceEvent {
        var event = Camerad_V1_DeviceEvent()
        event.kind = .disconnected
        event.device = device
        event.device.isConnected = false
        event.timestampNs = monotonicNanoseconds()
        return event
    }
}

extension CaptureDevice.Event {
    init?(_ event: Camerad_V1_DeviceEvent) {
        let kind: Kind
        switch event.kind {
        case .connected: kind = .connected
        case .disconnected: kind = .disconnected
        case .changed: kind = .changed
        case .locked: kind = .locked
        case .unlocked: kind = .unlocked
        default: return nil
        }
        self.kind = kind
        device = LiveDevices.shared.update(event.device)
        timestampNanoseconds = event.timestampNs
    }
}

// MARK: - Notifications

extension CaptureDevice {
    /// Posted on `NotificationCenter.default` when a device connects; the
    /// notification's object is the ``CaptureDevice``.
    public static let wasConnectedNotification = Notification.Name("CaptureDeviceWasConnectedNotification")
    /// Posted when a device disconnects; the object is the ``CaptureDevice``.
    public static let wasDisconnectedNotification = Notification.Name("CaptureDeviceWasDisconnectedNotification")

    /// Starts posting ``wasConnectedNotification`` and ``wasDisconnectedNotification``.
    ///
    /// AVFoundation posts them unasked; on Linux watching costs a call to the
    /// daemon, so a process asks for it, as UIDevice asks for orientation
    /// notifications. When this returns, every later change is posted. If the
    /// daemon goes away, each of its devices is posted as disconnected, and
    /// when it is back (CaptureKit tries every second) each as connected.
    public static func beginGeneratingDeviceNotifications() async throws(CaptureError) {
        try await DeviceNotifier.shared.begin()
    }

    /// Stops posting device notifications.
    public static func endGeneratingDeviceNotifications() {
        DeviceNotifier.shared.end()
    }
}

extension Notification.Name {
    /// ``CaptureDevice/wasConnectedNotification``.
    public static let CaptureDeviceWasConnected = CaptureDevice.wasConnectedNotification
    /// ``CaptureDevice/wasDisconnectedNotification``.
    public static let CaptureDeviceWasDisconnected = CaptureDevice.wasDisconnectedNotification
    /// With AVFoundation's prefix, as seed code spells them.
    public static let AVCaptureDeviceWasConnected = CaptureDevice.wasConnectedNotification
    public static let AVCaptureDeviceWasDisconnected = CaptureDevice.wasDisconnectedNotification
}

/// Watches device events and posts them as notifications.
final class DeviceNotifier: Sendable {
    static let shared = DeviceNotifier()
    private let task = Mutex<Task<Void, Never>?>(nil)

    func begin() async throws(CaptureError) {
        guard task.withLock({ $0 == nil }) else { return }
        let (ready, signal) = AsyncStream.makeStream(of: CaptureError?.self)
        let watcher = Task.detached {
            let events: CaptureDevice.Events
            do throws(CaptureError) {
                events = try await CaptureDevice.events()
            } catch {
                signal.yield(error)
                return
            }
            signal.yield(nil)
            await Self.post(events)
        }
        var iterator = ready.makeAsyncIterator()
        if let failure = await iterator.next() ?? CaptureError(.cancelled, "cancelled") {
            throw failure
        }
        let previous = task.withLock { task -> Task<Void, Never>? in
            defer { task = watcher }
            return task
        }
        previous?.cancel()
    }

    func end() {
        task.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }?.cancel()
    }

    private static func post(_ events: sending CaptureDevice.Events) async {
        // The sequence lives through daemon restarts; it ends only when cancelled.
        do {
            for try await event in events {
                let name: Notification.Name? = switch event.kind {
                case .connected: CaptureDevice.wasConnectedNotification
                case .disconnected: CaptureDevice.wasDisconnectedNotification
                case .changed, .locked, .unlocked: nil
                }
                if let name { NotificationCenter.default.post(name: name, object: event.device) }
            }
        } catch {}
    }
}
