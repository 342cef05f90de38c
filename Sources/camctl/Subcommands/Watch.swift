import ArgumentParser
import CaptureKit

extension Camctl {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one line per device event (connected, disconnected, changed) until interrupted.",
            discussion: """
                A line on stderr says when watching has begun; every later event is printed. Watching \
                lives through a daemon restart: the devices that went with camerad are printed as \
                disconnected, and those of the next one as connected when it is up.
                """
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
        }
    }
}
