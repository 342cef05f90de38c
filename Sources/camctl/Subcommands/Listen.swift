import ArgumentParser
import CameraIPC
import CaptureKit
import Foundation
import Synchronization

extension Camctl {
    struct Listen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Hear a microphone, as a CaptureSession with an audio data output would (arecord's job, shared).",
            discussion: """
                Periods come in the format asked (camerad converts, once for every client asking the \
                same), with arecord's spellings: -D the device, -f the format (S16_LE, S32_LE, \
                FLOAT_LE, cd, dat), -r the rate, -c the channels, -t wav or raw — but arecord's -d \
                is --duration: -d names the device in every camctl command (v4l2-ctl's spelling). \
                --output writes them to a WAV file (PCM, or IEEE float for f32) or raw samples; '-' is \
                standard output, as is no --output when standard output is a pipe or a file and no \
                statistics are asked (arecord -d 5 | …). An existing file is kept unless --force is \
                given, which replaces only a regular file (never a link or a device). Without \
                --duration it listens until interrupted. --stats prints at the end the periods and \
                samples, drops by reason (in periods and samples), the accounting of every period's \
                number (each one a period or in a drop report) and latency (receive time minus the \
                period's capture time); --json prints them as one object. --check decodes the audio \
                stamp of camerad's virtual microphones: every block in order, where its number puts it.
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @Argument(help: ArgumentHelp(
            "A microphone's uniqueID or index from 'camctl list' (default: the first microphone).", valueName: "device"))
        var device: String?

        @Option(name: [.customShort("r"), .long], help: "Samples per second (default: the microphone's own).")
        var rate: Int?

        @Option(name: [.customShort("c"), .long], help: "Channels (default: the microphone's own).")
        var channels: Int?

        @Option(name: [.customShort("f"), .long], help: ArgumentHelp(
            "The samples' format: s16 (S16_LE), s32 (S32_LE), f32 (FLOAT_LE), or arecord's cd (S16_LE 44100 Hz stereo) or dat (48000 Hz) (default: the microphone's own).",
            valueName: "format"))
        var format: SampleFormatArgument?

        @Option(help: "Frames in each period: the latency (default: 10 ms of the rate).")
        var periodFrames: Int?

        @Option(help: "Periods this client may hold at once (1-16).")
        var periodsInFlight = 8

        @Option(help: "Stop after this many seconds of sound: of the microphone's clock from the first period heard, as arecord -d counts samples (of time, when no period comes).")
        var duration: Double?

        @Option(help: "Leave this many periods at the start, and the drops reported before them, out of the statistics and --output (they carry the stream's start-up).")
        var skip = 0

        @Option(name: [.customShort("o"), .long], help: ArgumentHelp(
            "Write the samples to this file ('-': standard output), as --file-type says.", valueName: "file"))
        var output: String?

        @Option(name: [.customShort("t"), .customLong("file-type")], help: "wav (a RIFF WAVE header, then the samples) or raw (the samples alone).")
        var fileType: AudioFileType = .wav

        @Flag(help: "Replace --output if it exists (a regular file only).")
        var force = false

        @Flag(help: "Copy the samples into messages instead of sharing memory.")
        var inline = false

        @Option(help: "Hold each period this many milliseconds before releasing it (to act as a slow client).")
        var holdMilliseconds: Double = 0

        @Flag(help: "Print statistics at the end.")
        var stats = false

        @Flag(help: "Print the statistics as one JSON object.")
        var json = false

        @Flag(help: "Decode the audio stamp of camerad's virtual microphones: count blocks out of order or out of place.")
        var check = false

        func validate() throws {
            guard (1...16).contains(periodsInFlight) else { throw ValidationError("--periods-in-flight must be 1 to 16") }
            if let duration, duration <= 0 { throw ValidationError("--duration must be positive") }
            if let rate, rate <= 0 { throw ValidationError("--rate must be positive") }
            if let channels, channels <= 0 { throw ValidationError("--channels must be positive") }
            if let periodFrames, periodFrames <= 0 { throw ValidationError("--period-frames must be positive") }
            if skip < 0 { throw ValidationError("--skip must be 0 or more") }
        }

        /// Where the samples go: --output, or standard output as arecord writes
        /// them when it is not a terminal and nothing else is printed there.
        var destination: String? {
            if let output { return output }
            return isatty(1) == 0 && !json && !stats && !check ? "-" : nil
        }

        func run() async throws {
            global.apply()
            let microphone = try await MicrophoneSelection.microphone(device, deviceOption.name)
            let session = CaptureSession()
            let audioOutput = CaptureAudioDataOutput()
            session.beginConfiguration()
            session.addInput(try CaptureDeviceInput(device: microphone))
            session.addOutput(audioOutput)
            audioOutput.audioSettings = .init(sampleRate: rate ?? format?.rate, channels: channels ?? format?.channels,
                                              sampleFormat: format?.format)
            audioOutput.framesPerPeriod = periodFrames
            audioOutput.maxPeriodsInFlight = periodsInFlight
            audioOutput.delivery = inline ? .inline : .sharedMemory
            session.commitConfiguration()

            var events = session.events().makeAsyncIterator()
            let interrupted = Interruption()
            // Periods are counted where they arrive, on CaptureKit's connection thread, by a handler: no task
            // resumed and no other thread woken per period. Written to a file or held, they are read by a task
            // (those block).
            let firstHeard = FirstPeriod()
            let destination = destination
            // Made before the stream opens: a file that cannot be made costs no stream.
            let sink = try destination.map { try AudioFileSink(path: $0, type: fileType, replacing: force) }
            let counter = sink == nil && holdMilliseconds == 0
                ? PeriodCounter(PeriodTally(skip: skip, checking: check, firstHeard: firstHeard)) : nil
            var periods = counter == nil ? audioOutput.sampleBuffers.makeAsyncIterator() : nil
            if let counter { audioOutput.setSampleBufferHandler(counter.take) }
            try await session.start()
            let watchdog = duration.map { duration in
                Task {
                    await firstHeard.wait(for: Int64(duration * 1e9), askedAt: monotonicNanoseconds())
                    await session.stopRunning()
                }
            }
            let stopper = Task {
                await interrupted.wait()
                await session.stopRunning()
            }
            var failure: CaptureError?
            func waitUntilStopped() async {
                while let event = await events.next() {
                    if case .runtimeError(let error) = event { failure = failure ?? error }
                    if case .didStopRunning = event { return }
                }
            }
            var tally: PeriodTally
            if let counter {
                await waitUntilStopped()
                audioOutput.setSampleBufferHandler(nil)
                tally = counter.tally
            } else {
                tally = PeriodTally(skip: skip, checking: check, firstHeard: firstHeard)
                try await read(&periods!, into: &tally, writing: sink)
            }
            watchdog?.cancel()
            stopper.cancel()
            await session.stopRunning()
            if counter == nil { await waitUntilStopped() }
            tally.statistics.audioCheck?.finish()
            let statistics = tally.statistics
            if json {
                Output.line(try JSON.encode(statistics.json, pretty: false))
            } else if stats {
                Output.line("\(microphone.uniqueID): " + statistics.text)
            } else if failure == nil && destination != "-" {
                Output.error("\(microphone.uniqueID): \(statistics.progress)")
            }
            if let failure { throw failure }
        }

        /// Reads the periods to the end of the run, writing them to `sink` and holding each as asked.
        private func read(_ periods: inout CaptureDataOutput.SampleBufferSequence.AsyncIterator, into tally: inout PeriodTally,
                          writing sink: AudioFileSink?) async throws {
            defer { sink?.close() }
            // Read once: an option's property wrapper costs a look-up on every read.
            let holdMilliseconds = holdMilliseconds
            while let sample = await periods.next() {
                if tally.count(sample), let sink, let period = sample.dataBuffer,
                   let description = sample.formatDescription?.audioStreamBasicDescription {
                    try period.withUnsafeBytes { sink.write($0, description) }
                }
                if holdMilliseconds > 0 && sample.dataBuffer != nil { try? await Task.sleep(for: .milliseconds(holdMilliseconds)) }
                sample.invalidate()
            }
        }
    }

    /// The statistics of the periods heard, after the first `skip` (and the drops reported before them).
    struct PeriodTally {
        let skip: Int
        let checking: Bool
        let firstHeard: FirstPeriod
        var skipped = 0
        var statistics = StreamStatistics()

        init(skip: Int, checking: Bool, firstHeard: FirstPeriod) {
            self.skip = skip
            self.checking = checking
            self.firstHeard = firstHeard
        }

        /// Counts a period or drop, unless it is among the skipped; whether it was counted.
        mutating func count(_ sample: SampleBuffer) -> Bool {
            if sample.dataBuffer != nil { firstHeard.note(sample) }
            guard skipped >= skip else {
                if sample.dataBuffer != nil { skipped += 1 }
                return false
            }
            statistics.record(sample, receivedAt: monotonicNanoseconds(), checking: checking)
            return true
        }
    }

    /// The microphone's clock as heard (CLOCK_MONOTONIC, as the periods'
    /// timestamps): `--duration` is counted on it from the first period, as
    /// arecord -d counts samples — a listener that starts late or falls behind
    /// on a busy machine still hears its whole span.
    final class FirstPeriod: Sendable {
        /// The first period's capture time, the end of the latest one's, when the latest came; 0: none yet.
        private let heard = Mutex<(first: Int64, end: Int64, arrived: Int64)>((0, 0, 0))

        func note(_ sample: SampleBuffer) {
            let start = sample.presentationTimeStamp.value
            let end = start + (sample.duration.isValid ? Int64(sample.duration.seconds * 1e9) : 0)
            let now = monotonicNanoseconds()
            heard.withLock { heard in
                if heard.first == 0 { heard.first = start }
                heard = (heard.first, max(heard.end, end), now)
            }
        }

        /// Returns once periods spanning `duration` were heard from the first;
        /// when none came within `duration` of `askedAt`, or none has come for
        /// ten seconds past the span's end (the microphone stopped); or when cancelled.
        func wait(for duration: Int64, askedAt: Int64) async {
            while !Task.isCancelled {
                let (first, end, arrived) = heard.withLock { $0 }
                let now = monotonicNanoseconds()
                if first == 0 ? now >= askedAt + duration
                    : end - first >= duration || (now >= first + duration && now - arrived > 10_000_000_000) { return }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// A ``PeriodTally`` kept by an output's sample buffer handler, on CaptureKit's connection thread.
    final class PeriodCounter: Sendable {
        private let state: Mutex<PeriodTally>

        init(_ tally: PeriodTally) { state = Mutex(tally) }

        /// Counts a period and gives its slot back.
        @Sendable func take(_ sample: SampleBuffer) {
            _ = state.withLock { $0.count(sample) }
            sample.invalidate()
        }

        var tally: PeriodTally { state.withLock { $0 } }
    }

    struct Levels: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A microphone's levels per channel, as AVCaptureAudioChannel gives them (dBFS).",
            discussion: """
                The average power over the last 100 ms and the peak held over the last second, \
                computed once in camerad for every client. A live meter until interrupted (or \
                --duration); --json prints one reading, once the microphone has been heard for a \
                second (the peak hold's window), and exits.
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @Argument(help: ArgumentHelp(
            "A microphone's uniqueID or index from 'camctl list' (default: the first microphone).", valueName: "device"))
        var device: String?

        @Option(help: "Stop after this many seconds of sound: of the microphone's clock from the first period heard, as arecord -d counts samples (of time, when no period comes).")
        var duration: Double?

        @Flag(help: "Print one reading as JSON and exit.")
        var json = false

        struct Reading: Encodable {
            struct Channel: Encodable {
                let averagePowerLevel: Float
                let peakHoldLevel: Float
            }
            let uniqueID: String
            let timestampNanoseconds: Int64
            let channels: [Channel]
        }

        func run() async throws {
            global.apply()
            let microphone = try await MicrophoneSelection.microphone(device, deviceOption.name)
            let levels = try await CaptureDaemon.audioLevels(of: microphone)
            let deadline = duration.map { monotonicNanoseconds() + Int64($0 * 1e9) }
            let interrupted = Interruption()
            let reader = Task { () throws -> Reading? in
                var first: Int64?
                for try await reading in levels {
                    first = first ?? reading.timestampNanoseconds
                    let channels = reading.channels.map { Reading.Channel(averagePowerLevel: $0.averagePowerLevel, peakHoldLevel: $0.peakHoldLevel) }
                    let line = Reading(uniqueID: microphone.uniqueID, timestampNanoseconds: reading.timestampNanoseconds, channels: channels)
                    if json {
                        // The peak hold covers a second once a second has been heard.
                        if reading.timestampNanoseconds - first! >= 1_000_000_000 { return line }
                        continue
                    }
                    Output.line(channels.enumerated().map { index, channel in
                        "ch\(index) \(Self.meter(channel.averagePowerLevel)) avg \(DeviceText.fixed(Double(channel.averagePowerLevel), 1)) dBFS"
                            + " peak \(DeviceText.fixed(Double(channel.peakHoldLevel), 1))"
                    }.joined(separator: "   "))
                    if let deadline, monotonicNanoseconds() >= deadline { return nil }
                }
                return nil
            }
            let stopper = Task {
                await interrupted.wait()
                reader.cancel()
            }
            defer { stopper.cancel() }
            let reading = try await reader.value
            if json, let reading { Output.line(try JSON.encode(reading, pretty: false)) }
        }

        /// A bar of 30 cells from −60 to 0 dBFS.
        static func meter(_ level: Float) -> String {
            let cells = max(0, min(30, Int(((level + 60) / 2).rounded())))
            return "[" + String(repeating: "#", count: cells) + String(repeating: " ", count: 30 - cells) + "]"
        }
    }
}

/// How DEVICE names a microphone.
enum MicrophoneSelection {
    /// The microphone named by `argument` or `option`, else the first one.
    static func microphone(_ argument: String?, _ option: String?) async throws -> CaptureDevice {
        if let argument, let named = option, named != argument {
            throw ValidationError("give the device once, as DEVICE or with -d, not both")
        }
        guard let name = argument ?? option else {
            guard let first = try await CaptureDevice.default(for: .audio) else {
                throw CommandFailure("camerad serves no microphone; add one with 'camctl virtual add --audio' or plug one in")
            }
            return first
        }
        let device = try await CaptureDevice.matching(name)
        guard device.hasMediaType(.audio) else {
            throw CommandFailure("\(device.uniqueID) is a camera; name a microphone ('camctl list' shows them)")
        }
        return device
    }
}

/// --format: camctl's names, ALSA's (arecord -f), or arecord's shorthands
/// that set the rate and channels too.
enum SampleFormatArgument: String, CaseIterable, ExpressibleByArgument {
    case s16, s32, f32
    case S16_LE, S32_LE, FLOAT_LE
    /// arecord's cd: S16_LE at 44100 Hz, stereo.
    case cd
    /// arecord's dat: S16_LE at 48000 Hz, stereo.
    case dat

    init?(argument: String) {
        let spelled = argument.uppercased() == "FLOAT32_LE" ? "FLOAT_LE" : argument
        guard let known = Self(rawValue: spelled) ?? Self(rawValue: spelled.uppercased()) ?? Self(rawValue: spelled.lowercased()) else { return nil }
        self = known
    }

    var format: AudioCapabilities.SampleFormat {
        switch self {
        case .s16, .S16_LE, .cd, .dat: .int16
        case .s32, .S32_LE: .int32
        case .f32, .FLOAT_LE: .float32
        }
    }

    /// The rate and channels a shorthand sets.
    var rate: Int? { self == .cd ? 44_100 : self == .dat ? 48_000 : nil }
    var channels: Int? { self == .cd || self == .dat ? 2 : nil }
}

/// -t: arecord's file types camctl writes.
enum AudioFileType: String, CaseIterable, ExpressibleByArgument {
    case wav, raw
}

/// Where `listen` writes the samples: a new file (or one `--force`
/// replaces: ``OutputFile``) or standard output, as a WAV file or raw.
final class AudioFileSink {
    private let handle: FileHandle
    private let type: AudioFileType
    private var wav: WAVFile?

    init(path: String, type: AudioFileType, replacing: Bool) throws {
        handle = path == "-" ? FileHandle.standardOutput : try OutputFile.create(path, replacing: replacing)
        self.type = type
    }

    /// Writes a period's samples (after the header, for a WAV file's first).
    func write(_ bytes: UnsafeRawBufferPointer, _ description: AudioStreamBasicDescription) {
        if type == .wav && wav == nil { wav = WAVFile(handle: handle, description: description) }
        if let wav { wav.write(bytes) } else { handle.write(Data(bytes)) }
    }

    /// Fills in a WAV file's sizes where it can seek (not a pipe), and closes a file.
    func close() {
        wav?.finish()
        if handle !== FileHandle.standardOutput { try? handle.close() }
    }
}
