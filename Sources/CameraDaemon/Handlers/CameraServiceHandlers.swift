import CameraIPC
import CameraProtocol

/// The handlers of `service Camera`: dispatch from calls to the daemon's parts.
struct CameraServiceHandlers: Sendable {
    let registry: DeviceRegistry
    let virtualCameras: VirtualCameraRoster
    let policy: AccessPolicy
    let configurator: DeviceConfigurator
    let recordings: Recordings

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
        router.register(CameraService.watchAudioLevels, serverStreaming: watchAudioLevels)
        router.register(CameraService.record, bidirectional: record)
    }

    @Sendable func listDevices(
        _ request: Camerad_V1_ListDevicesRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_ListDevicesResponse {
        try request.filter.validate()
        var response = Camerad_V1_ListDevicesResponse()
        await refreshAvailability(of: registry.devices)
        response.devices = registry.descriptions.map(Camerad_V1_Device.init).filter { $0.matches(request.filter) }
        return response
    }

    @Sendable func getDevice(
        _ request: Camerad_V1_GetDeviceRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_GetDeviceResponse {
        try RequestLimits.check(name: request.uniqueID, "unique_id")
        if let device = registry.device(request.uniqueID) { await refreshAvailability(of: [device]) }
        guard let description = registry.description(of: request.uniqueID) else { throw RPCError.noDevice(request.uniqueID) }
        var response = Camerad_V1_GetDeviceResponse()
        response.device = Camerad_V1_Device(description)
        return response
    }

    @Sendable func lockForConfiguration(
        _ request: Camerad_V1_LockForConfigurationRequest, _ context: RPCContext
    ) async throws -> Camerad_V1_LockForConfigurationResponse {
        try RequestLimits.check(name: request.uniqueID, "unique_id")
        guard registry.description(of: request.uniqueID) != nil else { throw RPCError.noDevice(request.uniqueID) }
        // An hour at most (RequestRanges.swift).
        let wait = Duration.milliseconds(request.waitMs)
        var response = Camerad_V1_LockForConfigurationResponse()
        response.lockCount = UInt32(try await registry.locks.lock(request.uniqueID, for: context, wait: wait))
        guard let description = registry.description(of: request.uniqueID) else { throw RPCError.noDevice(request.uniqueID) }
        response.device = Camerad_V1_Device(description)
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
        try RequestLimits.check(name: request.uniqueID, "unique_id")
        if let microphone = registry.microphone(request.uniqueID) {
            try registry.locks.requireHolder(request.uniqueID, connectionID: context.connectionID, toChange: "the configuration")
            var others = request.configuration
            others.optionalInputGain = nil
            guard request.configuration.optionalInputGain != nil, others == Camerad_V1_DeviceConfiguration() else {
                throw RPCError(.invalidArgument, "\(request.uniqueID) is a microphone: input_gain is the one setting it takes")
            }
            guard !request.persist else {
                throw RPCError(.invalidArgument, "a microphone's input gain is not stored as a default; set it without persist")
            }
            try await microphone.setInputGain(request.configuration.inputGain)
            registry.microphoneDidChange(request.uniqueID)
            guard let description = registry.description(of: request.uniqueID) else { throw RPCError.noDevice(request.uniqueID) }
            var response = Camerad_V1_ConfigureDeviceResponse()
            response.device = Camerad_V1_Device(description)
            return response
        }
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
        try RequestLimits.check(name: request.localizedName, "localized_name")
        if try request.mediaType.known("media_type") == .audio {
            try policy.requireAdmin(context.peer, for: "adding a virtual microphone")
            return try addVirtualMicrophone(request)
        }
        try policy.requireAdmin(context.peer, for: "adding a virtual camera")
        guard request.toneAmplitude == 0, request.driftPpm == 0 else {
            throw RPCError(.invalidArgument, "tone_amplitude and drift_ppm are a virtual microphone's; add one with media_type AUDIO")
        }
        let camera = try virtualCameras.add(
            index: request.optionalIndex != nil ? Int(request.index) : nil,
            localizedName: request.localizedName, position: try DeviceDescription.Position(request.position),
            options: VirtualCamera.Options(request))
        var response = Camerad_V1_AddVirtualCameraResponse()
        response.device = Camerad_V1_Device(registry.describe(camera))
        return response
    }

    private func addVirtualMicrophone(_ request: Camerad_V1_AddVirtualCameraRequest) throws -> Camerad_V1_AddVirtualCameraResponse {
        guard request.fourcc == 0, request.width == 0, request.height == 0, !request.hasFrameDuration, !request.unthrottled,
              !request.staticPicture, request.position == .unspecified else {
            throw RPCError(.invalidArgument, "a virtual microphone has no pixel format, size, frame rate or position; leave them unset")
        }
        let amplitude = request.toneAmplitude
        guard amplitude.isFinite, (0...1).contains(amplitude) else {
            throw RPCError(.invalidArgument, "tone_amplitude \(amplitude) is out of range; use 0 (the stamp signal) to 1")
        }
        guard amplitude == 0 || !request.syncMarks else {
            throw RPCError(.invalidArgument, "tone_amplitude and sync_marks are two signals; ask for one")
        }
        let microphone = try virtualCameras.addMicrophone(
            index: request.optionalIndex != nil ? Int(request.index) : nil, localizedName: request.localizedName,
            signal: request.syncMarks ? .syncClicks : amplitude > 0 ? .tone(amplitude: amplitude) : .stamp,
            driftPPM: Int(request.driftPpm))
        var response = Camerad_V1_AddVirtualCameraResponse()
        response.device = Camerad_V1_Device(registry.description(of: microphone.uniqueID) ?? microphone.describe())
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
        try RequestLimits.check(name: open.uniqueID, "unique_id")
        let release: @Sendable (Camerad_V1_ReleaseFrames) throws -> Void
        let close: () -> Void
        if let microphone = registry.microphone(open.uniqueID) {
            let id = try await microphone.listen(open, for: context.budgetOwner, writer: writer)
            release = { try microphone.release(id, $0) }
            close = { microphone.close(id) }
        } else {
            let streamer = try self.streamer(open.uniqueID)
            let id = try await streamer.open(open, for: context.budgetOwner, writer: writer)
            release = { try streamer.release(id, $0) }
            close = { streamer.close(id) }
        }
        defer { close() }
        // Releases come as often as frames: handled as they arrive, with no hop to this task.
        try await iterator.forEachOnLoop(reading: Camerad_V1_StreamRequest.release(wire:)) { request in
            switch request.kind {
            case .release(let message):
                try release(message)
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

    /// A microphone's levels until the client cancels or the microphone goes.
    @Sendable func watchAudioLevels(
        _ request: Camerad_V1_WatchAudioLevelsRequest, _ writer: ResponseWriter<Camerad_V1_AudioLevels>,
        _ context: RPCContext
    ) async throws {
        try RequestLimits.check(name: request.uniqueID, "unique_id")
        guard let microphone = registry.microphone(request.uniqueID) else {
            if registry.device(request.uniqueID) != nil {
                throw RPCError(.invalidArgument, "\(request.uniqueID) is a camera; levels are a microphone's (media type audio)")
            }
            throw RPCError.noDevice(request.uniqueID)
        }
        let (ended, continuation) = AsyncStream.makeStream(of: CameraError?.self)
        let id = try await microphone.watchLevels(sink: AudioLevelsSink(writer: writer, ended: continuation), for: context.budgetOwner)
        defer { microphone.close(id) }
        // Ends when the meter does (the microphone went) or the call is cancelled.
        for await error in ended {
            if let error { throw error }
            return
        }
    }

    private func streamer(_ uniqueID: String) throws -> DeviceStreamer {
        try device(uniqueID)
        guard let streamer = registry.streamer(uniqueID) else { throw RPCError.noDevice(uniqueID) }
        return streamer
    }

    /// A camera by uniqueID; a microphone's is refused for what only a camera does.
    @discardableResult
    private func device(_ uniqueID: String) throws -> any CameraBackend {
        try RequestLimits.check(name: uniqueID, "unique_id")
        guard let device = registry.device(uniqueID) else {
            if registry.microphone(uniqueID) != nil {
                throw RPCError(.invalidArgument, "\(uniqueID) is a microphone; this is a camera's (media type video)")
            }
            throw RPCError.noDevice(uniqueID)
        }
        return device
    }
}

extension Camerad_V1_Device {
    /// AVCaptureDevice.DiscoverySession's rule: any of the types (all when none
    /// are given), the media type, and the position unless it is unspecified.
    func matches(_ filter: Camerad_V1_DeviceFilter) -> Bool {
        (filter.deviceTypes.isEmpty || filter.deviceTypes.contains(deviceType))
            && (filter.mediaType == .unspecified || filter.mediaType == mediaType)
            && (filter.position == .unspecified || filter.position == position)
    }
}

extension RPCContext {
    /// Who the call's streams are charged to: its connection and its client's user.
    var budgetOwner: ClientBudget.Owner { ClientBudget.Owner(connection: connectionID, user: peer.uid) }
}
