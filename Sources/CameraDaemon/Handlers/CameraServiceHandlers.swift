import CameraIPC
import CameraProtocol

/// The handlers of `service Camera`: dispatch from calls to the daemon's parts.
struct CameraServiceHandlers: Sendable {
    let registry: DeviceRegistry
    let virtualCameras: VirtualCameraRoster
    let policy: AccessPolicy
    let configurator: DeviceConfigurator

    /// The longest a LockForConfiguration may wait.
    static let maxLockWait = Duration.seconds(3600)

    /// Ping payloads larger than this are refused.
    static let maxPingPayload = 64 * 1024

    func register(in router: inout RPCRouter) {
        router.register(CameraService.listDevices, unary: listDevices)
        router.register(CameraService.getDevice, unary: getDevice)
        router.register(CameraService.watchDevices, serverStreaming: watchDevices)
        router.register(CameraService.addVirtualCamera, unary: addVirtualCamera)
        router.register(CameraService.removeVirtualCamera, unary: removeVirtualCamera)
        router.register(CameraService.ping, bidirectional: ping)
        router.register(CameraService.stream, bidirectional: stream)
        router.register(CameraService.getDeviceStatistics, unary: getDeviceStatistics)
        router.register(CameraService.lockForConfiguration, unary: lockForConfiguration)
        router.register(CameraService.unlockForConfiguration, unary: unlockForConfiguration)
        router.register(CameraService.configureDevice, unary: configureDevice)
        router.register(CameraService.capturePhoto, unary: capturePhoto)
    }

    @Sendable func listDevices(
        _ request: Camerad_V1_ListDevicesRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_ListDevicesResponse {
        try request.filter.validate()
        var response = Camerad_V1_ListDevicesResponse()
        await refreshAvailability(of: registry.devices)
        response.devices = registry.devices.map { Camerad_V1_Device(registry.describe($0)) }.filter { $0.matches(request.filter) }
        return response
    }

    @Sendable func getDevice(
        _ request: Camerad_V1_GetDeviceRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_GetDeviceResponse {
        var response = Camerad_V1_GetDeviceResponse()
        let device = try device(request.uniqueID)
        await refreshAvailability(of: [device])
        response.device = Camerad_V1_Device(registry.describe(device))
        return response
    }

    @Sendable func lockForConfiguration(
        _ request: Camerad_V1_LockForConfigurationRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_LockForConfigurationResponse {
        let device = try device(request.uniqueID)
        try RequestLimits.check(name: request.uniqueID, "unique_id")
        let wait = Duration.milliseconds(request.waitMs)
        guard wait <= Self.maxLockWait else {
            throw RPCError(.invalidArgument, "wait_ms \(request.waitMs) is over an hour; wait less")
        }
        var response = Camerad_V1_LockForConfigurationResponse()
        response.lockCount = UInt32(try await registry.locks.lock(device.uniqueID, for: context, wait: wait))
        response.device = Camerad_V1_Device(registry.describe(device))
        return response
    }

    @Sendable func unlockForConfiguration(
        _ request: Camerad_V1_UnlockForConfigurationRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_UnlockForConfigurationResponse {
        try RequestLimits.check(name: request.uniqueID, "unique_id")
        var response = Camerad_V1_UnlockForConfigurationResponse()
        response.lockCount = UInt32(try registry.locks.unlock(request.uniqueID, connectionID: context.connectionID))
        return response
    }

    @Sendable func configureDevice(
        _ request: Camerad_V1_ConfigureDeviceRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_ConfigureDeviceResponse {
        let device = try device(request.uniqueID)
        try registry.locks.requireHolder(device.uniqueID, connectionID: context.connectionID, toChange: "the configuration")
        try await configurator.apply(DeviceConfiguration(request.configuration), to: device, persist: request.persist,
                                     by: context.connectionID)
        var response = Camerad_V1_ConfigureDeviceResponse()
        response.device = Camerad_V1_Device(registry.describe(device))
        return response
    }

    @Sendable func capturePhoto(
        _ request: Camerad_V1_CapturePhotoRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_CapturePhotoResponse {
        let device = try device(request.uniqueID)
        let holdsLock = registry.locks.holder(of: device.uniqueID)?.connectionID == context.connectionID
        let photo = try await PhotoCapture.take(PhotoSettings(request.settings), device: device,
                                                streamer: try streamer(request.uniqueID),
                                                owner: context.budgetOwner, holdsLock: holdsLock)
        return Camerad_V1_CapturePhotoResponse(photo)
    }

    /// Whether another program took or let go of a device is seen when someone
    /// asks. It opens the node: the device's work, on its executor, after
    /// whatever was asked of it before.
    private func refreshAvailability(of devices: [any CameraBackend]) async {
        for device in devices where await device.executor.run({ device.refreshAvailability() }) {
            registry.deviceDidChange(device)
        }
    }

    @Sendable func watchDevices(
        _ request: Camerad_V1_WatchDevicesRequest, _ writer: ResponseWriter<Camerad_V1_DeviceEvent>,
        _ context: RPCContext
    ) async throws {
        for await event in registry.subscribe(includeExisting: request.includeExisting) {
            // A client too far behind is disconnected by its connection's backlog limit.
            guard writer.send(Camerad_V1_DeviceEvent(event)) else { return }
        }
    }

    @Sendable func addVirtualCamera(
        _ request: Camerad_V1_AddVirtualCameraRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_AddVirtualCameraResponse {
        try policy.requireAdmin(context.peer, for: "adding a virtual camera")
        try RequestLimits.check(name: request.localizedName, "localized_name")
        let camera = try virtualCameras.add(
            index: request.optionalIndex != nil ? Int(request.index) : nil,
            localizedName: request.localizedName, position: try DeviceDescription.Position(request.position),
            options: VirtualCamera.Options(request))
        var response = Camerad_V1_AddVirtualCameraResponse()
        response.device = Camerad_V1_Device(registry.describe(camera))
        return response
    }

    @Sendable func removeVirtualCamera(
        _ request: Camerad_V1_RemoveVirtualCameraRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_RemoveVirtualCameraResponse {
        try policy.requireAdmin(context.peer, for: "removing a virtual camera")
        try RequestLimits.check(name: request.uniqueID, "unique_id")
        try virtualCameras.remove(request.uniqueID)
        return Camerad_V1_RemoveVirtualCameraResponse()
    }

    @Sendable func ping(
        _ requests: RequestStream<Camerad_V1_PingRequest>, _ writer: ResponseWriter<Camerad_V1_PingResponse>,
        _ context: RPCContext
    ) async throws {
        for try await request in requests {
            guard request.payload.count <= Self.maxPingPayload else {
                throw RPCError(.invalidArgument,
                               "ping payload of \(request.payload.count) bytes is over \(Self.maxPingPayload); send less")
            }
            var response = Camerad_V1_PingResponse()
            response.sequence = request.sequence
            response.clientTimeNs = request.clientTimeNs
            response.serverTimeNs = monotonicNanoseconds()
            response.payload = request.payload
            guard writer.send(response) else { return }
        }
    }

    /// A stream: the first request opens it, later ones release frames; it ends
    /// when the client half-closes, cancels or goes, or the device goes.
    @Sendable func stream(
        _ requests: RequestStream<Camerad_V1_StreamRequest>, _ writer: ResponseWriter<Camerad_V1_StreamResponse>,
        _ context: RPCContext
    ) async throws {
        var iterator = requests.makeAsyncIterator()
        guard let first = try await iterator.next() else { return }
        guard case .open(let open)? = first.kind else {
            throw RPCError(.invalidArgument, "a stream's first request must open it (OpenStream)")
        }
        let streamer = try self.streamer(open.uniqueID)
        let id = try await streamer.open(open, for: context.budgetOwner, writer: writer)
        defer { streamer.close(id) }
        // Releases come as often as frames: handled as they arrive, with no hop to this task.
        try await iterator.forEachOnLoop(reading: Camerad_V1_StreamRequest.release(wire:)) { request in
            switch request.kind {
            case .release(let release):
                try streamer.release(id, release)
            case .open:
                throw RPCError(.invalidArgument, "a stream is opened once; start another Stream call for another stream")
            case nil:
                throw RPCError(.invalidArgument, "a stream request must open the stream or release frames")
            }
        }
    }

    @Sendable func getDeviceStatistics(
        _ request: Camerad_V1_GetDeviceStatisticsRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_DeviceStatistics {
        Camerad_V1_DeviceStatistics(uniqueID: request.uniqueID, try streamer(request.uniqueID).statistics())
    }

    private func streamer(_ uniqueID: String) throws -> DeviceStreamer {
        try RequestLimits.check(name: uniqueID, "unique_id")
        guard let streamer = registry.streamer(uniqueID) else { throw RPCError.noDevice(uniqueID) }
        return streamer
    }

    private func device(_ uniqueID: String) throws -> any CameraBackend {
        try RequestLimits.check(name: uniqueID, "unique_id")
        guard let device = registry.device(uniqueID) else { throw RPCError.noDevice(uniqueID) }
        return device
    }
}

extension Camerad_V1_Device {
    /// AVCaptureDevice.DiscoverySession's rule: any of the types (all when none
    /// are given), the media type, and the position unless it is unspecified.
    func matches(_ filter: Camerad_V1_DeviceFilter) -> Bool {
        (filter.deviceTypes.isEmpty || filter.deviceTypes.contains(deviceType))
            && (filter.mediaType == .unspecified || filter.mediaType == .video)
            && (filter.position == .unspecified || filter.position == position)
    }
}

extension RPCContext {
    /// Who the call's streams are charged to: its connection and its client's user.
    var budgetOwner: ClientBudget.Owner { ClientBudget.Owner(connection: connectionID, user: peer.uid) }
}
