import CameraIPC
import CameraProtocol
import Glibc
import Foundation
import Logging

/// The camera server: owns the devices, listens on the socket, serves calls.
///
/// ```
/// let daemon = try CameraDaemon.start(configuration, logger: logger)
/// // ... until SIGTERM
/// await daemon.shutDown()
/// ```
public final class CameraDaemon: Sendable {
    public struct Configuration: Sendable {
        /// Where to listen; see `SocketPath.resolve`.
        public var socketPath: String
        /// The socket file's permissions.
        public var socketMode: mode_t = 0o660
        /// The socket file's group, by name; nil keeps the daemon's.
        public var socketGroup: String?
        /// Virtual cameras to create at start; nil: one if no real camera is
        /// found, else none. With two or more, the first is in front and the
        /// second at the back, as on a phone.
        public var virtualCameraCount: Int?
        /// Virtual microphones to create at start (48 kHz stereo, the audio stamp).
        public var virtualMicrophoneCount = 0
        /// Serve the V4L2 cameras (/dev/video*) and follow hotplug.
        public var v4l2 = true
        /// Serve the ALSA capture PCMs (found at start) and follow hotplug.
        public var alsa = true
        /// How to learn of cameras and microphones plugged in or out while running.
        public var hotplug = HotplugSource.automatic
        /// Where `camctl set --persist` stores settings; nil: nothing is stored.
        /// See ``defaultStateDirectory``.
        public var stateDirectory: String?
        /// Bytes queued for one client past which it is disconnected.
        public var clientBacklogLimit = SocketConnection.defaultBacklogLimit
        /// Connections served at once; nil: as many as the descriptor limit allows
        /// (``RPCServer/connectionLimit(descriptors:)``).
        public var maxConnections: Int?
        /// Descriptors camerad may hold for all clients together (a user's
        /// share is a quarter); nil: its open-files limit less a reserve
        /// (``ClientBudget``).
        public var clientDescriptors: Int?
        /// Shared memory for all frame pools (a user's share is a quarter); nil: 4 GiB.
        public var poolBytes: Int?

        public init(socketPath: String) {
            self.socketPath = socketPath
        }
    }

    /// What Hello reports this daemon can do.
    public static let features = [
        "devices", "device-events", "virtual-cameras", "ping", "streaming", "configuration-lock", "configure-device",
        "microphones", "audio-levels", "recording",
    ]

    /// The descriptors a client's message may bring (a movie's file, with
    /// Record's first request), waiting at most for their message: a few, so
    /// that a client cannot make camerad hold many.
    static let descriptorsPerClientMessage = 4

    /// `$XDG_STATE_HOME/camerad` when set, else /var/lib/camerad for root, else
    /// ~/.local/state/camerad.
    public static func defaultStateDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return state + "/camerad" }
        if getuid() == 0 { return "/var/lib/camerad" }
        return (environment["HOME"] ?? "/tmp") + "/.local/state/camerad"
    }

    public let configuration: Configuration
    private let logger: Logger
    private let loop: EventLoop
    private let socket: DaemonSocket
    private let server: RPCServer
    let registry: DeviceRegistry
    private let hotplug: DeviceHotplug?
    private let defaults: DefaultsStore?

    private init(configuration: Configuration, logger: Logger, loop: EventLoop, socket: DaemonSocket,
                 server: RPCServer, registry: DeviceRegistry, hotplug: DeviceHotplug?, defaults: DefaultsStore?) {
        self.configuration = configuration
        self.logger = logger
        self.loop = loop
        self.socket = socket
        self.server = server
        self.registry = registry
        self.hotplug = hotplug
        self.defaults = defaults
    }

    /// Claims the socket, finds the V4L2 cameras, creates the virtual ones and
    /// starts serving. The scan opens every node: it runs on a worker, not on
    /// the caller's (cooperative) thread.
    ///
    /// - Throws: ``DaemonError`` when the socket cannot be claimed.
    public static func start(_ configuration: Configuration, logger: Logger) async throws -> CameraDaemon {
        try await Workers.run { try startNow(configuration, logger: logger) }
    }

    private static func startNow(_ configuration: Configuration, logger: Logger) throws -> CameraDaemon {
        if let count = configuration.virtualCameraCount, !(0...VirtualCameraRoster.maxCount).contains(count) {
            throw DaemonError.invalidConfiguration(
                "--virtual-cameras must be 0 to \(VirtualCameraRoster.maxCount), not \(count)")
        }
        guard (0...VirtualCameraRoster.maxCount).contains(configuration.virtualMicrophoneCount) else {
            throw DaemonError.invalidConfiguration(
                "--virtual-microphones must be 0 to \(VirtualCameraRoster.maxCount), not \(configuration.virtualMicrophoneCount)")
        }
        // First, so that a second daemon on the same socket stops before touching a device.
        let socket = try DaemonSocket.claim(
            path: configuration.socketPath, mode: configuration.socketMode, group: configuration.socketGroup)
        let descriptors = Self.raiseDescriptorLimit()
        var limits = ClientBudget.Limits(openFiles: descriptors)
        if let clientDescriptors = configuration.clientDescriptors { limits.descriptors = clientDescriptors }
        if let poolBytes = configuration.poolBytes { limits.poolBytes = poolBytes }
        let budget = ClientBudget(limits: limits)
        // The one event loop: every socket, and every timer.
        let loop: EventLoop
        do {
            loop = try EventLoop(name: "camerad-io")
        } catch {
            socket.remove()
            throw DaemonError.socketSetup(path: configuration.socketPath, reason: "\(error)")
        }
        let registry = DeviceRegistry(timers: loop, budget: budget, logger: logger)
        let defaults = configuration.stateDirectory.map { DefaultsStore(folder: $0, logger: logger) }
        let configurator = DeviceConfigurator(registry: registry, defaults: defaults, logger: logger)
        // On the device's executor, so whatever a client asks of it next runs after.
        registry.observeAdditions { device in device.executor.enqueue { configurator.restoreDefaults(of: device) } }
        var cameras: V4L2Discovery?
        if configuration.v4l2 {
            cameras = V4L2Discovery(registry: registry, logger: logger, timers: loop)
            cameras?.scan()
        }
        var microphones: ALSADiscovery?
        if configuration.alsa {
            microphones = ALSADiscovery(registry: registry, logger: logger)
            microphones?.scan()
        }
        var hotplug: DeviceHotplug?
        do {
            hotplug = try DeviceHotplug(configuration.hotplug, cameras: cameras, microphones: microphones, logger: logger)
        } catch {
            logger.warning("hotplug is off: \(error)")
        }
        let virtualCount = configuration.virtualCameraCount ?? (registry.devices.isEmpty ? 1 : 0)
        if configuration.virtualCameraCount == nil && virtualCount > 0 {
            logger.info("no camera found\(configuration.v4l2 ? "" : " (V4L2 is off)"); serving one virtual camera")
        }
        let roster = VirtualCameraRoster(registry: registry)
        for index in 0..<virtualCount {
            let position: DeviceDescription.Position =
                virtualCount < 2 ? .unspecified : index == 0 ? .front : index == 1 ? .back : .unspecified
            do {
                try roster.add(index: index, position: position)
            } catch {
                hotplug?.stop()
                socket.remove()
                throw error
            }
        }
        for index in 0..<configuration.virtualMicrophoneCount {
            do {
                try roster.addMicrophone(index: index)
            } catch {
                hotplug?.stop()
                socket.remove()
                throw error
            }
        }

        var router = RPCRouter()
        CameraServiceHandlers(registry: registry, virtualCameras: roster, policy: AccessPolicy(), configurator: configurator,
                              recordings: Recordings(registry: registry, logger: logger))
            .register(in: &router)
        do {
            let server = RPCServer(
                listener: socket.listener, loop: loop, router: router, logger: logger,
                backlogLimit: configuration.clientBacklogLimit,
                maxConnections: configuration.maxConnections ?? RPCServer.connectionLimit(descriptors: descriptors),
                admission: budget, clientDescriptors: Self.descriptorsPerClientMessage,
                hello: Self.answerHello,
                onConnectionClosed: { connection in
                    registry.locks.releaseAll(heldBy: connection.id)
                    // The device's own work, off the loop: a task, as the loop's thread cannot wait for the
                    // configurator (an actor) and no request's task outlives its connection.
                    Task { await configurator.connectionEnded(connection.id) }
                })
            try server.start()
            logger.info("camerad \(cameradVersion) serving \(registry.devices.count) camera(s) and \(registry.microphones.count) microphone(s) on \(configuration.socketPath)")
            return CameraDaemon(configuration: configuration, logger: logger, loop: loop, socket: socket,
                                server: server, registry: registry, hotplug: hotplug, defaults: defaults)
        } catch {
            hotplug?.stop()
            socket.remove()
            throw DaemonError.socketSetup(path: configuration.socketPath, reason: "\(error)")
        }
    }

    /// Raises this process's soft limit of open files to its hard limit, as
    /// servers do (systemd's default soft limit is 1024); returns the limit.
    static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// SIGHUP: reads the stored defaults again (an administrator may have edited
    /// them); devices that connect from now on get them. Running devices keep
    /// their settings: changing those takes the configuration lock. The files
    /// are read on a worker, not on the cooperative pool.
    public func reloadStoredDefaults() async {
        guard let defaults else {
            logger.info("SIGHUP: no --state-dir, nothing to read again")
            return
        }
        _ = try? await Workers.run { defaults.reload() }
    }

    /// Ends every call with `SHUTTING_DOWN`, closes every connection, removes the socket.
    public func shutDown() async {
        logger.info("shutting down: ending \(server.connections.count) connection(s)")
        socket.remove()
        // Joins the hotplug thread: a worker's wait, not the cooperative pool's.
        if let hotplug { _ = try? await Workers.run { hotplug.stop() } }
        registry.interruptAllStreams(.shuttingDown, CameraError(.shuttingDown, "camerad is shutting down; reconnect when it is back"))
        await server.shutDown(with: RPCError(.shuttingDown, "camerad is shutting down; reconnect when it is back"))
        loop.stop()
    }

    /// Connections open now.
    public var connectionCount: Int { server.connections.count }
}
