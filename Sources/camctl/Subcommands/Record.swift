import ArgumentParser
import CaptureKit
import Foundation
import Glibc

extension Camctl {
    struct Record: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record a movie: H.264 (and AAC from a microphone) in MP4, MOV or Matroska, as CaptureMovieFileOutput does.",
            discussion: """
                camerad encodes, once for every recording of the camera at the same settings (with \
                --codec mjpeg it stores the camera's own JPEGs, none encoded), and writes FILE in fragments (--fragment): an interrupted recording leaves a file that \
                plays up to its last fragment. FILE ending in .mov is QuickTime, .mp4 or .m4v MPEG-4, .mkv Matroska; any other is refused. Until \
                --duration, --max-size, a full disk, the camera's end or an interrupt (Ctrl-C), with \
                one line of progress on a terminal; at the end, why it stopped. --json prints the \
                end as one object. An existing FILE is kept unless --force is given, which replaces \
                only a regular file (never writing through a link: the file is made anew).
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @OptionGroup var target: DeviceSelection

        @Argument(help: ArgumentHelp("The movie: .mp4, .m4v, .mov or .mkv.", valueName: "file"))
        var fileArgument: String?

        /// FILE, once ``validate()`` has it (the one word given, when only one is).
        var file: String { fileArgument ?? "" }

        /// The extensions of the containers camerad writes: QuickTime (.mov), MPEG-4 and Matroska.
        static let movieExtensions: Swift.Set = ["mp4", "m4v", "mov", "mkv"]

        @Option(help: "Stop after this many seconds (maxRecordedDuration).")
        var duration: Double?

        @Option(help: ArgumentHelp("Stop once the file is this large (maxRecordedFileSize).", valueName: "bytes"))
        var maxSize: Int64?

        @Option(help: ArgumentHelp("Stop when the file's filesystem has less free (minFreeDiskSpaceLimit).", valueName: "bytes"))
        var minFreeSpace: Int64?

        @Option(help: ArgumentHelp("The sound from this microphone (uniqueID or index); none without it.", valueName: "microphone"))
        var audio: String?

        @Option(help: ArgumentHelp("The sound's samples per second, 8000 to 96000 (default: the microphone's).", valueName: "Hz"))
        var audioRate: Int?

        @Option(help: ArgumentHelp("The sound's channels, 1 or 2 (default: the microphone's, 2 at most).", valueName: "1|2"))
        var audioChannels: Int?

        @Option(help: ArgumentHelp("The sound's bits per second, 8000 to 512000 (default: 128000).", valueName: "bits"))
        var audioBitrate: Int?

        @Option(help: ArgumentHelp("The picture's size (default: the camera's).", valueName: "WxH"))
        var size: String?

        @Option(help: "Frames per second (default: the camera's).")
        var fps: Int?

        @Option(help: "The video codec: h264 (encoded), or mjpeg: a camera running an MJPG format stored as it comes, none encoded (its size and rate; no --bitrate or --keyframe-interval).")
        var codec = "h264"

        @Option(help: ArgumentHelp("Bits per second (default: constant quality).", valueName: "bits"))
        var bitrate: Int?

        @Option(help: ArgumentHelp("Frames from one keyframe to the next (default: two seconds).", valueName: "frames"))
        var keyframeInterval: Int?

        @Option(help: ArgumentHelp("Where it was recorded, ISO 6709 (written into the file).", valueName: "±DD.DDDD±DDD.DDDD"))
        var location: String?

        @Option(help: "Seconds between fragments: at most what a crash loses (movieFragmentInterval).")
        var fragment: Double = 10

        @Option(help: ArgumentHelp("When the file is made durable (fdatasync): after every fragment (the default), never ('none'; a crash still leaves it playable up to its last fragment, a power loss may not), or after the first fragment this many seconds after the last sync.", valueName: "fragment|none|seconds"))
        var sync = "fragment"

        @Option(help: ArgumentHelp("Start the file this many seconds (at most 10) before now, from a keyframe, out of the recent frames and sound of the encoders camerad shares: as far back as another recording of the camera at the same settings has run; else it starts now.", valueName: "seconds"))
        var preRoll: Double?

        @Option(help: ArgumentHelp("Hand over to a new file every this many seconds, at a keyframe, no frame lost: FILE with %d (movie-%03d.mp4) numbers them, else -001, -002… go before its extension. Until Ctrl-C.", valueName: "seconds"))
        var segment: Double?

        @Flag(help: "Replace FILE if it exists.")
        var force = false

        @Flag(help: "Print how it ended as one JSON object.")
        var json = false

        /// --sync as CaptureKit's policy; nil: none of the forms it takes.
        var fileSync: CaptureMovieFileOutput.FileSync? {
            switch sync {
            case "fragment": return .everyFragment
            case "none": return CaptureMovieFileOutput.FileSync.none
            default:
                guard let seconds = Double(sync), (0.001...3600).contains(seconds) else { return nil }
                return .interval(CMTime(value: Int64(seconds * 1e9), timescale: 1_000_000_000))
            }
        }

        mutating func validate() throws {
            var (selection, file) = (target, fileArgument)
            try selection.takeFile(&file)
            (target, fileArgument) = (selection, file)
            // The container follows the extension, as CaptureMovieFileOutput's does: MOV, MPEG-4 or Matroska, nothing else.
            let type = URL(fileURLWithPath: self.file).pathExtension.lowercased()
            guard Self.movieExtensions.contains(type) else {
                throw ValidationError("camctl record writes a movie: FILE ends in .mp4, .m4v, .mov or .mkv, not '.\(type)'"
                    + (type == "wav" ? "; for the sound alone, camctl listen -o FILE.wav" : ""))
            }
            if let duration, duration <= 0 { throw ValidationError("--duration must be positive") }
            if let maxSize, maxSize <= 0 { throw ValidationError("--max-size must be positive") }
            if let minFreeSpace, minFreeSpace <= 0 { throw ValidationError("--min-free-space must be positive") }
            if let size, Snapshot.dimensions(size) == nil { throw ValidationError("--size must be WxH, such as 1280x720, not '\(size)'") }
            if let fps, !(1...240).contains(fps) { throw ValidationError("--fps must be 1 to 240") }
            if let bitrate, bitrate <= 0 { throw ValidationError("--bitrate must be positive") }
            if audio == nil && (audioRate != nil || audioChannels != nil || audioBitrate != nil) {
                throw ValidationError("--audio-rate, --audio-channels and --audio-bitrate set the sound: name its microphone with --audio")
            }
            if let audioRate, !(8_000...96_000).contains(audioRate) { throw ValidationError("--audio-rate must be 8000 to 96000") }
            if let audioChannels, !(1...2).contains(audioChannels) { throw ValidationError("--audio-channels must be 1 or 2") }
            if let audioBitrate, !(8_000...512_000).contains(audioBitrate) { throw ValidationError("--audio-bitrate must be 8000 to 512000") }
            if let keyframeInterval, keyframeInterval <= 0 { throw ValidationError("--keyframe-interval must be positive") }
            guard fragment > 0 else { throw ValidationError("--fragment must be positive") }
            guard fileSync != nil else { throw ValidationError("--sync takes 'fragment', 'none' or seconds from 0.001 to 3600, not '\(sync)'") }
            if let preRoll, !(0...10).contains(preRoll) { throw ValidationError("--pre-roll must be 0 to 10 seconds") }
            if let segment {
                guard segment > 0 else { throw ValidationError("--segment must be positive") }
                guard duration == nil && maxSize == nil else {
                    throw ValidationError("--segment records until Ctrl-C; --duration and --max-size would end the first file")
                }
            }
            guard codec == "h264" || codec == "mjpeg" else {
                throw ValidationError("--codec must be h264 or mjpeg, not '\(codec)'")
            }
            if codec == "mjpeg" && (bitrate != nil || keyframeInterval != nil) {
                throw ValidationError("--codec mjpeg stores the camera's JPEGs as they come: no --bitrate or --keyframe-interval")
            }
            if let location, location.range(of: #"^[+-]\d{1,2}(\.\d+)?[+-]\d{1,3}(\.\d+)?([+-]\d+(\.\d+)?)?/?$"#, options: .regularExpression) == nil {
                throw ValidationError("--location must be ISO 6709, such as +48.8577+002.2950, not '\(location)'")
            }
        }

        /// FILE's `index`th file when segmenting (1, 2, …).
        func segmentPath(_ index: Int) -> String {
            if file.contains("%") { return String(format: file, index) }
            let url = URL(fileURLWithPath: file)
            let numbered = url.deletingPathExtension().lastPathComponent + String(format: "-%03d", index)
            let named = url.pathExtension.isEmpty ? numbered : numbered + "." + url.pathExtension
            return url.deletingLastPathComponent().appendingPathComponent(named).path
        }

        struct Ended: Encodable {
            let file: String
            /// Every file written, in order (one unless --segment).
            let files: [String]
            let ending: String
            let recordingSuccessfullyFinished: Bool
            let message: String?
            let durationSeconds: Double
            let bytes: Int64
            let frames: Int
            let framesDropped: Int
            let fileSyncs: Int
            /// The longest of those fdatasync calls.
            let longestSyncMilliseconds: Double
        }

        func run() async throws {
            global.apply()
            let first = segment == nil ? file : segmentPath(1)
            // CaptureKit creates each file with O_EXCL: camctl only makes room for it.
            try OutputFile.clear(first, replacing: force)
            let camera = try await target.pictureCamera(deviceOption)
            guard camera.hasMediaType(.video) else {
                throw CommandFailure("\(camera.uniqueID) is a microphone; record a camera, with --audio for the microphone")
            }
            let session = CaptureSession()
            // The camera's own mode, size and rate, unless --size or --fps ask otherwise.
            session.sessionPreset = .inputPriority
            let output = CaptureMovieFileOutput()
            session.beginConfiguration()
            session.addInput(try CaptureDeviceInput(device: camera))
            if let audio {
                let microphone = try await CaptureDevice.matching(audio)
                guard microphone.hasMediaType(.audio) else {
                    throw CommandFailure("\(microphone.uniqueID) is a camera; --audio names a microphone ('camctl list' shows them)")
                }
                session.addInput(try CaptureDeviceInput(device: microphone))
            }
            session.addOutput(output)
            session.commitConfiguration()

            var settings = CaptureMovieFileOutput.VideoOutputSettings()
            settings.codec = codec == "mjpeg" ? .jpeg : .h264
            if let size = size.flatMap(Snapshot.dimensions) {
                (settings.width, settings.height) = (Int(size.width), Int(size.height))
            }
            settings.frameRate = fps
            settings.averageBitRate = bitrate
            settings.maxKeyFrameInterval = keyframeInterval
            output.videoOutputSettings = settings
            var sound = CaptureMovieFileOutput.AudioOutputSettings()
            (sound.sampleRate, sound.numberOfChannels, sound.bitRate) = (audioRate, audioChannels, audioBitrate)
            output.audioOutputSettings = sound
            if let duration { output.maxRecordedDuration = CMTime(value: Int64(duration * 1e9), timescale: 1_000_000_000) }
            if let maxSize { output.maxRecordedFileSize = maxSize }
            if let minFreeSpace { output.minFreeDiskSpaceLimit = minFreeSpace }
            output.movieFragmentInterval = CMTime(value: Int64(fragment * 1e9), timescale: 1_000_000_000)
            if let preRoll { output.preRollDuration = CMTime(value: Int64(preRoll * 1e9), timescale: 1_000_000_000) }
            output.fileSync = fileSync ?? .everyFragment
            if let location { output.metadata = [MetadataItem(identifier: .quickTimeMetadataLocationISO6709, value: location)] }

            try await session.start()
            let delegate = RecordingDelegate()
            let files = delegate.files
            let interrupted = Interruption()
            output.startRecording(to: URL(fileURLWithPath: first), recordingDelegate: delegate)
            let segmenter = segment.map { seconds in
                Task {
                    var index = 1
                    while (try? await Task.sleep(for: .milliseconds(100))) != nil {
                        guard output.isRecording, output.recordedDuration.seconds >= seconds else { continue }
                        index += 1
                        let next = segmentPath(index)
                        do {
                            try OutputFile.clear(next, replacing: force)
                            try output.handOverRecording(to: URL(fileURLWithPath: next))
                        } catch {
                            Output.error("camctl: \(error)")
                            return
                        }
                        // The figures restart with the next file once it takes over.
                        while output.isRecording, output.outputFileURL?.path != next,
                              (try? await Task.sleep(for: .milliseconds(50))) != nil {}
                    }
                }
            }
            let stopper = Task {
                await interrupted.wait()
                output.stopRecording()
            }
            let progress = isatty(2) == 1 ? Task {
                while (try? await Task.sleep(for: .milliseconds(500))) != nil {
                    let line = String(format: "\r%@: %.1f s, %@, %d frames, %d dropped ", file, output.recordedDuration.seconds,
                                      Self.bytes(output.recordedFileSize), output.recordedFrameCount, output.droppedFrameCount)
                    Output.progress(line)
                }
            } : nil
            let error = await delegate.finished()
            segmenter?.cancel()
            stopper.cancel()
            progress?.cancel()
            if progress != nil { Output.progress("\n") }
            await session.stopRunning()

            let recordingError = error as? RecordingError
            let ended = Ended(file: files.all.last ?? first, files: files.all, ending: recordingError.map { "\($0.code)" } ?? (error == nil ? "stopped" : "refused"),
                              recordingSuccessfullyFinished: error == nil || recordingError?.recordingSuccessfullyFinished == true,
                              message: error.map { "\($0)" }, durationSeconds: output.recordedDuration.seconds,
                              bytes: output.recordedFileSize, frames: output.recordedFrameCount, framesDropped: output.droppedFrameCount,
                              fileSyncs: output.fileSyncCount,
                              longestSyncMilliseconds: output.longestFileSync / .milliseconds(1))
            if json {
                Output.line(try JSON.encode(ended, pretty: false))
            } else {
                let how = error.map { "\($0)" } ?? "stopped"
                Output.line(String(format: "%@: %.1f s, %@, %d frames (%d dropped); %@", file, ended.durationSeconds,
                                   Self.bytes(ended.bytes), ended.frames, ended.framesDropped, how))
            }
            // A recording that could not start, or ended by a failure, is the command's failure.
            if let error, recordingError?.recordingSuccessfullyFinished != true {
                if let captureError = error as? CaptureError { throw captureError }
                throw CommandFailure("\(file): \(error)")
            }
        }

        static func bytes(_ count: Int64) -> String {
            count < 1 << 20 ? String(format: "%.1f KiB", Double(count) / 1024) : String(format: "%.1f MiB", Double(count) / 1_048_576)
        }
    }
}

/// The files a recording wrote, as each started.
private final class Files: @unchecked Sendable {
    private let lock = NSLock()
    private var paths: [String] = []
    func add(_ path: String) { lock.withLock { paths.append(path) } }
    var all: [String] { lock.withLock { paths } }
}

/// The recording's end, for a command that waits for it.
private final class RecordingDelegate: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    private let (ends, continuation) = AsyncStream.makeStream(of: (any Error)?.self)
    let files = Files()

    func fileOutput(_ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]) {
        files.add(fileURL.path)
    }

    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
                    error: (any Error)?) {
        // A file handed over (--segment) finishes while the recording goes on.
        guard !output.isRecording else { return }
        continuation.yield(error)
        continuation.finish()
    }

    /// The error it finished with; nil when stopped.
    func finished() async -> (any Error)? {
        for await error in ends { return error }
        return nil
    }
}
