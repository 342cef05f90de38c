import ArgumentParser
import CameraDaemon
import CameraIPC
import Glibc
import Logging

struct Camerad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "camerad",
        abstract: "Serve this machine's cameras to any number of processes at once.",
        discussion: """
            camerad owns the cameras and serves them on a Unix socket to CaptureKit, camctl \
            and the C and Python clients. The socket is --socket, else $CAMERAD_SOCKET, else \
            $XDG_RUNTIME_DIR/camerad.sock, else /run/camerad/camerad.sock.

            SIGINT or SIGTERM ends every client's calls, removes the socket and exits 0. \
            SIGHUP reads the stored defaults (--state-dir) again: devices that connect from \
            then on get them; nothing else changes. Exit status 1 means camerad could not \
            start (the reason is printed on one line).
            """,
        version: cameradVersion
    )

    @Option(name: .long, help: ArgumentHelp("The socket to listen on.", valueName: "path"))
    var socket: String?

    @Option(name: .long, help: ArgumentHelp("The socket file's permissions, in octal.", valueName: "mode"))
    var socketMode: String = "0660"

    @Option(name: .long, help: ArgumentHelp("The socket file's group (default: camerad's own).", valueName: "group"))
    var socketGroup: String?

    @Option(name: .long, help: ArgumentHelp(
        "Virtual cameras to create at start (0-64; default: one if no real camera is found, else none).", valueName: "n"))
    var virtualCameras: Int?

    @Option(name: .long, help: ArgumentHelp(
        "Virtual microphones to create at start (0-64): 48 kHz stereo, a tone marked with each sample's position.",
        valueName: "n"))
    var virtualMicrophones = 0

    @Flag(inversion: .prefixedNo, help: "Serve the V4L2 cameras (/dev/video*) and follow hotplug.")
    var v4l2 = true

    @Flag(inversion: .prefixedNo, help: "Serve the ALSA capture devices (microphones) and follow hotplug.")
    var alsa = true

    @Option(name: .long, help: ArgumentHelp(
        "How to follow cameras and microphones plugged in or out; auto is libudev, else inotify on /dev.",
        valueName: "source"))
    var hotplug: HotplugSource = .automatic

    @Option(name: .long, help: ArgumentHelp(
        "Where 'camctl set --persist' stores settings (default: $XDG_STATE_HOME/camerad, else /var/lib/camerad as root, else ~/.local/state/camerad).",
        valueName: "path"))
    var stateDir: String?

    @Option(name: .long, help: ArgumentHelp(
        "Clients served at once; more are refused with a reason (default: what the open-files limit allows, at most 4096).",
        valueName: "n"))
    var maxConnections: Int?

    @Option(name: .long, help: ArgumentHelp(
        "File descriptors camerad may hold for all clients together; one user's clients may hold a quarter (default: the open-files limit less an eighth).",
        valueName: "n"))
    var clientDescriptors: Int?

    @Option(name: .long, help: ArgumentHelp(
        "Shared memory for all frame pools, in MiB; one user's streams may hold a quarter (default: 4096).",
        valueName: "mib"))
    var poolMemory: Int?

    @Option(name: .long, help: ArgumentHelp("How much to log.", valueName: "level"))
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard parsedSocketMode != nil else {
            throw ValidationError("--socket-mode must be octal permissions such as 0660, not '\(socketMode)'")
        }
        if let virtualCameras, !(0...64).contains(virtualCameras) {
            throw ValidationError("--virtual-cameras must be 0 to 64, not \(virtualCameras)")
        }
        if !(0...64).contains(virtualMicrophones) {
            throw ValidationError("--virtual-microphones must be 0 to 64, not \(virtualMicrophones)")
        }
        if let maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections must be at least 1, not \(maxConnections)")
        }
        if let clientDescriptors, clientDescriptors < 1 {
            throw ValidationError("--client-descriptors must be at least 1, not \(clientDescriptors)")
        }
        if let poolMemory, !(1...(1 << 20)).contains(poolMemory) {
            throw ValidationError("--pool-memory must be 1 to 1048576 MiB, not \(poolMemory)")
        }
    }

    private var parsedSocketMode: mode_t? {
        guard let mode = mode_t(socketMode, radix: 8), mode <= 0o777 else { return nil }
        return mode
    }

    func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "camerad")
        signal(SIGPIPE, SIG_IGN)

        var configuration = CameraDaemon.Configuration(socketPath: SocketPath.resolve(explicit: socket))
        configuration.socketMode = parsedSocketMode!
        configuration.socketGroup = socketGroup
        configuration.virtualCameraCount = virtualCameras
        configuration.virtualMicrophoneCount = virtualMicrophones
        configuration.v4l2 = v4l2
        configuration.alsa = alsa
        configuration.hotplug = hotplug
        configuration.stateDirectory = stateDir ?? CameraDaemon.defaultStateDirectory()
        configuration.maxConnections = maxConnections
        configuration.clientDescriptors = clientDescriptors
        configuration.poolBytes = poolMemory.map { $0 << 20 }

        let signals = DaemonSignals.start()
        let daemon: CameraDaemon
        do {
            daemon = try await CameraDaemon.start(configuration, logger: logger)
        } catch {
            printToStandardError("camerad: \(error)")
            throw ExitCode.failure
        }
        while true {
            switch await signals.next() {
            case .reload:
                await daemon.reloadStoredDefaults()
            case .shutDown(let signal):
                logger.info("received \(signal)")
                await daemon.shutDown()
                return
            }
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension HotplugSource: ExpressibleByArgument {}

/// Writes one line to stderr.
func printToStandardError(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    _ = write(2, &bytes, bytes.count)
}
