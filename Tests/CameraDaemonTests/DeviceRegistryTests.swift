@testable import CameraDaemon
import CameraIPC
import CameraProtocol
import CameraTestSupport
import Testing

@Suite struct DeviceRegistryTests {
    @Test func aSubscriberSeesTheExistingDevicesThenEveryChangeInOrder() async throws {
        let registry = DeviceRegistry(timers: .testTimers)
        let roster = VirtualCameraRoster(registry: registry)
        try roster.add()
        var events = registry.subscribe(includeExisting: true).makeAsyncIterator()
        try roster.add()
        try roster.remove("virtual-0")
        let kinds = [await events.next(), await events.next(), await events.next(), await events.next()]
        #expect(kinds.map { $0?.kind } == [.connected, .subscribed, .connected, .disconnected])
        #expect(kinds.map { $0?.device?.uniqueID } == ["virtual-0", nil, "virtual-1", "virtual-0"])
        #expect(kinds[3]?.device?.isConnected == false)
    }

    @Test func aSubscriptionEndsWithItsTask() async throws {
        let registry = DeviceRegistry(timers: .testTimers)
        let task = Task {
            for await _ in registry.subscribe(includeExisting: false) {}
        }
        #expect(await waitUntil { registry.subscriberCount == 1 }, "the task subscribes")
        task.cancel()
        await task.value
        #expect(registry.subscriberCount == 0)
    }

    /// Watchers that go while devices come and go: a broadcast wakes a watcher's
    /// task while a cancellation of that task ends its subscription. Neither may
    /// wait on the other (this once deadlocked the daemon).
    @Test(.timeLimit(.minutes(4))) func watchersEndingWhileDevicesChangeNeverDeadlock() async throws {
        let registry = DeviceRegistry(timers: .testTimers)
        let roster = VirtualCameraRoster(registry: registry)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for _ in 0..<300 {
                    try roster.add(index: 0)
                    try roster.remove("virtual-0")
                }
            }
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<150 {
                        let watcher = Task {
                            for await _ in registry.subscribe(includeExisting: true) {}
                        }
                        await Task.yield()
                        watcher.cancel()
                        await watcher.value
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(registry.subscriberCount == 0)
    }

    @Test func theRosterTakesTheLowestFreeIndex() throws {
        let roster = VirtualCameraRoster(registry: DeviceRegistry(timers: .testTimers))
        #expect(try roster.add().uniqueID == "virtual-0")
        #expect(try roster.add().uniqueID == "virtual-1")
        #expect(try roster.add(index: 5).uniqueID == "virtual-5")
        try roster.remove("virtual-0")
        #expect(try roster.add().uniqueID == "virtual-0")
        #expect(try roster.add().uniqueID == "virtual-2")
    }

    @Test func aTakenOrOutOfRangeIndexIsRefused() throws {
        let roster = VirtualCameraRoster(registry: DeviceRegistry(timers: .testTimers))
        try roster.add(index: 1)
        #expect(throws: CameraError(.alreadyExists, "a device 'virtual-1' already exists; pick another index")) {
            try roster.add(index: 1)
        }
        #expect((try? roster.add(index: 64)) == nil)
        #expect(throws: CameraError.self) { try roster.remove("virtual-9") }
    }

    @Test func theRosterStopsAtItsLimit() throws {
        let roster = VirtualCameraRoster(registry: DeviceRegistry(timers: .testTimers))
        for _ in 0..<VirtualCameraRoster.maxCount { try roster.add() }
        let error = #expect(throws: CameraError.self) { try roster.add() }
        #expect(error?.code == .resourceExhausted)
    }

    @Test func onlyTheDaemonsUserAndRootAreAdmins() {
        let policy = AccessPolicy(daemonUID: 1000)
        #expect(policy.isAdmin(PeerCredentials(pid: 1, uid: 1000, gid: 1000)))
        #expect(policy.isAdmin(PeerCredentials(pid: 1, uid: 0, gid: 0)))
        #expect(!policy.isAdmin(PeerCredentials(pid: 1, uid: 1001, gid: 1000)))
        let error = #expect(throws: CameraError.self) {
            try policy.requireAdmin(PeerCredentials(pid: 1, uid: 1001, gid: 1000), for: "adding a virtual camera")
        }
        #expect(error?.code == .permissionDenied)
    }

    @Test func discoveryFiltersLikeAVFoundation() {
        var device = Camerad_V1_Device()
        device.deviceType = .builtInWideAngleCamera
        device.position = .front
        device.mediaType = .video
        var filter = Camerad_V1_DeviceFilter()
        #expect(device.matches(filter), "an empty filter matches everything")
        filter.position = .back
        #expect(!device.matches(filter))
        filter.position = .unspecified
        filter.deviceTypes = [.external]
        #expect(!device.matches(filter))
        filter.deviceTypes = [.external, .builtInWideAngleCamera]
        filter.mediaType = .video
        #expect(device.matches(filter))
        filter.mediaType = .audio
        #expect(!device.matches(filter), "a camera is no audio device")
    }
}
