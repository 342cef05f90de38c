@testable import CameraDaemon
import CameraEncoding
import CameraIPC
import CameraMedia
import CameraProtocol
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

        /// - Parameter descriptor: where to write, if not `path` created or truncated.
        init(_ path: String, descriptor: OwnedFD? = nil, on encoder: VideoEncoderNode, limits: MovieRecorder.Limits = .init(),
             keepsReservedBlocks: Bool = false, sync: FileSync = .everyFragment, logger: Logger) throws {
            self.path = path
            let descriptor = descriptor ?? OwnedFD(adopting: open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644))
            let ended = self.ended
            recorder = try MovieRecorder(descriptor: descriptor, container: .mp4, video: encoder.parameters, limits: limits,
                                         fragmentInterval: 1, keepsReservedBlocks: keepsReservedBlocks, sync: sync, logger: logger) { ending, figures in
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
    /// A camera running NV12 is encoded from its NV12 frames, read in place; one running YUYV from its I420 variant.
    @Test(.timeLimit(.minutes(4)), arguments: [PixelFormat.yuyv, .nv12])
    func recordersOfOneCameraShareOneEncoderAndEachFileStartsAtAKeyframe(camera pixelFormat: PixelFormat) async throws {
        try await withTemporaryDirectory { folder in
            let (_, encoder) = try await h264Encoder(keyframeInterval: 300, camera: pixelFormat)
            #expect(encoder.encoderInput == (pixelFormat == .nv12 ? .nv12 : .i420))
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
                // The limited one's frames between its last and its limit that never came (its encoder behind) are
                // lost too: those that start before the limit (1 s less half a frame from its first).
                let frame = 1.0 / 30
                let sinceLast = 1 - frame / 2 - Double(figures.durationNanoseconds) / 1e9 + frame
                let lostAtEnd = recording === limited ? max(0, Int((sinceLast / frame).rounded(.up)) - 1) : 0
                if let start = stamps.first, let end = stamps.last {
                    #expect(Int(end - start) + 1 + lostAtEnd == stamps.count + figures.packetsDropped,
                            "every gap counted lost: \(figures.packetsDropped) (\(lostAtEnd) at the end), \(stamps)")
                }
                print("recorded \(recording.path): \(frames) frames, \(figures.bytes) bytes, \(figures.packetsDropped) dropped, \(recording.ending!)")
            }
            // The second joined a second in: without a keyframe asked for at once its file would wait ten seconds for one.
            #expect((try #require(second.figures)).durationNanoseconds >= 1_000_000_000)
            // The limit's file ends within half a frame of it, never more: shorter only by frames lost at its end.
            let limitedFigures = try #require(limited.figures)
            #expect(limitedFigures.durationNanoseconds <= 1_016_666_667
                    && limitedFigures.durationNanoseconds + Int64(limitedFigures.packetsDropped) * 33_333_334 >= 983_333_333, "\(limitedFigures)")
            #expect(await waitUntil { budget.streamCount(of: .daemon) == 0 && budget.streamCount(of: Self.owner) == 0 })
        }
    }
}

extension RecordingTests {
    /// A starved encoder (its worker held for forty of the camera's frames)
    /// misses frames; the file keeps every packet it made around the gap (one
    /// keyframe in 300 frames: a wait for the next would lose the rest), and a
    /// stop takes the frames in x264's lookahead — the encoder, stopping with
    /// its last recorder, is flushed: every frame it was given made a packet,
    /// and the file holds every one captured before the stop, by the stamps
    /// decoded back.
    @Test(.timeLimit(.minutes(4))) func aStarvedEncodersPacketsAndItsLookaheadAreAllInTheFile() async throws {
        try await withTemporaryDirectory { folder in
            let (streamer, encoder) = try await h264Encoder(keyframeInterval: 300)
            // Every packet the encoder publishes, from its first.
            let published = try GraphSink.listening(to: encoder.node, inFlight: 8)
            let camera = GraphSink(releasesAtOnce: true)
            let cameraID = try await streamer.open(StreamRequest(), for: .daemon, sink: camera)
            let recording = try Recording(folder + "/starved.mp4", on: encoder, logger: logger)
            #expect(await waitUntil(timeout: .seconds(60)) { recording.recorder.figures.packets >= 15 })
            let hold = DispatchSemaphore(value: 0)
            #expect(encoder.runOnWorker { hold.wait() })
            let heldAt = camera.accountedThrough
            #expect(await waitUntil(timeout: .seconds(60)) { camera.accountedThrough >= heldAt + 40 })
            hold.signal()
            let written = recording.recorder.figures.packets
            #expect(await waitUntil(timeout: .seconds(60)) { recording.recorder.figures.packets >= written + 15 })
            // stopRecording(), as a recording does: the picture up to now, then its encoder let go (its last user: stopped, flushed).
            let stop = monotonicNanoseconds()
            recording.recorder.stop(before: stop)
            encoder.stop()
            streamer.close(cameraID)
            #expect(await waitUntil(timeout: .seconds(60)) { recording.ending != nil && published.hasEnded })
            recording.unsubscribe(encoder)

            #expect(recording.ending == .stopped)
            let figures = try #require(recording.figures)
            #expect(published.frames.count == encoder.framesEncoded, "every frame given made a packet (x264 flushed): \(published.frames.count) of \(encoder.framesEncoded)")
            // Upstream drops (frames the held encoder never got, and any the camera skipped) reach its subscribers as they are.
            #expect(published.dropCount(.frameWasLate) + published.dropCount(.discontinuity) >= 30, "\(published.log)")
            let stamps = try await MovieProbe.stamps(recording.path, width: Self.width, height: Self.height, in: folder).compactMap { $0?.sequence }
            let first = try #require(stamps.first)
            let made = published.frames.filter { $0.sequence >= first && $0.timestampNanoseconds < stop }.map { UInt32(truncatingIfNeeded: $0.sequence) }
            #expect(stamps == made, "the file holds every packet made from its first to its stop")
            let frames = MovieProbe.frames(try await MovieProbe.videoStream(recording.path))
            #expect(stamps.count == figures.packets && frames == figures.packets)
            // The gaps counted lost, and those between its last frame and the stop, if any (upstream, at the end).
            let span = Int(stamps.last!) - Int(first) + 1
            let ending = published.frames.first { $0.timestampNanoseconds >= stop }.map { Int(truncatingIfNeeded: $0.sequence) }
            let missedAtTheEnd = ending.map { max(0, Int(truncatingIfNeeded: $0) - Int(stamps.last!) - 1) } ?? 0
            #expect((span...span + missedAtTheEnd).contains(stamps.count + figures.packetsDropped),
                    "the gap counted lost: \(figures.packetsDropped), \(missedAtTheEnd) missed at the end")
            #expect(figures.packetsDropped >= 30)
            print("starved encoder: \(stamps.count) frames in the file, \(figures.packetsDropped) lost while held, \(encoder.framesEncoded) encoded")
            #expect(await waitUntil { budget.streamCount(of: .daemon) == 0 && budget.streamCount(of: Self.owner) == 0 })
        }
    }

    /// With the default policy every fragment is synced (fdatasync, on the
    /// syncer's thread) once it reaches the file, and the file's end before the
    /// recording is told it ended; with none, nothing is. Counted against the
    /// fragments (`moof` boxes) in the file.
    @Test(.timeLimit(.minutes(4))) func everyFragmentIsSyncedOnceWrittenUnlessNoSyncIsAsked() async throws {
        try await withTemporaryDirectory { folder in
            let (_, encoder) = try await h264Encoder(keyframeInterval: 15)
            let synced = try Recording(folder + "/synced.mp4", on: encoder, logger: logger)
            let unsynced = try Recording(folder + "/unsynced.mp4", on: encoder, sync: .never, logger: logger)
            #expect(await waitUntil(timeout: .seconds(60)) { synced.recorder.figures.fileSyncs >= 3 })
            let stop = monotonicNanoseconds()
            synced.recorder.stop(before: stop)
            unsynced.recorder.stop(before: stop)
            #expect(await waitUntil(timeout: .seconds(60)) { synced.ending != nil && unsynced.ending != nil })
            synced.unsubscribe(encoder)
            unsynced.unsubscribe(encoder)
            encoder.stop()

            let figures = try #require(synced.figures)
            let fragments = try Self.boxes("moof", in: synced.path)
            #expect(fragments >= 3 && figures.fileSyncs + synced.recorder.syncsJoined == fragments,
                    "\(figures.fileSyncs) syncs (\(synced.recorder.syncsJoined) joined) for \(fragments) fragments")
            #expect(figures.longestSyncNanoseconds > 0)
            #expect(try #require(unsynced.figures).fileSyncs == 0 && (try Self.boxes("moof", in: unsynced.path)) >= 3)
            print("synced every fragment: \(figures.fileSyncs) syncs for \(fragments) fragments, the longest \(figures.longestSyncNanoseconds / 1000) µs")
            #expect(await waitUntil { budget.streamCount(of: .daemon) == 0 && budget.streamCount(of: Self.owner) == 0 })
        }
    }

    /// The top-level boxes of `type` in an MP4 file.
    static func boxes(_ type: String, in path: String) throws -> Int {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var (offset, count) = (0, 0)
        while offset + 8 <= bytes.count {
            var size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            if size == 1, offset + 16 <= bytes.count { size = bytes[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            if String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self) == type { count += 1 }
            guard size >= 8 else { break }
            offset += size
        }
        return count
    }

    /// maxRecordedDuration ends a recording on camerad's clock from its first
    /// frame, whether frames arrive or not: with its encoder held from its
    /// first packet on (no other comes, as on a machine that starves it), the
    /// recording ends at its limit all the same — successfully, its file
    /// playable — while the encoder is still held.
    @Test(.timeLimit(.minutes(4))) func theDurationLimitEndsARecordingOnTheClockWhenNoFrameComes() async throws {
        try await withTemporaryDirectory { folder in
            let registry = DeviceRegistry(timers: .testTimers, budget: budget, logger: logger)
            try VirtualCameraRoster(registry: registry).add()
            let recordings = Recordings(registry: registry, logger: logger)
            var start = RecordingRequest(uniqueID: "virtual-0")
            start.container = .mp4
            start.video.width = Self.width
            start.video.height = Self.height
            start.limits.maxDurationNanoseconds = 1_000_000_000
            let path = folder + "/held.mp4"
            let events = Mutex<[Recordings.Event]>([])
            let recording = try await recordings.start(start, descriptor: OwnedFD(adopting: open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)),
                                                       for: Self.owner) { event in events.withLock { $0.append(event) } }
            func finished() -> (ending: MovieRecorder.Ending, figures: MovieRecorder.Figures)? {
                events.withLock { $0.lazy.compactMap { if case .finished(let ending, let figures) = $0 { (ending, figures) } else { nil } }.first }
            }
            #expect(await waitUntil(timeout: .seconds(60)) { events.withLock { $0.contains { if case .started = $0 { true } else { false } } } })
            let hold = DispatchSemaphore(value: 0)
            #expect(recording.videoEncoder.runOnWorker { hold.wait() })
            let ended = await waitUntil(timeout: .seconds(60)) { finished() != nil }
            hold.signal()
            #expect(ended, "the limit ends the recording while its encoder is held")

            let done = try #require(finished())
            #expect(done.ending == .maximumDurationReached && done.ending.recordingSuccessfullyFinished, "\(done)")
            #expect(done.figures.durationNanoseconds <= 1_016_666_667)
            let frames = MovieProbe.frames(try await MovieProbe.videoStream(path))
            #expect(frames > 0 && frames == done.figures.packets, "the file plays what was written: \(frames) of \(done.figures.packets)")
            recording.stop()
            #expect(await waitUntil { budget.streamCount(of: .daemon) == 0 && budget.streamCount(of: Self.owner) == 0 })
        }
    }

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
    /// written, saying what it is and what to pass instead: not a regular
    /// file, read-only, open for appending (a 1.5 MB file, left as it was),
    /// or a file of the kernel's (procfs, sysfs, cgroupfs: whichever this
    /// machine has).
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
            let old = Data((0..<1_572_864).map { UInt8(truncatingIfNeeded: $0 * 7) })
            #expect(FileManager.default.createFile(atPath: folder + "/appended.mp4", contents: old))
            var kernels: [(OwnedFD, String)] = []
            let hierarchies = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/fs/cgroup")) ?? []
            let cgroup = hierarchies.map { "/sys/fs/cgroup/\($0)/cgroup.procs" }.first { FileManager.default.fileExists(atPath: $0) }
                ?? "/sys/fs/cgroup/cgroup.procs"
            // Opened for writing and never written: camerad refuses them first.
            for (path, name) in [("/proc/self/comm", "procfs"), ("/sys/kernel/profiling", "sysfs"), (cgroup, "cgroupfs")] {
                let fd = open(path, O_WRONLY | O_CLOEXEC)
                if fd >= 0 { kernels.append((OwnedFD(adopting: fd), "on \(name), the kernel's own filesystem")) }
            }
            #expect(kernels.contains { $0.1.contains("procfs") }, "procfs is everywhere")
            let cases: [(OwnedFD, String)] = kernels + [
                (OwnedFD(adopting: open(folder + "/appended.mp4", O_WRONLY | O_APPEND)), "open for appending (O_APPEND)"),
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
            #expect(FileManager.default.contents(atPath: folder + "/appended.mp4") == old, "the appended file is as it was")
        }
    }

    /// A descriptor of a file that already holds 1.5 MB, standing at its end:
    /// the movie goes after it, and when the disk fills (a 2 MiB tmpfs) the
    /// recording ends with diskFull and every byte the file held before is
    /// still there (the old recorder cut the file back to the movie's own byte
    /// count, 522,122 bytes of 1,572,864 left).
    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs to fill takes root"), .timeLimit(.minutes(4)))
    func aFullDiskNeverCutsWhatTheFileHeldBefore() async throws {
        try await withEncoderOnASmallDisk(size: "2m") { _, disk, encoder in
            let path = disk + "/kept.bin"
            let old = Data((0..<1_572_864).map { UInt8(truncatingIfNeeded: $0 * 13 + 5) })
            #expect(FileManager.default.createFile(atPath: path, contents: old))
            let descriptor = OwnedFD(adopting: open(path, O_WRONLY | O_CLOEXEC))
            #expect(lseek(descriptor.rawValue, 0, SEEK_END) == off_t(old.count))
            let recording = try Recording(path, descriptor: descriptor, on: encoder, logger: logger)
            #expect(await waitUntil(timeout: .seconds(90)) { recording.ending != nil }, "the disk fills")
            recording.unsubscribe(encoder)
            encoder.stop()
            #expect(recording.ending == .diskFull)
            let after = try #require(FileManager.default.contents(atPath: path))
            print("a full disk after 1.5 MB of old data: \(after.count) bytes, the movie's \(recording.figures?.bytes ?? 0)")
            #expect(after.count >= old.count + Int(recording.figures?.bytes ?? 0) && after.prefix(old.count) == old,
                    "the old bytes are all there, the movie after them")
        }
    }

    /// A user's recording, which camerad writes with root's privileges, stops
    /// at what the user may write: on an ext4 disk keeping half its blocks for
    /// root, it ends with diskFull while those blocks are still free, and the
    /// file plays. (A loop-mounted image: skipped where mounting one is refused.)
    @Test(.enabled(if: geteuid() == 0, "mounting an ext4 image takes root"), .timeLimit(.minutes(5)))
    func aUsersRecordingLeavesTheBlocksKeptForRoot() async throws {
        try await withTemporaryDirectory { folder in
            let (image, disk) = (folder + "/disk.img", folder + "/disk")
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: false)
            #expect(truncate(image, 4 << 20) == 0 || FileManager.default.createFile(atPath: image, contents: Data(count: 4 << 20)))
            let made = try await runProcess("/usr/sbin/mkfs.ext4", ["-q", "-F", "-m", "50", image])
            try #require(made.status == 0, "mkfs.ext4: \(made.standardError)")
            let mounted = try await runProcess("/bin/mount", ["-o", "loop", image, disk])
            guard mounted.status == 0 else {
                print("skipped: a loop mount is refused here (\(mounted.standardError))")
                return
            }
            defer { _ = Glibc.umount2(disk, Int32(MNT_DETACH)) }
            let (_, encoder) = try await h264Encoder(keyframeInterval: 15)
            let recording = try Recording(disk + "/movie.mp4", on: encoder, keepsReservedBlocks: true, logger: logger)
            #expect(await waitUntil(timeout: .seconds(90)) { recording.ending != nil }, "the user's share fills")
            recording.unsubscribe(encoder)
            encoder.stop()
            #expect(recording.ending == .diskFull)
            var status = statvfs()
            #expect(statvfs(disk, &status) == 0)
            let (free, available) = (Int64(status.f_bfree) * Int64(status.f_frsize), Int64(status.f_bavail) * Int64(status.f_frsize))
            print("a user's recording on a disk keeping half for root: \(recording.figures?.bytes ?? 0) bytes written, "
                  + "\(free >> 10) KiB free, \(available >> 10) KiB of it the user's")
            #expect(free >= 1 << 20, "root's blocks are still free")
            try FileManager.default.copyItem(atPath: disk + "/movie.mp4", toPath: folder + "/movie.mp4")
            #expect(MovieProbe.frames(try await MovieProbe.videoStream(folder + "/movie.mp4")) > 0, "the file plays")
        }
    }

    /// A disk that fills up mid-recording ends it with diskFull (not a
    /// success), and the file plays up to its last whole fragment. The disk is
    /// a 96 KiB tmpfs (mounting one takes root: skipped otherwise).
    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs to fill takes root"), .timeLimit(.minutes(4)))
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
    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs takes root"), .timeLimit(.minutes(4)))
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
            let (_, encoder) = try await h264Encoder(keyframeInterval: 15)
            try await body(folder, disk, encoder)
        }
    }
}

extension RecordingTests {
    /// A 320x240 H.264 encoder at 30 fps on a virtual camera (running 640x480 `camera`), and the camera's streamer.
    func h264Encoder(keyframeInterval: Int, camera pixelFormat: PixelFormat = .yuyv) async throws -> (DeviceStreamer, VideoEncoderNode) {
        var options = VirtualCamera.Options()
        options.formatIndex = try #require(VirtualCamera.pixelFormats.firstIndex(of: pixelFormat)) * VirtualCamera.sizes.count
        let streamer = DeviceStreamer(device: VirtualCamera(index: 0, options: options), timers: .testTimers, budget: budget, logger: logger)
        let settings = VideoEncoder.Settings(width: Self.width, height: Self.height, frameRate: 30, keyframeInterval: keyframeInterval)
        return (streamer, try await VideoEncoderNode(on: streamer, name: "virtual-0", format: .h264(settings), budget: budget, logger: logger))
    }
}

extension RecordingTests.Recording {
    /// Ends its subscription, as its owner does for a recorder that stopped itself (a limit).
    func unsubscribe(_ encoder: VideoEncoderNode) {
        encoder.node.unsubscribe(subscription)
    }
}
