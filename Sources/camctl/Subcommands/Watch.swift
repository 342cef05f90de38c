import ArgumentParser
import CaptureKit

extension Camctl {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one line per device event (connected, disconnected, changed) until interrupted.",
            discussion: "A line on stderr says when watching has begun; every later event is printed."
        )

        @OptionGroup var global: GlobalOptions

        @Flag(help: "First print a 'connected' event for each device present now.")
        var existing = false

        @Flag(help: "Print each event as one JSON object per line.")
        var json = false

        func run() async throws {
            global.apply()
            let events = try await CaptureDevice.events(includeExisting: existing)
            Output.error("camctl: watching device events; press Ctrl-C to stop")
            for try await event in events {
                if json {
                    Output.line(try JSON.encode(DeviceEventJSON(event), pretty: false))
                } else {
                    Output.line(DeviceText.eventLine(event))
                }
            }
            throw CommandFailure("camerad ended the watch")
        }
    }
}
