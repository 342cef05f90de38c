@testable import CameraDaemon
import CameraEncoding
import CameraIPC
import CameraMedia
import CameraTestSupport
import Foundation
import Glibc
import Logging
import Synchronization
import Testing

/// Issue 35's recording on the graph, below the protocol: one H.264 encoder
/// node on a virtual camera, its packets fanning out to recorders that each
/// write a file their owner opened. Judged by ffprobe and by the stamps
/// ffmpeg decodes back.
@Suite struct RecordingTests {
    let budget = ClientBudget()
    let logger = Logger(label: "test")
    static let owner = ClientBudget.Owner(connection: 1, user: 0)
    static let width = 320, height = 240

    /// A recorder writing `path`, and how it ended once it has.
    final class Recording: Sendable {
        let recorder: MovieRecorder
        let path: String
        let ended = Ended()
        let subscription: UInt64

        final class Ended: Sendable {
            let value = Mutex<(MovieRecorder.Ending, MovieRecorder.Figures)?>(nil)
        }

        init(_ path: String, on encoder: VideoEncoderNode, limits: MovieRecorder.Limits = .init(), logger: Logger) throws {
            self.path = path
            let descriptor = OwnedFD(adopting: open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644))
            let ended = self.ended
            recorder = try MovieRecorder(descriptor: descriptor, container: .mp4, video: encoder.parameters, limits: limits,
                                         fragmentInterval: 1, logger: logger) { ending, figures in
                ended.value.withLock { $0 = (ending, figures) }
            }
            subscription = try encoder.node.subscribe(recorder, policy: SubscriptionPolicy(maxInFlight: 30, startsAtKeyframe: true),
                                                      for: RecordingTests.owner)
            encoder.requestKeyframe()
        }

        /// stopRecording(): its subscription ends, then its file.
        func stop(_ encoder: VideoEncoderNode) {
            encoder.node.unsubscribe(subscription)
            recorder.stop()
        }

        var ending: MovieRecorder.Ending? { ended.value.withLock { $0?.0 } }
        var figures: MovieRecorder.Figures? { ended.value.withLock { $0?.1 } }
    }

    /// Three recorders of one camera share one encoder: the first from the
    /// start, the second joining a second later — its file starts at a keyframe
    /// asked for then, not at the next scheduled one (ten seconds on) — and a
    /// third that stops itself at a one-second limit, a success. Every file
    /// plays; every frame's stamp is in order, with gaps only where drops were reported.
    @Test(.timeLimit(.minutes(2))) func recordersOfOneCameraShareOneEncoderAndEachFileStartsAtAKeyframe() async throws {
        try await withTemporaryDirectory { folder in
            let streamer = DeviceStreamer(device: VirtualCamera(index: 0), timers: .testTimers, budget: budget, logger: logger)
            let settings = VideoEncoder.Settings(width: Self.width, height: Self.height, frameRate: 30, keyframeInterval: 300)
            let encoder = try await VideoEncoderNode(on: streamer, name: "virtual-0", format: .h264(settings), budget: budget, logger: logger)
            let first = try Recording(folder + "/first.mp4", on: encoder, logger: logger)
            #expect(await waitUntil(timeout: .seconds(60)) { first.recorder.figures.durationNanoseconds >= 1_000_000_000 })
            let second = try Recording(folder + "/second.mp4", on: encoder, logger: logger)
            let limited = try Recording(folder + "/limited.mp4", on: encoder,
                                        limits: .init(maxDurationNanoseconds: 1_000_000_000), logger: logger)
            #expect(await waitUntil(timeout: .seconds(60)) { limited.ending != nil && second.recorder.figures.durationNanoseconds >= 1_500_000_000 })
            limited.unsubscribe(encoder)
            first.stop(encoder)
            second.stop(encoder)
            #expect(await waitUntil(timeout: .seconds(60)) { first.ending != nil && second.ending != nil })
            encoder.stop()

            #expect(first.ending == .stopped && second.ending == .stopped)
            #expect(limited.ending == .maximumDurationReached && limited.ending?.recordingSuccessfullyFinished == true)
            for recording in [first, second, limited] {
                let figures = try #require(recording.figures)
                let stream = try await MovieProbe.videoStream(recording.path)
                #expect(stream["codec_name"] as? String == "h264" && stream["width"] as? Int == Self.width, "\(stream)")
                let frames = MovieProbe.frames(stream)
                #expect(frames == figures.packets, "\(recording.path): the file holds every packet written: \(frames) of \(figures.packets)")
                let size = try FileManager.default.attributesOfItem(atPath: recording.path)[.size] as? Int64
                #expect(size == figures.bytes)
                let stamps = try await MovieProbe.stamps(recording.path, width: Self.width, height: Self.height, in: folder).compactMap { $0?.sequence }
                #expect(stamps.count == frames, "every frame's stamp reads")
                #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 }, "in order")
                if figures.packetsDropped == 0, let start = stamps.first, let end = stamps.last {
                    #expect(Int(end - start) + 1 == stamps.count, "no gap without a drop reported: \(stamps)")
                }
                print("recorded \(recording.path): \(frames) frames, \(figures.bytes) bytes, \(figures.packetsDropped) dropped, \(recording.ending!)")
            }
            // The second joined a second in: without a keyframe asked for at once its file would wait ten seconds for one.
            #expect((try #require(second.figures)).durationNanoseconds >= 1_000_000_000)
            #expect((try #require(limited.figures)).durationNanoseconds >= 1_000_000_000)
            #expect(await waitUntil { budget.streamCount(of: .daemon) == 0 && budget.streamCount(of: Self.owner) == 0 })
        }
    }
}

extension RecordingTests {
    /// A recording with sound: a virtual camera and a virtual microphone, each
    /// encoded once, muxed into one file. Both run on CLOCK_MONOTONIC: a
    /// frame's stamp carries its capture time, a block of the microphone's
    /// stamp its capture time by its number, so every sound decoded from the
    /// file must lie where its capture time puts it against the picture's —
    /// within two samples (0.3 measured; the issue asks one video frame).
    @Test(.timeLimit(.minutes(4))) func soundAndPictureOfOneClockKeepTheirOffsetInTheFile() async throws {
        try await withTemporaryDirectory { folder in
            let streamer = DeviceStreamer(device: VirtualCamera(index: 0), timers: .testTimers, budget: budget, logger: logger)
            let microphone = MicrophoneStreamer(microphone: VirtualMicrophone(index: 0), budget: budget, logger: logger) { _ in }
            // Where the microphone's sample 0 was captured: any period's time less its place.
            let probe = GraphSink(releasesAtOnce: true)
            let probeID = try await microphone.listen(VirtualMicrophone.layout, policy: SubscriptionPolicy(maxInFlight: 4), sink: probe,
                                                      for: Self.owner)
            #expect(await waitUntil { !probe.frames.isEmpty })
            let period = try #require(probe.frames.first)
            let microphoneStart = period.timestampNanoseconds - Int64(period.sequence) * 10_000_000
            // It listens on to the end: with its last listener gone the microphone would stop, and start anew.
            defer { microphone.close(probeID) }

            let video = try await VideoEncoderNode(on: streamer, name: "virtual-0",
                                                   format: .h264(.init(width: Self.width, height: Self.height, frameRate: 30)), budget: budget, logger: logger)
            let audio = try await AudioEncoderNode(on: microphone, settings: .init(sampleRate: 48_000, channels: 2), budget: budget, logger: logger)
            let path = folder + "/movie.mp4"
            let descriptor = OwnedFD(adopting: open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644))
            let ended = Recording.Ended()
            let recorder = try MovieRecorder(descriptor: descriptor, container: .mp4, video: video.parameters, audio: audio.parameters,
                                             fragmentInterval: 1, logger: logger) { ending, figures in ended.value.withLock { $0 = (ending, figures) } }
            let videoID = try video.node.subscribe(recorder, policy: SubscriptionPolicy(maxInFlight: 30, startsAtKeyframe: true), for: Self.owner)
            // The sound's packets are small and a lost one cannot be made up (players close the gap): a recorder
            // holds 20 s of them behind a starved worker.
            let audioID = try audio.node.subscribe(recorder.audioInput, policy: SubscriptionPolicy(maxInFlight: 1_000), for: Self.owner)
            video.requestKeyframe()
            // Two seconds of frames written, not two seconds of time: under the full suite's load the encoder's
            // worker (SCHED_IDLE) may be starved, its frames dropped, and a file of 2 frames spans 2 s.
            #expect(await waitUntil(timeout: .seconds(120)) { recorder.figures.packets >= 60 })
            video.node.unsubscribe(videoID)
            audio.node.unsubscribe(audioID)
            recorder.stop()
            #expect(await waitUntil(timeout: .seconds(60)) { ended.value.withLock { $0 != nil } })
            video.stop()
            audio.stop()
            #expect(ended.value.withLock { $0?.0 } == .stopped)

            let streams = try await MovieProbe.streams(path)
            #expect(streams.map { $0["codec_name"] as? String } == ["h264", "aac"], "\(streams)")
            let audioStart = try #require(Double(streams.last?["start_time"] as? String ?? ""))
            let stamps = try await MovieProbe.stamps(path, width: Self.width, height: Self.height, in: folder)
            let first = try #require(stamps.first ?? nil, "the first frame's stamp reads")
            // The file's time 0 is its first frame's capture time (its stamp's, to the microsecond).
            let videoStart = Int64(first.timestampMicroseconds) * 1000
            // As a player places them: a gap in the sound (periods lost under load, reported) is silence, not
            // the sound after it drawn forward.
            let samples = try await MovieProbe.monoAudio(path, rate: 48_000, in: folder, placedByTimestamps: true)
            let blocks = AudioStamp.decode(samples, sampleRate: 48_000)
            // Under load the microphone may lose periods (silence in the file): enough blocks to judge by.
            #expect(blocks.count >= 20, "blocks of two seconds decoded: \(blocks.count)")
            #expect(zip(blocks, blocks.dropFirst()).allSatisfy { $0.number < $1.number }, "in order")
            // The first packets decode without the one before them to overlap with (the file starts mid-stream):
            // blocks in its first two frames are left out.
            let offsets = blocks.filter { $0.offset >= 2 * 1024 }.map { block -> Double in
                let captured = microphoneStart + Int64(block.number) * 20_000_000
                let expected = (Double(captured - videoStart) / 1e9 - audioStart) * 48_000
                return Double(block.offset) - expected
            }
            let worst = offsets.map(abs).max() ?? .infinity
            print("sound against picture in the file: \(blocks.count) blocks, offsets \(String(format: "%.1f", offsets.min() ?? 0)) to \(String(format: "%.1f", offsets.max() ?? 0)) samples")
            let details = "offsets \(offsets.prefix(3)) … \(offsets.suffix(3)); blocks \(blocks.prefix(3)) … \(blocks.suffix(3)); "
                + "audio starts at \(audioStart) s, the picture at \(videoStart) ns (frame \(first.sequence)), the microphone at "
                + "\(microphoneStart) ns; \(samples.count) samples; \(String(describing: ended.value.withLock { $0?.1 }))"
            // Drops (the picture's, when its encoder's worker is starved; the sound's, when the recorder is
            // behind) leave gaps, and what follows a gap keeps its time.
            #expect(worst <= 2, "every block within two samples of its place on the picture's clock: \(details)")
        }
    }
}

extension RecordingTests {
    /// A descriptor a movie cannot go to is refused before anything is
    /// written, saying what it is and what to pass instead.
    @Test func descriptorsThatAreNoWritableFileAreRefusedSayingWhatToPass() async throws {
        await withTemporaryDirectory { folder in
            var pipeEnds: [Int32] = [0, 0]
            #expect(pipe(&pipeEnds) == 0)
            let readEnd = OwnedFD(adopting: pipeEnds[0])
            defer { withExtendedLifetime(readEnd) {} }
            var socketEnds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &socketEnds) == 0)
            close(socketEnds[1])
            #expect(FileManager.default.createFile(atPath: folder + "/readonly.mp4", contents: nil))
            let cases: [(OwnedFD, String)] = [
                (OwnedFD(adopting: pipeEnds[1]), "a pipe"),
                (OwnedFD(adopting: socketEnds[0]), "a socket"),
                (OwnedFD(adopting: open(folder, O_RDONLY | O_DIRECTORY)), "a directory"),
                (OwnedFD(adopting: open("/dev/null", O_WRONLY)), "a device"),
                (OwnedFD(adopting: open(folder + "/readonly.mp4", O_RDONLY)), "read-only"),
            ]
            for (descriptor, says) in cases {
                do throws(CameraError) {
                    try MovieRecorder.check(descriptor)
                    Issue.record("\(says) was taken")
                } catch {
                    #expect(error.code == .invalidArgument && error.message.contains(says), "\(error.message)")
                }
            }
            let writable = OwnedFD(adopting: open(folder + "/movie.mp4", O_WRONLY | O_CREAT, 0o644))
            #expect(throws: Never.self) { try MovieRecorder.check(writable) }
        }
    }

    /// A disk that fills up mid-recording ends it with diskFull (not a
    /// success), and the file plays up to its last whole fragment. The disk is
    /// a 96 KiB tmpfs (mounting one takes root: skipped otherwise).
    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs to fill takes root"), .timeLimit(.minutes(2)))
    func aFullDiskEndsTheRecordingWithDiskFullAndAPlayableFile() async throws {
        try await withEncoderOnASmallDisk(size: "96k") { folder, disk, encoder in
            let recording = try Recording(disk + "/movie.mp4", on: encoder, logger: logger)
            #expect(await waitUntil(timeout: .seconds(90)) { recording.ending != nil }, "the disk fills")
            recording.unsubscribe(encoder)
            encoder.stop()
            #expect(recording.ending == .diskFull && recording.ending?.recordingSuccessfullyFinished == false)
            // A copy off the full disk for ffmpeg (it writes nothing there, but be sure).
            try FileManager.default.copyItem(atPath: disk + "/movie.mp4", toPath: folder + "/movie.mp4")
            let stream = try await MovieProbe.videoStream(folder + "/movie.mp4")
            let frames = MovieProbe.frames(stream)
            print("a full disk: \(frames) frames play of \(recording.figures?.packets ?? 0) written")
            #expect(frames >= 15, "the whole fragments play: \(stream)")
            let stamps = try await MovieProbe.stamps(folder + "/movie.mp4", width: Self.width, height: Self.height, in: folder).compactMap { $0?.sequence }
            #expect(stamps.count == frames && zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
        }
    }
}

extension RecordingTests {
    /// minFreeDiskSpaceLimit while recording: once the file's filesystem has
    /// less free than asked (a 512 KiB tmpfs, 384 KiB asked), the recording
    /// ends with diskFull — room enough left to finish the file, whole, every
    /// frame written playing.
    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs takes root"), .timeLimit(.minutes(2)))
    func fallingBelowTheFreeSpaceAskedEndsTheRecordingWithAWholeFile() async throws {
        try await withEncoderOnASmallDisk(size: "512k") { _, disk, encoder in
            let recording = try Recording(disk + "/movie.mp4", on: encoder, limits: .init(minFreeBytes: 384 << 10), logger: logger)
            #expect(await waitUntil(timeout: .seconds(90)) { recording.ending != nil }, "the free space falls below the limit")
            recording.unsubscribe(encoder)
            encoder.stop()
            #expect(recording.ending == .diskFull && recording.ending?.recordingSuccessfullyFinished == false)
            let free = try #require(MovieRecorder.freeBytes(OwnedFD(adopting: open(disk, O_RDONLY | O_DIRECTORY | O_CLOEXEC))))
            #expect(free > 0, "it stopped before the disk was full")
            let frames = MovieProbe.frames(try await MovieProbe.videoStream(disk + "/movie.mp4"))
            #expect(frames > 0 && frames == recording.figures?.packets, "the whole file plays: \(frames) of \(recording.figures?.packets ?? 0)")
        }
    }
}

extension RecordingTests {
    /// A tmpfs of `size` mounted in a temporary folder (mounting takes root),
    /// and a 320x240 H.264 encoder on a virtual camera with a keyframe every
    /// 15 frames (fragments cut often): what the disk-space tests record.
    func withEncoderOnASmallDisk(size: String, _ body: (_ folder: String, _ disk: String, VideoEncoderNode) async throws -> Void) async throws {
        try await withTemporaryDirectory { folder in
            let disk = folder + "/disk"
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: false)
            let mounted = try await runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", disk])
            try #require(mounted.status == 0, "mount: \(mounted.standardError)")
            defer { _ = Glibc.umount2(disk, Int32(MNT_DETACH)) }
            let streamer = DeviceStreamer(device: VirtualCamera(index: 0), timers: .testTimers, budget: budget, logger: logger)
            let encoder = try await VideoEncoderNode(on: streamer, name: "virtual-0",
                                                     format: .h264(.init(width: Self.width, height: Self.height, frameRate: 30, keyframeInterval: 15)),
                                                     budget: budget, logger: logger)
            try await body(folder, disk, encoder)
        }
    }
}

extension RecordingTests.Recording {
    /// Ends its subscription, as its owner does for a recorder that stopped itself (a limit).
    func unsubscribe(_ encoder: VideoEncoderNode) {
        encoder.node.unsubscribe(subscription)
    }
}
