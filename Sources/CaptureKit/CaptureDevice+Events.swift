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
    /// - Parameter includeExisting: first a `.connected` event for each device present now.
    /// - Returns: a sequence that ends when iteration stops; it throws
    ///   `connectionLost` if the daemon goes away.
    public static func events(includeExisting: Bool = false) async throws(CaptureError) -> Events {
        let client = try await DaemonClient.shared.connection()
        return try await CaptureError.converting {
            var request = Camerad_V1_WatchDevicesRequest()
            request.includeExisting = includeExisting
            var iterator = try client.serverStreaming(CameraService.watchDevices, request).makeAsyncIterator()
            var existing: [Camerad_V1_DeviceEvent] = []
            while let event = try await iterator.next() {
                if event.kind == .subscribed { return Events(existing: existing, iterator: iterator) }
                existing.append(event)
            }
            throw CaptureError(.connectionLost, "camerad ended the device watch before it began")
        }
    }

    /// The sequence ``events(includeExisting:)`` returns. Iterate it once, in the
    /// task that asked for it.
    public struct Events: AsyncSequence {
        public typealias Element = Event
        let existing: [Camerad_V1_DeviceEvent]
        let iterator: ResponseStream<Camerad_V1_DeviceEvent>.AsyncIterator

        public struct AsyncIterator: AsyncIteratorProtocol {
            var existing: [Camerad_V1_DeviceEvent]
            var base: ResponseStream<Camerad_V1_DeviceEvent>.AsyncIterator

            public mutating func next() async throws(CaptureError) -> Event? {
                while true {
                    let raw: Camerad_V1_DeviceEvent
                    if !existing.isEmpty {
                        raw = existing.removeFirst()
                    } else {
                        let next: Camerad_V1_DeviceEvent?
                        do {
                            next = try await base.next()
                        } catch {
                            throw CaptureError(converting: error)
                        }
                        guard let next else { return nil }
                        raw = next
                    }
                    if let event = Event(raw) { return event }
                }
            }
        }

        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(existing: existing, base: iterator)
        }
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
    /// daemon goes away, CaptureKit keeps trying to watch again every second.
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

    private static func post(_ first: sending CaptureDevice.Events) async {
        var events: CaptureDevice.Events? = first
        while !Task.isCancelled {
            if let current = events {
                do {
                    for try await event in current {
                        let name: Notification.Name? = switch event.kind {
                        case .connected: CaptureDevice.wasConnectedNotification
                        case .disconnected: CaptureDevice.wasDisconnectedNotification
                        case .changed, .locked, .unlocked: nil
                        }
                        if let name { NotificationCenter.default.post(name: name, object: event.device) }
                    }
                } catch {}
            }
            events = nil
            guard !Task.isCancelled else { return }
            try? await Task.sleep(for: .seconds(1))
            events = try? await CaptureDevice.events()
        }
    }
}
