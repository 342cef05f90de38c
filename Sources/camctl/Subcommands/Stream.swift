import ArgumentParser
import CameraIPC
import CaptureKit
import Dispatch
import Foundation
import Glibc

extension Camctl {
    struct Stream: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stream frames from a device, as a CaptureSession with a video data output would.",
            discussion: """
                Without --count or --duration it streams until interrupted. Without --stats or \
                --json it keeps one progress line on stderr (frames, rate, drops; on a terminal \
                updated each second, else printed at the end). --output appends the raw \
                frames to a file. --stats prints at the end the frames, their rate and the device's \
                (both from the frames' capture timestamps), drops by reason, the accounting of every \
                sequence number (each one a frame or in a drop report; --fps skips some on purpose) \
                and latency (receive time minus capture time); --json prints them as one object, \
                with every frame's latency in 10 µs buckets (latencyHistogram: [lower bound µs, frames] \
                pairs), which add up across streams.
                """
        )

        @OptionGroup var global: GlobalOptions

        @OptionGroup var deviceOption: DeviceOption

        @OptionGroup var target: DeviceSelection

        @Option(help: "The frames' pixel format (native: the device's own; nv12-full: full-range values). CoreVideo's codes work too: 420v, 420f, y420, yuvs, BGRA.")
        var pixelFormat: PixelFormatArgument = .native

        @Option(help: ArgumentHelp("The output size, WxH (default: the device's).", valueName: "WxH"))
        var size: String?

        @Option(help: "At most this many frames per second (the daemon skips the others).")
        var fps: Double?

        @Option(help: "How frames are turned (landscapeRight: as the camera gives them).")
        var orientation: OrientationArgument = .landscapeRight

        @Flag(help: "Flip frames left to right (after rotation).")
        var mirror = false

        @Option(help: "The session preset, which picks the device's mode if it is idle (inputPriority: its own mode).")
        var preset: String = "inputPriority"

        @Option(help: "Stop after this many frames (after those --skip leaves out).")
        var count: Int?

        @Option(help: "Leave this many frames at the start, and the drops reported before them, out of the statistics, the count and --output (they carry the stream's start-up), as v4l2-ctl --stream-skip does.")
        var skip = 0

        @Option(help: "Stop after this many seconds.")
        var duration: Double?

        @Option(help: ArgumentHelp("Append the raw frames to this file (created if missing; only a regular file of yours with one name, never through a link).",
                                   valueName: "file"))
        var output: String?

        @Flag(help: "Copy frame bytes into messages instead of sharing memory.")
        var inline = false

        @Flag(help: "Queue late frames (up to a bound) instead of dropping them (alwaysDiscardsLateVideoFrames off).")
        var keepLateFrames = false

        @Option(help: "Frames this client may hold at once (1-8); more rides out longer stalls.")
        var framesInFlight = 3

        @Option(help: "Hold each frame this many milliseconds before releasing it (to act as a slow client).")
        var holdMilliseconds: Double = 0

        @Flag(help: "Print statistics at the end.")
        var stats = false

        @Flag(help: "Print the statistics as one JSON object.")
        var json = false

        @Flag(help: "Read the frame stamps of camerad's virtual cameras: count torn and out-of-order frames.")
        var check = false

        func validate() throws {
            guard (1...8).contains(framesInFlight) else { throw ValidationError("--frames-in-flight must be 1 to 8") }
            if count != nil && duration != nil { throw ValidationError("give --count or --duration, not both") }
            if let count, count < 1 { throw ValidationError("--count must be at least 1") }
            if skip < 0 { throw ValidationError("--skip must be 0 or more") }
            if let duration, duration <= 0 { throw ValidationError("--duration must be positive") }
            if let fps, fps <= 0 { throw ValidationError("--fps must be positive") }
            if size != nil && parsedSize == nil { throw ValidationError("--size must be WxH, such as 640x480") }
            if SessionPreset.allCases.first(where: { $0.rawValue == preset }) == nil {
                throw ValidationError("--preset must be one of " + SessionPreset.allCases.map(\.rawValue).joined(separator: ", "))
            }
        }

        private var parsedSize: (Int, Int)? {
            guard let size else { return nil }
            let parts = size.lowercased().split(separator: "x")
            guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else { return nil }
            return (width, height)
        }

        func run() async throws {
            global.apply()
            let camera = try await target.pictureCamera(deviceOption)
            let session = CaptureSession()
            let videoOutput = CaptureVideoDataOutput()
            session.beginConfiguration()
            session.addInput(try CaptureDeviceInput(device: camera))
            session.addOutput(videoOutput)
            let chosen = SessionPreset(rawValue: preset)
            if session.canSetSessionPreset(chosen) { session.sessionPreset = chosen }
            videoOutput.videoSettings = .init(pixelFormatType: pixelFormat.type, width: parsedSize?.0, height: parsedSize?.1)
            if let fps { videoOutput.minFrameDuration = CMTime(value: 1_000_000, timescale: Int32(min(Double(Int32.max), fps * 1_000_000))) }
            videoOutput.alwaysDiscardsLateVideoFrames = !keepLateFrames
            videoOutput.maxFramesInFlight = framesInFlight
            videoOutput.delivery = inline ? .inline : .sharedMemory
            if let connection = videoOutput.connection(with: .video) {
                connection.videoOrientation = orientation.orientation
                connection.isVideoMirrored = mirror
            }
            session.commitConfiguration()

            let file = try output.map(Self.openOutput)
            defer { file?.closeFile() }
            var events = session.events().makeAsyncIterator()
            let interrupted = Interruption()
            // Begun before the start: every frame, and a stream that ends at once ends it.
            var frames = videoOutput.sampleBuffers.makeAsyncIterator()
            try await session.start()

            let deadline = duration.map { monotonicNanoseconds() + Int64($0 * 1e9) }
            let watchdog = deadline.map { deadline in
                Task {
                    try? await Task.sleep(for: .nanoseconds(max(0, deadline - monotonicNanoseconds())))
                    await session.stopRunning()
                }
            }
            let stopper = Task {
                await interrupted.wait()
                await session.stopRunning()
            }
            // Frames are read where they arrive, on CaptureKit's connection
            // thread (no other thread wakes per frame) — unless they are written
            // to a file, which blocks.
            let progress = stats || json ? nil : Progress(device: camera.uniqueID)
            let statistics = try await withTaskExecutorPreference(file == nil ? videoOutput.sampleBufferExecutor : nil) {
                try await read(&frames, to: file, progress: progress)
            }
            watchdog?.cancel()
            stopper.cancel()
            await session.stopRunning()

            // Events come in order and didStopRunning last: a runtime error (the device
            // went away) is among those before it.
            var failure: CaptureError?
            while let event = await events.next() {
                if case .runtimeError(let error) = event { failure = failure ?? error }
                if case .didStopRunning = event { break }
            }

            if json {
                Output.line(try JSON.encode(statistics.json, pretty: false))
            } else if stats {
                Output.line("\(camera.uniqueID): " + statistics.text)
            } else if let progress, failure == nil || progress.terminal {
                // A failure's own line is the one line on stderr; a terminal's progress line still ends.
                progress.finish(statistics)
            }
            if let failure { throw failure }
        }

        private func read(
            _ frames: inout CaptureVideoDataOutput.SampleBufferSequence.AsyncIterator, to file: FileHandle?, progress: Progress?
        ) async throws -> StreamStatistics {
            var statistics = StreamStatistics()
            // Read once: an option's property wrapper costs a look-up on every read.
            let (check, holdMilliseconds, count, skip) = (check, holdMilliseconds, count, skip)
            var skipped = 0
            while let sample = await frames.next() {
                if skipped < skip {
                    // A frame left out, or a drop reported before one.
                    if sample.imageBuffer != nil { skipped += 1 }
                    sample.invalidate()
                    continue
                }
                let now = monotonicNanoseconds()
                statistics.record(sample, receivedAt: now, checking: check)
                progress?.update(statistics, at: now)
                if let file, let pixels = sample.imageBuffer {
                    try pixels.withUnsafeBytes { file.write(Data($0)) }
                }
                if holdMilliseconds > 0 && sample.imageBuffer != nil { try? await Task.sleep(for: .milliseconds(holdMilliseconds)) }
                sample.invalidate()
                if let count, statistics.frames >= count { break }
            }
            return statistics
        }

        /// v4l2-ctl's running count: one line on stderr, rewritten each second on
        /// a terminal; elsewhere (a log, a pipe) written once, at the end.
        final class Progress {
            let device: String
            let terminal = isatty(2) != 0
            private var shownAt: Int64 = 0

            init(device: String) { self.device = device }

            func update(_ statistics: StreamStatistics, at now: Int64) {
                guard terminal, now - shownAt >= 1_000_000_000 else { return }
                shownAt = now
                FileHandle.standardError.write(Data("\r\(device): \(statistics.progress)\u{1B}[K".utf8))
            }

            func finish(_ statistics: StreamStatistics) {
                let line = "\(device): \(statistics.progress)"
                if terminal {
                    FileHandle.standardError.write(Data("\r\(line)\u{1B}[K\n".utf8))
                } else {
                    Output.error(line)
                }
            }
        }

        private static func openOutput(_ path: String) throws -> FileHandle {
            let handle = try OutputFile.appending(path)
            handle.seekToEndOfFile()
            return handle
        }
    }
}

enum PixelFormatArgument: String, CaseIterable, ExpressibleByArgument {
    case native, nv12
    /// NV12 with full-range values (CoreVideo's '420f').
    case nv12Full = "nv12-full"
    case i420, yuyv, bgra, argb

    /// Also CoreVideo's codes ('420v', '420f', 'y420', 'yuvs', 'BGRA'), as AVFoundation code names them
    /// (ARGB's code is the number 32: `argb`).
    init?(argument: String) {
        // A CoreVideo code is its four characters, the first in the high byte: FourCharCode's reversed.
        let code = FourCharCode(argument).map { $0.rawValue.byteSwapped }
        guard let format = Self(rawValue: argument.lowercased()) ?? Self.allCases.first(where: { code != nil && $0.type == code })
        else { return nil }
        self = format
    }

    var type: OSType? {
        switch self {
        case .native: nil
        case .nv12: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        case .nv12Full: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
        case .i420: kCVPixelFormatType_420YpCbCr8Planar
        case .yuyv: kCVPixelFormatType_422YpCbCr8_yuvs
        case .bgra: kCVPixelFormatType_32BGRA
        case .argb: kCVPixelFormatType_32ARGB
        }
    }
}

enum OrientationArgument: String, CaseIterable, ExpressibleByArgument {
    case portrait, portraitUpsideDown, landscapeRight, landscapeLeft

    var orientation: CaptureConnection.VideoOrientation {
        switch self {
        case .portrait: .portrait
        case .portraitUpsideDown: .portraitUpsideDown
        case .landscapeRight: .landscapeRight
        case .landscapeLeft: .landscapeLeft
        }
    }
}
