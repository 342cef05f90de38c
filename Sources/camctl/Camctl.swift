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
            /dev/video path, given as an argument or with -d; without one, the first device. \
            v4l2-ctl's -d, -l/--list-ctrls, --list-formats-ext, --list-devices and set's -c \
            name=value,... work as there. Exit status: 0 success, 1 the operation failed \
            (the reason is printed on one line), 2 usage error.
            """,
        version: "0.1.0",
        subcommands: [
            List.self, Info.self, Controls.self, Get.self, Set.self, Lock.self, Stream.self, Snapshot.self, Stats.self, Watch.self,
            Listen.self, Levels.self, Record.self, Virtual.self, Ping.self,
        ]
    )

    // Declared here too, so that `camctl --socket PATH list` parses as well as
    // `camctl list --socket PATH`; subcommands read their own copy.
    @OptionGroup var global: GlobalOptions

    // v4l2-ctl's own spellings, for hands that type them: `camctl -d 0 --list-ctrls`.
    @OptionGroup var deviceOption: DeviceOption

    @Flag(name: [.customShort("l"), .customLong("list-ctrls")], help: "As v4l2-ctl: the device's controls ('camctl controls').")
    var listControls = false

    @Flag(name: .customLong("list-formats-ext"), help: "As v4l2-ctl: the device's formats, sizes and rates ('camctl info').")
    var listFormats = false

    @Flag(name: .customLong("list-devices"), help: "As v4l2-ctl: the devices ('camctl list').")
    var listDevices = false

    mutating func run() async throws {
        guard listControls || listFormats || listDevices else { throw CleanExit.helpRequest(self) }
        global.apply()
        if listDevices {
            for (index, camera) in try await CaptureDevice.devices().enumerated() {
                Output.line(DeviceText.listLine(index: index, device: camera))
            }
        }
        guard listControls || listFormats else { return }
        let camera = try await CaptureDevice.matching(deviceOption.name ?? "0")
        if listFormats { Output.line(DeviceText.formats(camera.formats).trimmingCharacters(in: .newlines)) }
        if listControls { Output.line(DeviceText.controls(camera.controls).trimmingCharacters(in: .newlines)) }
    }
}

/// v4l2-ctl's `-d DEVICE`. Declared by the root command and by each command
/// that works on a device, under the same name, so that `camctl -d 0 info` and
/// `camctl info -d 0` both reach the command (as --socket does).
struct DeviceOption: ParsableArguments {
    @Option(name: [.customShort("d"), .customShort("D"), .customLong("device")], help: ArgumentHelp(
        "The device, as DEVICE (v4l2-ctl's -d, arecord's -D).", valueName: "device"))
    var name: String?
}

/// The DEVICE argument of a command that works on one: given, or -d, or the
/// first device ('camctl list' index 0) when neither is.
struct DeviceSelection: ParsableArguments {
    @Argument(help: ArgumentHelp(
        "A uniqueID, an index from 'camctl list', or a /dev/video path (default: the first device).", valueName: "device"))
    var argument: String?

    /// The device named by DEVICE or `option`.
    func camera(_ option: DeviceOption) async throws -> CaptureDevice {
        try await CaptureDevice.matching(try DeviceSelection.name(argument, option))
    }

    /// The camera named by DEVICE or `option`, for a command of pictures
    /// (stream, record, snapshot): a microphone is refused, as `listen` refuses a camera.
    func pictureCamera(_ option: DeviceOption) async throws -> CaptureDevice {
        let device = try await camera(option)
        guard device.hasMediaType(.video) else {
            throw CommandFailure("\(device.uniqueID) is a microphone; hear it with 'camctl listen \(device.uniqueID)', or name a camera ('camctl list' shows them)")
        }
        return device
    }

    /// For a command whose FILE follows an optional DEVICE: one word given is
    /// the file (the device the first, as the help says), two are the device
    /// and the file. Throws when there is no file.
    mutating func takeFile(_ file: inout String?) throws {
        if file == nil {
            file = argument
            argument = nil
        }
        guard file != nil else { throw ValidationError("Missing expected argument '<file>'") }
    }

    /// What names the device: "0", the first listed, when nothing does.
    static func name(_ argument: String?, _ option: DeviceOption) throws -> String {
        if let argument, let named = option.name, named != argument {
            throw ValidationError("give the device once, as DEVICE or with -d, not both")
        }
        return argument ?? option.name ?? "0"
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
