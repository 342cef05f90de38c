import ArgumentParser
import CaptureKit

struct Camctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "camctl",
        abstract: "List, inspect, stream and watch the cameras camerad serves.",
        discussion: """
            camctl talks to camerad over its socket: --socket, else $CAMERAD_SOCKET, else \
            $XDG_RUNTIME_DIR/camerad.sock, else /run/camerad/camerad.sock.

            DEVICE is a uniqueID (virtual-0), an index from 'camctl list' (0), or a \
            /dev/video path. Exit status: 0 success, 1 the operation failed (the reason \
            is printed on one line), 2 usage error.
            """,
        version: "0.1.0",
        subcommands: [
            List.self, Info.self, Controls.self, Get.self, Set.self, Lock.self, Stream.self, Snapshot.self, Stats.self, Watch.self,
            Virtual.self, Ping.self,
        ]
    )

    // Declared here too, so that `camctl --socket PATH list` parses as well as
    // `camctl list --socket PATH`; subcommands read their own copy.
    @OptionGroup var global: GlobalOptions
}

/// The device a subcommand works on, as v4l2-ctl takes it: DEVICE, or
/// -d/--device; the first device ('camctl list' index 0) when neither is given.
struct DeviceSelection: ParsableArguments {
    @Option(name: [.customShort("d"), .customLong("device")], help: ArgumentHelp(
        "The device, as DEVICE (v4l2-ctl's spelling).", valueName: "device"))
    var option: String?

    @Argument(help: ArgumentHelp(
        "A uniqueID, an index from 'camctl list', or a /dev/video path (default: the first device).", valueName: "device"))
    var argument: String?

    func validate() throws {
        if let option, let argument, option != argument {
            throw ValidationError("give the device once, as DEVICE or with -d, not both")
        }
    }

    /// What names the device: "0", the first listed, when nothing does.
    var name: String { argument ?? option ?? "0" }

    /// The device named.
    func camera() async throws -> CaptureDevice {
        try await CaptureDevice.matching(name)
    }
}

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("camerad's socket.", valueName: "path"))
    var socket: String?

    /// Points CaptureKit at the chosen socket.
    func apply() {
        CaptureDaemon.clientName = "camctl"
        if let socket { CaptureDaemon.socketPath = socket }
    }
}
