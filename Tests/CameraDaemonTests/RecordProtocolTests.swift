import CameraIPC
import CameraMedia
import CameraProtocol
import CameraTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// Issue 35's Record call on a real camerad: the client opens the file and
/// passes its descriptor; camerad shares one encoder among the recordings of
/// a camera at the same settings; bad starts are refused before anything is
/// written; a killed daemon leaves a file that plays. Judged by ffprobe, and
/// by the frame stamps ffmpeg decodes back.
@Suite struct RecordProtocolTests {
    static let width: UInt32 = 320, height: UInt32 = 240

    /// One Record call: its responses as they come, and its end.
    final class RecordCall: Sendable {
        let call: BidirectionalCall<Camerad_V1_RecordRequest, Camerad_V1_RecordResponse>
        private final class Log: Sendable {
            let value = Mutex<(responses: [Camerad_V1_RecordResponse.OneOf_Kind], end: RPCError??)>(([], nil))
            func withLock<T>(_ body: (inout (responses: [Camerad_V1_RecordResponse.OneOf_Kind], end: RPCError??)) -> T) -> T {
                value.withLock { body(&$0) }
            }
        }
        private let log = Log()

        convenience init(_ client: RPCClient, _ start: Camerad_V1_StartRecording, descriptors: [OwnedFD]) throws {
            var request = Camerad_V1_RecordRequest()
            request.start = start
            try self.init(client, first: request, descriptors: descriptors)
        }

        init(_ client: RPCClient, first request: Camerad_V1_RecordRequest, descriptors: [OwnedFD]) throws {
            let log = self.log
            call = try client.bidirectional(CameraService.record) { (event: CallEvent<Camerad_V1_RecordResponse>) in
                switch event {
                case .message(let received):
                    if let kind = received.message.kind { log.withLock { $0.responses.append(kind) } }
                case .end(let error):
                    log.withLock { $0.end = .some(error) }
                }
            }
            try call.send(request, descriptors: descriptors)
        }

        var responses: [Camerad_V1_RecordResponse.OneOf_Kind] { log.withLock { $0.responses } }
        /// nil while the call runs; then .some(nil) for OK, else its error.
        var end: RPCError?? { log.withLock { $0.end } }

        var started: Camerad_V1_RecordingStarted? {
            responses.lazy.compactMap { if case .started(let started) = $0 { started } else { nil } }.first
        }
        var finished: Camerad_V1_RecordingFinished? {
            responses.lazy.compactMap { if case .finished(let finished) = $0 { finished } else { nil } }.first
        }
        var lastProgress: Camerad_V1_RecordingFigures? {
            responses.reversed().lazy.compactMap { if case .progress(let figures) = $0 { figures } else { nil } }.first
        }

        func stop() throws {
            var request = Camerad_V1_RecordRequest()
            request.stop = Camerad_V1_StopRecording()
            try call.send(request)
        }

        func waitForEnd() async -> Bool { await waitUntil(timeout: .seconds(60)) { end != nil } }
    }

    static func start(_ camera: String = "virtual-0", microphone: String = "", fileType: Camerad_V1_FileType = .mp4,
                      width: UInt32 = width, height: UInt32 = height, fragmentSeconds: Double = 1) -> Camerad_V1_StartRecording {
        var start = Camerad_V1_StartRecording()
        start.uniqueID = camera
        start.audioUniqueID = microphone
        start.fileType = fileType
        start.video.width = width
        start.video.height = height
        start.movieFragmentIntervalNs = Int64(fragmentSeconds * 1e9)
        return start
    }

    static func file(_ path: String, _ flags: Int32 = O_WRONLY | O_CREAT | O_TRUNC) throws -> OwnedFD {
        let fd = open(path, flags | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw DaemonFailure("open \(path): \(String(cString: strerror(errno)))") }
        return OwnedFD(adopting: fd)
    }

    static func size(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64) ?? -1
    }

    /// Whether the file's first video packet is a keyframe, by ffprobe.
    static func startsAtAKeyframe(_ path: String) async throws -> Bool {
        let probe = try await runProcess("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                                                               "-read_intervals", "%+#1", "-of", "csv=p=0", path])
        return probe.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("K")
    }

    /// Three recordings of one camera at one size share an encoder (camerad
    /// counts them in RecordingStarted), a fourth at another size has its own;
    /// every file starts at a keyframe, plays, and holds every frame written,
    /// stamps in order.
    @Test(.timeLimit(.minutes(4))) func recordingsOfOneCameraAtOneSizeShareOneEncoder() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon { daemon in
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                var calls: [(RecordCall, String)] = []
                for index in 0..<3 {
                    let path = folder + "/shared-\(index).mp4"
                    let call = try RecordCall(client, Self.start(), descriptors: [try Self.file(path)])
                    calls.append((call, path))
                    #expect(await waitUntil(timeout: .seconds(60)) { call.started != nil || call.end != nil }, "recording \(index) starts")
                    #expect(call.started?.encoderRecordings == UInt32(index + 1), "\(String(describing: call.started))")
                }
                let other = folder + "/other.mp4"
                let otherCall = try RecordCall(client, Self.start(width: 160, height: 120), descriptors: [try Self.file(other)])
                calls.append((otherCall, other))
                #expect(await waitUntil(timeout: .seconds(60)) { otherCall.started != nil })
                #expect(otherCall.started?.encoderRecordings == 1 && otherCall.started?.width == 160)
                #expect(await waitUntil(timeout: .seconds(60)) { calls.allSatisfy { ($0.0.lastProgress?.durationNs ?? 0) >= 1_000_000_000 } })
                for (call, _) in calls { try call.stop() }
                for (call, path) in calls {
                    #expect(await call.waitForEnd())
                    let end = try #require(call.end)
                    #expect(end == nil, "\(String(describing: end))")
                    let finished = try #require(call.finished)
                    #expect(finished.ending == .stopped && finished.successfullyFinished && finished.message.isEmpty)
                    #expect(try await Self.startsAtAKeyframe(path), "\(path) starts at a keyframe")
                    let stream = try await MovieProbe.videoStream(path)
                    let frames = MovieProbe.frames(stream)
                    #expect(UInt64(frames) == finished.figures.frames, "\(path): \(frames) frames of \(finished.figures.frames) written")
                    #expect(Self.size(path) == finished.figures.bytes)
                    if path != other {
                        let stamps = try await MovieProbe.stamps(path, width: Int(Self.width), height: Int(Self.height), in: folder)
                            .compactMap { $0?.sequence }
                        #expect(stamps.count == frames && zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 }, "\(stamps)")
                    }
                }
                // The encoders stopped with their last recording: nothing streams the camera.
                #expect(await waitUntil(timeout: .seconds(30)) { daemon.logText.contains("virtual-0: capture stopped") })
            }
        }
    }

    /// Pre-roll (beyond AVFoundation): a recording that joins running
    /// encoders asking 2 s of pre-roll starts at a keyframe at least 2 s before
    /// it asked (RecordingStarted says how far), on frames the other recording
    /// has too, and goes on from the recent packets to the live ones with no
    /// frame lost or repeated; its sound starts with its picture. More than
    /// 10 s is refused.
    @Test(.timeLimit(.minutes(4))) func aPreRollStartsTheFileEarlierFromTheSharedEncodersRecentPackets() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon(arguments: ["--virtual-microphones", "1"]) { daemon in
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                var tooLong = Self.start()
                tooLong.preRollNs = 11_000_000_000
                let refused = try RecordCall(client, tooLong, descriptors: [try Self.file(folder + "/refused.mp4")])
                #expect(await refused.waitForEnd())
                let error = try #require(refused.end ?? nil)
                #expect(error.reason == .invalidArgument && error.message.contains("pre_roll_ns 11000000000 is out of range") && error.message.contains("10 s at most"), "\(error.message)")

                let (first, second) = (folder + "/first.mp4", folder + "/second.mp4")
                // A keyframe every half second of frames encoded: under the full suite's load the encoder's worker
                // (SCHED_IDLE) is starved and drops most frames, and at the usual two seconds of frames between them
                // its keyframes could be too sparse for a pre-roll (none in the last ten seconds).
                var running = Self.start(microphone: "virtual-microphone-0")
                running.video.maxKeyFrameInterval = 15
                let runningCall = try RecordCall(client, running, descriptors: [try Self.file(first)])
                #expect(await waitUntil(timeout: .seconds(60)) { (runningCall.lastProgress?.durationNs ?? 0) >= 3_500_000_000 || runningCall.end != nil })
                var start = running
                start.preRollNs = 2_000_000_000
                let askedAt = monotonicNanoseconds()
                let joining = try RecordCall(client, start, descriptors: [try Self.file(second)])
                #expect(await waitUntil(timeout: .seconds(60)) { joining.started != nil || joining.end != nil })
                let started = try #require(joining.started, "\(String(describing: joining.end))")
                #expect(started.preRollNs >= 2_000_000_000 && started.startTimeNs <= askedAt - 1_000_000_000
                        && started.encoderRecordings == 2, "\(started)")
                #expect(await waitUntil(timeout: .seconds(60)) { (joining.lastProgress?.durationNs ?? 0) >= started.preRollNs + 1_000_000_000 })
                for call in [joining, runningCall] { try call.stop() }
                for call in [joining, runningCall] { #expect(await call.waitForEnd()) }
                let finished = try #require(joining.finished)
                #expect(finished.ending == .stopped, "\(finished)")

                #expect(try await Self.startsAtAKeyframe(second))
                // The sound's recent packets too: it starts with the picture (AAC's priming before 0), not at the join.
                let streams = try await MovieProbe.streams(second)
                let soundStart = try #require(Double(streams.last?["start_time"] as? String ?? ""), "\(streams)")
                #expect(streams.map { $0["codec_name"] as? String } == ["h264", "aac"] && soundStart < 0.1, "\(streams)")
                let ours = try await MovieProbe.stamps(second, width: Int(Self.width), height: Int(Self.height), in: folder).compactMap { $0 }
                let theirs = Set(try await MovieProbe.stamps(first, width: Int(Self.width), height: Int(Self.height), in: folder)
                    .compactMap { $0?.sequence })
                #expect(UInt64(ours.count) == finished.figures.frames, "\(ours.count) frames of \(finished.figures.frames) written")
                let sequences = ours.map(\.sequence)
                #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "in order, none repeated: \(sequences)")
                // Every frame from the file's first to its last is in it or counted lost (those lost behind the
                // encoder before the join, in the pre-roll, too).
                if let firstSequence = sequences.first, let lastSequence = sequences.last {
                    let span = UInt64(lastSequence - firstSequence) + 1
                    // Frames after its last that never came before the stop count lost too (its figure may be higher).
                    #expect(span <= UInt64(sequences.count) + finished.figures.framesDropped,
                            "\(finished.figures.framesDropped) counted lost: \(sequences)")
                }
                let firstFrame = try #require(ours.first)
                // The file's time 0 is its first frame's capture time, a frame the recording under way wrote too.
                #expect(abs(Int64(firstFrame.timestampMicroseconds) * 1000 - started.startTimeNs) < 1000 && theirs.contains(firstFrame.sequence),
                        "\(firstFrame) against \(started.startTimeNs)")
            }
        }
    }

    /// A camera running an MJPG mode is stored as it comes (`codec` MJPEG: no
    /// encoder): two recordings, a MOV and an MP4, share its frames; each file
    /// is MJPEG at the camera's size, every frame a keyframe, every frame
    /// camerad wrote there with its stamp, in order. Asking another size or a
    /// bit rate of it is refused, saying what it is.
    @Test(.timeLimit(.minutes(4))) func aCameraRunningMJPGIsStoredAsItComes() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon { daemon in
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                var add = Camerad_V1_AddVirtualCameraRequest()
                add.index = 5
                add.fourcc = PixelFormat.mjpeg.fourcc
                add.width = Self.width
                add.height = Self.height
                _ = try await client.unary(CameraService.addVirtualCamera, add)
                func start(_ fileType: Camerad_V1_FileType, width: UInt32 = 0, bitRate: UInt32 = 0) -> Camerad_V1_StartRecording {
                    var start = Self.start("virtual-5", fileType: fileType, width: width, height: width == 0 ? 0 : Self.height)
                    start.video.codec = .mjpeg
                    start.video.averageBitRate = bitRate
                    return start
                }
                for (what, asked, words) in [("another size", start(.mp4, width: 160), "ask that size and rate"),
                                             ("a bit rate", start(.mp4, bitRate: 1_000_000), "leave the bit rate")] {
                    let call = try RecordCall(client, asked, descriptors: [try Self.file(folder + "/refused.mp4")])
                    #expect(await call.waitForEnd(), "\(what)")
                    let error = try #require(call.end ?? nil, "\(what) is refused")
                    #expect(error.reason == .invalidArgument && error.message.contains(words), "\(what): \(error.message)")
                }
                var calls: [(RecordCall, String)] = []
                for (index, fileType) in [Camerad_V1_FileType.mov, .mp4].enumerated() {
                    let path = folder + "/mjpeg-\(index).\(fileType == .mov ? "mov" : "mp4")"
                    let call = try RecordCall(client, start(fileType), descriptors: [try Self.file(path)])
                    calls.append((call, path))
                    #expect(await waitUntil(timeout: .seconds(60)) { call.started != nil || call.end != nil }, "recording \(index) starts")
                    let started = try #require(call.started, "\(String(describing: call.end))")
                    #expect(started.encoderRecordings == UInt32(index + 1) && started.width == Self.width && started.height == Self.height,
                            "\(started)")
                }
                #expect(await waitUntil(timeout: .seconds(60)) { calls.allSatisfy { ($0.0.lastProgress?.durationNs ?? 0) >= 1_000_000_000 } })
                for (call, _) in calls { try call.stop() }
                for (call, path) in calls {
                    #expect(await call.waitForEnd())
                    let finished = try #require(call.finished)
                    #expect(finished.ending == .stopped && finished.successfullyFinished, "\(finished)")
                    let stream = try await MovieProbe.videoStream(path)
                    #expect(stream["codec_name"] as? String == "mjpeg" && stream["width"] as? Int == Int(Self.width), "\(stream)")
                    let frames = MovieProbe.frames(stream)
                    #expect(frames > 0 && UInt64(frames) == finished.figures.frames, "\(path): \(frames) frames of \(finished.figures.frames) written")
                    let stamps = try await MovieProbe.stamps(path, width: Int(Self.width), height: Int(Self.height), in: folder)
                    let sequences = stamps.compactMap { $0?.sequence }
                    #expect(sequences.count == frames && zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "\(path): \(sequences)")
                }

                // The camera leaves its mode under a recording — for MJPG of another size, then for YUYV: its stream
                // ends (MJPEG passes only unchanged), and each file there, playable, saying why.
                for (index, format) in ["MJPG:640x480", "YUYV:320x240"].enumerated() {
                    let path = folder + "/interrupted-\(index).mov"
                    let call = try RecordCall(client, start(.mov), descriptors: [try Self.file(path)])
                    #expect(await waitUntil(timeout: .seconds(60)) { (call.lastProgress?.frames ?? 0) >= 5 || call.end != nil })
                    let set = try await camctl(["set", "virtual-5", "--format", format], socket: daemon.socketPath)
                    #expect(set.status == 0, "\(set.standardError)")
                    #expect(await call.waitForEnd())
                    let finished = try #require(call.finished)
                    #expect(finished.ending == .sessionWasInterrupted && !finished.successfullyFinished
                            && finished.message.contains("now runs \(format.prefix(4))"), "\(format): \(finished)")
                    let frames = MovieProbe.frames(try await MovieProbe.videoStream(path))
                    #expect(frames > 0 && UInt64(frames) == finished.figures.frames, "\(format): \(frames) frames of \(finished.figures.frames) written")
                }
            }
        }
    }

    /// The A/V sync test, with a clapperboard: a virtual camera and a virtual
    /// microphone added with sync marks (`camctl virtual add --sync-marks`)
    /// flash and click at every whole second of CLOCK_MONOTONIC. In the file —
    /// the frames timed by ffprobe, the sound placed by ffmpeg as a player
    /// places it — every flash has its click less than one frame after it (the
    /// flash frame's exposure holds the instant the click starts at). With a
    /// microphone whose clock runs 2000 ppm fast (`--drift-ppm`: 2 ms a second,
    /// 10 ms by the fifth click at the nominal rate), its sound is resampled
    /// onto the picture's clock: every click within 1.5 ms of its place.
    @Test(.timeLimit(.minutes(4)), arguments: [0, 2_000])
    func flashesAndClicksOfOneInstantAreLessThanAFrameApartInTheFile(driftPPM: Int) async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon(virtualCameras: 0) { daemon in
                for device in [["--size", "\(Self.width)x\(Self.height)"], ["--audio", "--drift-ppm", "\(driftPPM)"]] {
                    let added = try await camctl(["virtual", "add", "--index", "5", "--sync-marks"] + device, socket: daemon.socketPath)
                    #expect(added.status == 0, "\(added.standardError)")
                }
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                let path = folder + "/clapperboard.mp4"
                let call = try RecordCall(client, Self.start("virtual-5", microphone: "virtual-microphone-5"), descriptors: [try Self.file(path)])
                // Five seconds of frames written, not of time: a starved encoder drops frames, flashes among them.
                #expect(await waitUntil(timeout: .seconds(150)) { (call.lastProgress?.frames ?? 0) >= 150 || call.end != nil })
                try call.stop()
                #expect(await call.waitForEnd())
                let finished = try #require(call.finished)
                #expect(finished.ending == .stopped, "\(finished)")

                let frames = try await MovieProbe.lumaFrames(path, width: Int(Self.width), height: Int(Self.height), in: folder)
                let times = try await MovieProbe.frameTimes(path)
                #expect(times.count == frames.count && UInt64(frames.count) == finished.figures.frames)
                // Each flash frame's time in the file, and its capture time by its stamp (the bands stay as they are).
                let flashFrames = zip(times, frames).compactMap { time, luma -> (time: Double, captured: UInt64)? in
                    luma.withUnsafeBytes { luma in
                        let (width, height) = (Int(Self.width), Int(Self.height))
                        guard SyncMarks.isFlash(luma: luma, width: width, height: height, bytesPerRow: width) else { return nil }
                        let stamp = FrameStampDecoder.decode(luma: luma, width: width, height: height, bytesPerRow: width).stamp
                        return (time, stamp?.timestampMicroseconds ?? 0)
                    }
                }
                let flashes = flashFrames.map(\.time)
                let streams = try await MovieProbe.streams(path)
                let audioStart = try #require(Double(streams.last?["start_time"] as? String ?? ""), "\(streams)")
                let samples = try await MovieProbe.monoAudio(path, rate: 48_000, in: folder, placedByTimestamps: true)
                let clicks = SyncMarks.clickOnsets(samples, sampleRate: 48_000).map { audioStart + Double($0) / 48_000 }
                let frameDuration = 1.0 / 30
                // A flash lost with its frame (a starved encoder) or a click with its period leaves the other alone.
                let pairs = flashFrames.compactMap { flash in
                    clicks.min { abs($0 - flash.time) < abs($1 - flash.time) }.map { (flash: flash, offset: $0 - flash.time) }
                }.filter { abs($0.offset) < 0.5 }
                let details = "flashes at \(flashes), clicks at \(clicks); \(finished.figures)"
                // Where the click should be: at the whole second after the flash frame's capture.
                func expected(_ captured: UInt64) -> Double { Double((captured + 999_999) / 1_000_000 * 1_000_000 - captured) / 1e6 }
                print("clapperboard at \(driftPPM) ppm: \(flashes.count) flashes, \(clicks.count) clicks; click after flash (ms): "
                      + pairs.map { String(format: "%.3f (%.3f expected)", $0.offset * 1000, expected($0.flash.captured) * 1000) }
                        .joined(separator: ", "))
                #expect(pairs.count >= 2, "a flash and its click twice at least: \(details)")
                #expect(zip(flashes, flashes.dropFirst()).allSatisfy { $1 - $0 > 0.5 }, "one frame flashes a second: \(details)")
                // Where the clocks put a click: within 2 samples — or, resampled, the millisecond off the
                // resampling starts to follow the clock at, and the few frames it stays off by.
                let tolerance = driftPPM == 0 ? 2.0 / 48_000 : 0.0015
                for (flash, offset) in pairs {
                    // Within a frame, as the issue asks; a millisecond either side for AAC's smearing of the click.
                    #expect(offset > -0.001 - tolerance && offset < frameDuration + 0.001 + tolerance, "the click at \(flash.time) s is \(offset * 1000) ms after its flash: \(details)")
                    #expect(abs(offset - expected(flash.captured)) <= tolerance,
                            "the click at \(flash.time) s is \(offset * 1000) ms after its flash, \(expected(flash.captured) * 1000) ms expected: \(details)")
                }
            }
        }
    }

    /// A start camerad cannot record is refused before anything is written,
    /// with a code and a message that says what to do; the file stays empty.
    @Test func startsThatCannotRecordAreRefusedBeforeAnythingIsWritten() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon(arguments: ["--virtual-microphones", "1"]) { daemon in
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                let path = folder + "/refused.mp4"
                let writable = try Self.file(path)
                var pipeEnds: [Int32] = [0, 0]
                #expect(pipe(&pipeEnds) == 0)
                let (pipeRead, pipeWrite) = (OwnedFD(adopting: pipeEnds[0]), OwnedFD(adopting: pipeEnds[1]))
                _ = pipeRead
                var unlimited = Self.start()
                unlimited.minFreeDiskSpace = Int64.max / 2
                var negative = Self.start()
                negative.maxDurationNs = -1
                var secondDescriptor = Self.start()
                secondDescriptor.fdIndex = 1
                var mjpegOfYUYV = Self.start(width: 0, height: 0)
                mjpegOfYUYV.video.codec = .mjpeg
                let cases: [(String, Camerad_V1_StartRecording, [OwnedFD], Camerad_V1_ErrorReason, String)] = [
                    ("no descriptor", Self.start(), [], .invalidArgument, "send its descriptor"),
                    ("descriptor 1 of 1", secondDescriptor, [writable], .invalidArgument, "send its descriptor"),
                    ("a pipe", Self.start(), [pipeWrite], .invalidArgument, "a pipe"),
                    ("a directory", Self.start(), [try Self.file(folder, O_RDONLY | O_DIRECTORY)], .invalidArgument, "a directory"),
                    ("read-only", Self.start(), [try Self.file(path, O_RDONLY)], .invalidArgument, "read-only"),
                    ("open for appending", Self.start(), [try Self.file(path, O_WRONLY | O_APPEND)], .invalidArgument, "(O_APPEND)"),
                    ("a file of procfs", Self.start(), [OwnedFD(adopting: open("/proc/self/comm", O_WRONLY | O_CLOEXEC))], .invalidArgument, "procfs"),
                    ("no such camera", Self.start("virtual-9"), [writable], .deviceNotFound, "virtual-9"),
                    ("a microphone as the camera", Self.start("virtual-microphone-0"), [writable], .invalidArgument, "is a microphone"),
                    ("a camera as the microphone", Self.start(microphone: "virtual-0"), [writable], .invalidArgument, "is a camera"),
                    ("an odd size", Self.start(width: 321, height: 240), [writable], .invalidArgument, "even sizes"),
                    ("half a size", Self.start(width: 320, height: 0), [writable], .invalidArgument, "both width and height"),
                    ("a negative limit", negative, [writable], .invalidArgument, "max_duration_ns -1 is out of range; use 0 to"),
                    ("more free space than there is", unlimited, [writable], .resourceExhausted, "minFreeDiskSpaceLimit"),
                    ("MJPEG of a camera running YUYV", mjpegOfYUYV, [writable], .unsupportedFormat, "set one (camctl set virtual-0 --format MJPG:640x480)"),
                ]
                for (what, start, descriptors, reason, words) in cases {
                    let call = try RecordCall(client, start, descriptors: descriptors)
                    #expect(await call.waitForEnd(), "\(what)")
                    let error = try #require(call.end ?? nil, "\(what) is refused")
                    #expect(error.reason == reason && error.message.contains(words), "\(what): \(error.reason) \(error.message)")
                    #expect(call.responses.isEmpty, "\(what): nothing started")
                }
                // A first request that does not start.
                var stop = Camerad_V1_RecordRequest()
                stop.stop = Camerad_V1_StopRecording()
                let stopFirst = try RecordCall(client, first: stop, descriptors: [])
                #expect(await stopFirst.waitForEnd())
                let status = try #require(stopFirst.end ?? nil)
                #expect(status.reason == .invalidArgument && status.message.contains("must start it"), "\(status)")
                #expect(Self.size(path) == 0, "nothing was written")
                try await expectServes(daemon, devices: 2)
            }
        }
    }

    /// Limits end a recording successfully (AVFoundation's
    /// recordingSuccessfullyFinished), the camera's going with
    /// deviceWasDisconnected and not successfully; every file plays, holding
    /// every frame camerad says it wrote.
    @Test(.timeLimit(.minutes(4))) func limitsEndRecordingsSuccessfullyAndACameraThatGoesDoesNot() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon(virtualCameras: 2) { daemon in
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                var sized = Self.start()
                sized.maxFileSize = 40_000
                var timed = Self.start()
                timed.maxDurationNs = 1_000_000_000
                let cases: [(String, Camerad_V1_StartRecording)] = [("sized", sized), ("timed", timed), ("unplugged", Self.start("virtual-1"))]
                var calls: [(String, RecordCall)] = []
                for (name, start) in cases {
                    calls.append((name, try RecordCall(client, start, descriptors: [try Self.file("\(folder)/\(name).mp4")])))
                }
                let unplugged = calls[2].1
                #expect(await waitUntil(timeout: .seconds(60)) { (unplugged.lastProgress?.durationNs ?? 0) >= 1_000_000_000 })
                let admin = try RawProtocolClient(path: daemon.socketPath)
                try await admin.hello()
                var remove = Camerad_V1_RemoveVirtualCameraRequest()
                remove.uniqueID = "virtual-1"
                let (_, removed) = try await admin.call(CameraService.removeVirtualCamera.name, request: try remove.serializedBytes())
                #expect(removed.code == .ok)
                for (name, call) in calls {
                    #expect(await call.waitForEnd(), "\(name) ends by itself")
                    let finished = try #require(call.finished, "\(name)")
                    let expected: (Camerad_V1_RecordingEnding, Bool) = switch name {
                    case "sized": (.maximumFileSizeReached, true)
                    case "timed": (.maximumDurationReached, true)
                    default: (.deviceWasDisconnected, false)
                    }
                    #expect(finished.ending == expected.0 && finished.successfullyFinished == expected.1, "\(name): \(finished)")
                    #expect(!finished.message.isEmpty, "\(name) says why")
                    let path = "\(folder)/\(name).mp4"
                    let frames = MovieProbe.frames(try await MovieProbe.videoStream(path))
                    #expect(frames > 0 && UInt64(frames) == finished.figures.frames, "\(name): \(frames) frames of \(finished.figures.frames)")
                    switch name {
                    case "sized":
                        // Within a packet of the limit: the one that would take it past is not written (a frame of
                        // this picture is well under 32 KB), and the boxes that close the file add a few kilobytes.
                        let bytes = finished.figures.bytes
                        #expect(bytes > 40_000 - 32_768 && bytes <= 40_000 + 8_192 && Self.size(path) == bytes, "\(finished.figures)")
                    case "timed":
                        // Within half a frame of the limit, never more: shorter only by frames lost at its end.
                        let figures = finished.figures
                        #expect(figures.durationNs <= 1_016_666_667
                                && figures.durationNs + Int64(figures.framesDropped) * 33_333_334 >= 983_333_333, "\(figures)")
                    default: break
                    }
                }
            }
        }
    }

    /// NextFile hands a recording over to another file at a keyframe asked
    /// for at once: the first file ends just before it, the second starts at
    /// it — every frame stamp in one file or the other, none lost between.
    @Test(.timeLimit(.minutes(5))) func aRecordingHandedOverToTheNextFileLosesNoFrame() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon { daemon in
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                var start = Self.start(fragmentSeconds: 0.5)
                start.video.maxKeyFrameInterval = 300
                let (first, second) = (folder + "/first.mp4", folder + "/second.mp4")
                let call = try RecordCall(client, start, descriptors: [try Self.file(first)])
                // Frames written, not time: beside the full suite's encoders this one may write few a second.
                #expect(await waitUntil(timeout: .seconds(150)) { (call.lastProgress?.frames ?? 0) >= 30 })
                var next = Camerad_V1_RecordRequest()
                next.nextFile = Camerad_V1_NextFile()
                try call.call.send(next, descriptors: [try Self.file(second)])
                #expect(await waitUntil(timeout: .seconds(60)) {
                    call.responses.contains { if case .handedOver = $0 { true } else { false } } || call.end != nil
                })
                // Progress after the hand-over is the second file's.
                #expect(await waitUntil(timeout: .seconds(60)) {
                    let after = call.responses.drop { if case .handedOver = $0 { false } else { true } }
                    return after.contains { if case .progress(let figures) = $0 { figures.frames >= 30 } else { false } } || call.end != nil
                })
                try call.stop()
                #expect(await call.waitForEnd())
                #expect(call.end == .some(nil), "\(String(describing: call.end))")
                let handedOver = try #require(call.responses.lazy.compactMap { if case .handedOver(let h) = $0 { h } else { nil } }.first)
                let finished = try #require(call.finished)
                // The keyframe was asked for at once: the first file did not wait for the scheduled one, 300 frames
                // encoded after its first — when the encoder kept up. Starved (beside the full suite and a build it
                // got 423 of 965 frames in 32 s), its file is that far behind the request: frames are no measure.
                if handedOver.figures.framesDropped == 0 {
                    #expect(handedOver.figures.frames < 300, "\(handedOver)")
                }
                var stamps: [[UInt32]] = []
                for (path, written) in [(first, handedOver.figures.frames), (second, finished.figures.frames)] {
                    #expect(try await Self.startsAtAKeyframe(path))
                    let sequences = try await MovieProbe.stamps(path, width: Int(Self.width), height: Int(Self.height), in: folder)
                        .compactMap { $0?.sequence }
                    #expect(UInt64(sequences.count) == written, "\(path): \(sequences.count) frames of \(written)")
                    stamps.append(sequences)
                }
                let all = stamps.flatMap { $0 }
                let dropped = handedOver.figures.framesDropped + finished.figures.framesDropped
                #expect(zip(all, all.dropFirst()).allSatisfy { $0 < $1 }, "in order, none repeated")
                if dropped == 0 {
                    #expect(zip(all, all.dropFirst()).allSatisfy { $1 == $0 + 1 },
                            "no frame lost between the files: \(stamps[0].suffix(3)) | \(stamps[1].prefix(3))")
                } else if let low = all.first, let high = all.last {
                    // Under load the encoder's worker may be starved: frames missing only where drops were reported.
                    #expect(UInt64(all.count) + dropped >= UInt64(high - low + 1), "\(all.count) frames, \(dropped) dropped, span \(high - low + 1)")
                }
            }
        }
    }

    /// SIGKILL of camerad mid-recording: the file ffprobe reads holds every
    /// fragment (an MP4's) or cluster (a Matroska file's) finished before
    /// (half a second each: a keyframe every 15 frames), every frame's stamp in order.
    @Test(.timeLimit(.minutes(5)), arguments: [Camerad_V1_FileType.mp4, .matroska])
    func aKilledDaemonLeavesAFileThatPlaysUpToItsLastFragment(fileType: Camerad_V1_FileType) async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon { daemon in
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                var start = Self.start(fileType: fileType, fragmentSeconds: 0.5)
                start.video.maxKeyFrameInterval = 15
                let path = folder + (fileType == .matroska ? "/killed.mkv" : "/killed.mp4")
                let call = try RecordCall(client, start, descriptors: [try Self.file(path)])
                // Frames written, not time: beside the full suite's encoders this one may write few a second.
                #expect(await waitUntil(timeout: .seconds(150)) { (call.lastProgress?.frames ?? 0) >= 90 })
                let written = try #require(call.lastProgress)
                _ = await daemon.stop(signal: SIGKILL)
                let stream = try await MovieProbe.videoStream(path)
                let frames = MovieProbe.frames(stream)
                print("killed (\(fileType)): camerad had written \(written.frames) frames when last asked, \(written.bytes) bytes; the file plays \(frames) frames")
                // What was written when camerad last said, less the fragment under way then (15 frames) and the one
                // before it, whose keyframe may have come late: all but the last fragment.
                #expect(UInt64(frames) + 30 >= written.frames, "\(frames) frames play of \(written.frames) written")
                let stamps = try await MovieProbe.stamps(path, width: Int(Self.width), height: Int(Self.height), in: folder)
                    .compactMap { $0?.sequence }
                #expect(stamps.count == frames && zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
            }
        }
    }

    // MARK: - Hostile clients

    /// A descriptor that blocks: a file whose server hangs (a FUSE file here,
    /// as a network file would). Hanging when camerad checks it, the start is
    /// refused with TIMED_OUT at the check's deadline; hanging under a
    /// recording, only that recording waits — another client records on — and
    /// once the file fails (its connection aborted) the recording ends with an
    /// error. camerad serves on throughout.
    @Test(.enabled(if: HangingFile.isAvailable, "serving a FUSE file takes root and /dev/fuse"), .timeLimit(.minutes(4)))
    func aFileWhoseServerHangsHoldsUpNothingButItsOwnRecording() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon { daemon in
                // Closed before the daemon is stopped: a thread waiting on a FUSE request keeps its process from
                // ending until the connection is aborted (the kernel waits out a request the server has).
                let atTheCheck = try HangingFile(at: folder + "/hangs-at-the-check")
                defer { atTheCheck.close() }
                let underTheRecording = try HangingFile(at: folder + "/hangs-under-the-recording")
                defer { underTheRecording.close() }
                let (client, loop) = try await connectClient(daemon)
                defer { client.close(); loop.stop() }
                let (other, otherLoop) = try await connectClient(daemon, name: "other")
                defer { other.close(); otherLoop.stop() }
                let path = folder + "/other.mp4"
                let bystander = try RecordCall(other, Self.start(), descriptors: [try Self.file(path)])

                let checked = try Self.file(atTheCheck.path, O_WRONLY)
                atTheCheck.hang()
                let refused = try RecordCall(client, Self.start(), descriptors: [checked])
                #expect(await refused.waitForEnd())
                let error = try #require(refused.end ?? nil, "a start whose file never answers is refused")
                #expect(error.reason == .timedOut && error.message.contains("did not answer"), "\(error.reason): \(error.message)")
                #expect(refused.responses.isEmpty)

                let hung = try RecordCall(client, Self.start(), descriptors: [try Self.file(underTheRecording.path, O_WRONLY)])
                #expect(await waitUntil(timeout: .seconds(60)) { (hung.lastProgress?.frames ?? 0) >= 15 || hung.end != nil }, "it records")
                underTheRecording.hang()
                let before = bystander.lastProgress?.frames ?? 0
                #expect(await waitUntil(timeout: .seconds(60)) { (bystander.lastProgress?.frames ?? 0) >= before + 60 },
                        "another client records on past a file that hangs")
                try hung.stop()
                // Aborted, the file fails: the recording that waited on it ends, not successfully.
                underTheRecording.close()
                #expect(await hung.waitForEnd())
                let ended = try #require(hung.finished, "\(String(describing: hung.end))")
                #expect(!ended.successfullyFinished, "\(ended)")
                print("hostile: a file that hangs under its recording: \(ended.ending), \(ended.message)")

                try bystander.stop()
                #expect(await bystander.waitForEnd())
                let finished = try #require(bystander.finished)
                let frames = MovieProbe.frames(try await MovieProbe.videoStream(path))
                #expect(finished.ending == .stopped && UInt64(frames) == finished.figures.frames, "\(finished)")
                try await expectServes(daemon)
            }
        }
    }

    /// Forty recordings on one connection: each starts, or is refused with a
    /// reason (a connection's streams, or its share of an encoder's buffers), and
    /// another client still records; a file truncated under its recorder ends
    /// nothing but itself.
    @Test(.timeLimit(.minutes(4))) func manyRecordingsOnOneConnectionAndAFileTruncatedUnderItsRecorderHarmNobody() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon { daemon in
                let (greedy, loop) = try await connectClient(daemon, name: "greedy")
                defer { greedy.close(); loop.stop() }
                var calls: [RecordCall] = []
                for index in 0..<40 {
                    calls.append(try RecordCall(greedy, Self.start(), descriptors: [try Self.file("\(folder)/greedy-\(index).mp4")]))
                }
                #expect(await waitUntil(timeout: .seconds(60)) { calls.allSatisfy { $0.started != nil || $0.end != nil } })
                let refusals = calls.compactMap { $0.end ?? nil }
                #expect(refusals.allSatisfy { $0.reason == .resourceExhausted && $0.message.contains("connection") },
                        "\(refusals.map(\.message))")
                let started = calls.filter { $0.started != nil }.count
                print("hostile: 40 recordings on one connection: \(started) started, \(refusals.count) refused: \(refusals.first?.message ?? "-")")
                #expect(started > 0 && started + refusals.count == 40)
                // The recordings' bound, or (on a loaded machine, the checks still under way) the file checks' before it.
                #expect(refusals.contains { $0.message.contains("this connection uses 8 recordings, the most one may (8)")
                    || $0.message.contains("this connection uses 8 movie-file checks under way, the most one may (8)") }, "a connection's bound")

                let (other, otherLoop) = try await connectClient(daemon, name: "other")
                defer { other.close(); otherLoop.stop() }
                let truncatedPath = folder + "/truncated.mp4"
                let truncated = try RecordCall(other, Self.start(), descriptors: [try Self.file(truncatedPath)])
                let path = folder + "/other.mp4"
                let call = try RecordCall(other, Self.start(), descriptors: [try Self.file(path)])
                #expect(await waitUntil(timeout: .seconds(60)) { (truncated.lastProgress?.frames ?? 0) >= 15 && call.started != nil })
                #expect(Glibc.truncate(truncatedPath, 0) == 0)
                #expect(await waitUntil(timeout: .seconds(60)) { (call.lastProgress?.durationNs ?? 0) >= 1_500_000_000 })
                for recording in calls + [truncated, call] where recording.end == nil { try recording.stop() }
                for recording in calls + [truncated, call] { #expect(await recording.waitForEnd()) }
                #expect(truncated.finished != nil, "the truncated file's recording ends, saying how")
                let finished = try #require(call.finished)
                #expect(finished.ending == .stopped)
                let frames = MovieProbe.frames(try await MovieProbe.videoStream(path))
                #expect(UInt64(frames) == finished.figures.frames && frames > 0)
                try await expectServes(daemon)
            }
        }
    }
}

extension RecordProtocolTests {
    /// The recording suites' leak check, as the video suites' (`StreamingTests`):
    /// twenty recordings with sound, each on a connection of its own, started,
    /// stopped and gone — after the first (libx264's and the AAC encoder's
    /// tables), camerad's threads, descriptors and memory are where they were:
    /// encoders, recorders, file checks and closes all went with them.
    @Test(.timeLimit(.minutes(4))) func recordingsThatComeAndGoLeaveNothingBehindInTheDaemon() async throws {
        try await withTemporaryDirectory { folder in
            try await withRunningDaemon(arguments: ["--virtual-microphones", "1"], environment: DaemonFootprint.allocatorWithoutCaches) { daemon in
                func recordAndStop(_ index: Int) async throws {
                    let (client, loop) = try await connectClient(daemon, name: "recorder-\(index)")
                    defer { client.close(); loop.stop() }
                    let call = try RecordCall(client, Self.start(microphone: "virtual-microphone-0"),
                                              descriptors: [try Self.file("\(folder)/\(index % 2).mp4")])
                    #expect(await waitUntil(timeout: .seconds(60)) { call.started != nil || call.end != nil })
                    try call.stop()
                    #expect(await call.waitForEnd())
                    #expect(call.finished?.ending == .stopped, "\(String(describing: call.end))")
                }
                let idle = DaemonFootprint(daemon)
                try await recordAndStop(0)
                let baseline = await DaemonFootprint.quiet(daemon, threadsOf: idle)
                for index in 1...20 { try await recordAndStop(index) }
                let after = await DaemonFootprint.settling(daemon, to: baseline)
                print("twenty recordings came and went: \(after), from \(baseline)")
                #expect(after.isBack(to: baseline), "\(after) from \(baseline)")
            }
        }
    }
}
