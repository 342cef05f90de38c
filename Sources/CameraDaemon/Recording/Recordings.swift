import CameraEncoding
import CameraIPC
import Foundation
import Logging
import Synchronization

/// The daemon's movie recordings (the Record call, AVCaptureMovieFileOutput):
/// each a ``MovieRecorder`` writing its client's file, subscribed to the
/// encoders it shares with every other recording of its camera (and
/// microphone) at the same settings.
final class Recordings: Sendable {
    struct VideoKey: Hashable, Sendable {
        let uniqueID: String
        let format: VideoRecordingFormat
    }
    struct AudioKey: Hashable, Sendable {
        let uniqueID: String
        let settings: AudioEncoder.Settings
    }

    let videoEncoders = SharedEncoders<VideoKey, VideoEncoderNode>()
    let audioEncoders = SharedEncoders<AudioKey, AudioEncoderNode>()
    private let registry: DeviceRegistry
    private let logger: Logger

    /// A recorder's packets in flight: a second of frames (a slow disk beyond
    /// that drops its packets until the next keyframe) where the encoder's
    /// pool has room for sixteen recorders' — fewer, 4 at least, for large
    /// pictures, whose slots are a raw frame's size — and 20 s of sound
    /// (small, and a lost one cannot be made up: players close the gap).
    static func videoPacketsInFlight(_ encoder: MediaNode) -> Int { max(4, min(30, encoder.maxSlots / 16)) }
    static let audioPacketsInFlight = 1_000
    /// Numbers each recording's claim (``ClientBudget/Resource/recording``).
    private static let nextRecording = Atomic<UInt64>(0)

    init(registry: DeviceRegistry, logger: Logger) {
        self.registry = registry
        self.logger = logger
    }

    var budget: ClientBudget { registry.clientBudget }
    /// The event loop's clock: a recording's deadlines and limits.
    var timers: EventLoop { registry.timers }

    /// What a recording tells its call.
    enum Event: Sendable {
        /// Its first keyframe is written.
        case started(Started)
        /// The figures now (the handler sends them every 500 ms).
        case progress(MovieRecorder.Figures)
        /// A file was finished and the next took over, starting at this capture time.
        case handedOver(MovieRecorder.Figures, startTimeNanoseconds: Int64)
        /// The last file is finished.
        case finished(MovieRecorder.Ending, MovieRecorder.Figures)
    }

    /// A recording's start: its picture, how many recordings share its encoder, when its file starts.
    struct Started: Sendable {
        let width: Int
        let height: Int
        let frameRate: Int
        let encoderRecordings: Int
        /// The first frame's capture time.
        let startTimeNanoseconds: Int64
        /// How far before the call that is (its pre-roll).
        let preRollNanoseconds: Int64
    }

    /// Starts recording `request`'s camera (and microphone) into `descriptor`.
    /// Refuses, before anything is written, a descriptor that is no writable
    /// regular file, a filesystem with less free than the minimum asked,
    /// devices that are not there and settings the encoders cannot do.
    func start(_ request: RecordingRequest, descriptor: OwnedFD, for owner: ClientBudget.Owner,
               events: @escaping @Sendable (Event) -> Void) async throws -> Recording {
        let limits = try await Self.inspect(descriptor, request, for: owner, budget: budget, timers: timers)
        guard let streamer = registry.streamer(request.uniqueID) else {
            if registry.microphone(request.uniqueID) != nil {
                throw CameraError(.invalidArgument, "\(request.uniqueID) is a microphone; record a camera, with the microphone as audio_unique_id")
            }
            throw CameraError.noDevice(request.uniqueID)
        }
        var microphone: MicrophoneStreamer?
        if let audioUniqueID = request.audioUniqueID {
            guard let found = registry.microphone(audioUniqueID) else {
                if registry.streamer(audioUniqueID) != nil {
                    throw CameraError(.invalidArgument, "\(audioUniqueID) is a camera; audio_unique_id names a microphone")
                }
                throw CameraError.noDevice(audioUniqueID)
            }
            microphone = found
        }
        let preset = request.preset
        let format = try await videoFormat(request.video, preset: preset, request.uniqueID, streamer)
        let videoKey = VideoKey(uniqueID: request.uniqueID, format: format)
        let budget = self.budget, logger = self.logger
        // What it will cost camerad, charged before anything is made: a recorder, and each encoder new to its client.
        let recorder = try budget.claim(.recording, "recording \(Self.nextRecording.add(1, ordering: .relaxed).newValue)", for: owner)
        var claims = [try budget.claim(.videoEncoder, "\(videoKey)", for: owner)]
        let audioSettings = microphone.map { microphone in Self.audioSettings(request.audio, of: microphone) }
        if let audioSettings, let audioUniqueID = request.audioUniqueID {
            claims.append(try budget.claim(.audioEncoder, "\(AudioKey(uniqueID: audioUniqueID, settings: audioSettings))", for: owner))
        }
        let video = try await videoEncoders.use(videoKey) {
            try await VideoEncoderNode(on: streamer, name: request.uniqueID, format: format, preset: preset, budget: budget, logger: logger)
        }
        var audio: SharedEncoders<AudioKey, AudioEncoderNode>.Use?
        do {
            if let microphone, let audioSettings, let audioUniqueID = request.audioUniqueID {
                audio = try await audioEncoders.use(AudioKey(uniqueID: audioUniqueID, settings: audioSettings)) {
                    try await AudioEncoderNode(on: microphone, settings: audioSettings, budget: budget, logger: logger)
                }
            }
            return try await Recording(request: request, descriptor: descriptor, limits: limits,
                                       video: video, audio: audio, recordings: self, owner: owner, recorderClaim: recorder,
                                       encoderClaims: claims, events: events)
        } catch {
            await videoEncoders.letGo(video)
            if let audio { await audioEncoders.letGo(audio) }
            throw error
        }
    }

    /// The sound's AAC settings: those asked (their floors checked at the edge), else the microphone's rate and
    /// up to two of its channels, at 128 kbit/s.
    private static func audioSettings(_ asked: RecordingRequest.Audio, of microphone: MicrophoneStreamer) -> AudioEncoder.Settings {
        let native = microphone.microphone.audio.native
        return AudioEncoder.Settings(sampleRate: asked.sampleRate == 0 ? min(96_000, native.sampleRate) : asked.sampleRate,
                                     channels: asked.channels == 0 ? min(2, native.channels) : asked.channels,
                                     bitRate: asked.averageBitRate == 0 ? 128_000 : asked.averageBitRate)
    }

    /// The picture's format, as AVFoundation's movie output picks it. H.264:
    /// the size asked, else the preset's (`preset`, the session's), else the
    /// camera's mode's (the one `preset` starts an idle camera in); the rate
    /// asked, else the mode's. MJPEG: the camera's MJPG mode as it runs, nothing else asked.
    private func videoFormat(_ asked: RecordingRequest.Video, preset: SessionPreset, _ uniqueID: String,
                             _ streamer: DeviceStreamer) async throws(CameraError) -> VideoRecordingFormat {
        let mode = await streamer.modeForNewStream(preset: preset)
        // 29.97 fps records at 30; a mode slower than 1 fps at 1.
        let modeRate = max(1, Int((Double(mode.frameDuration.denominator) / Double(max(1, mode.frameDuration.numerator))).rounded()))
        switch asked.codec {
        case .mjpeg:
            let (width, height) = (Int(mode.format.width), Int(mode.format.height))
            let rate = modeRate
            guard mode.format.pixelFormat == .mjpeg else {
                throw CameraError(.unsupportedFormat, "\(uniqueID) runs \(mode.format.pixelFormat.code) \(width)x\(height), not MJPG: "
                    + "its own MJPEG can be stored only while it runs an MJPG mode; set one (camctl set \(uniqueID) --format MJPG:\(width)x\(height)) or record H.264")
            }
            guard asked.width == 0 || (asked.width, asked.height) == (width, height), asked.frameRate == 0 || asked.frameRate == rate else {
                throw CameraError(.invalidArgument, "MJPEG is stored as \(uniqueID) makes it, \(width)x\(height) at \(rate) fps; "
                    + "ask that size and rate (or none), or record H.264 to have another")
            }
            guard asked.averageBitRate == 0, asked.maxKeyframeInterval == 0 else {
                throw CameraError(.invalidArgument, "MJPEG is stored as the camera makes it: every frame a keyframe, at its own bit rate; "
                    + "leave the bit rate and keyframe interval unset")
            }
            return .mjpeg(width: width, height: height, frameRate: rate)
        case .h264:
            break
        }
        var (width, height) = (asked.width, asked.height)
        if width == 0, let size = ModeSelection.outputSize(for: preset) { (width, height) = (Int(size.0), Int(size.1)) }
        if width == 0 { (width, height) = (Int(mode.format.width), Int(mode.format.height)) }
        guard (16...7680).contains(width), (16...4320).contains(height), width % 2 == 0, height % 2 == 0 else {
            throw CameraError(.invalidArgument, "\(width)x\(height) cannot be recorded: H.264 here takes even sizes from 16x16 to 7680x4320")
        }
        let rate = asked.frameRate == 0 ? min(240, modeRate) : asked.frameRate
        guard (1...240).contains(rate) else {
            throw CameraError(.invalidArgument, "a recording's frame rate is 1 to 240, not \(rate)")
        }
        return .h264(VideoEncoder.Settings(width: width, height: height, frameRate: rate,
                                           bitRate: asked.averageBitRate == 0 ? nil : asked.averageBitRate,
                                           keyframeInterval: asked.maxKeyframeInterval == 0 ? nil : asked.maxKeyframeInterval))
    }

    /// Numbers each file check's claim.
    private static let nextFileCheck = Atomic<UInt64>(0)

    /// How long a movie's file may take to answer fstat and statvfs.
    static let fileAnswerDeadline = Duration.seconds(5)

    /// ``MovieRecorder/check(_:)`` and the limits, on a thread of their own:
    /// a client's file may be a FUSE file whose server never answers, which
    /// must hold up no thread but that one (never the tasks every call runs on).
    /// The thread is charged to `owner` (``ClientBudget/Resource/fileCheck``)
    /// until it is let go: past the deadline too, while the file does not answer.
    static func inspect(_ descriptor: OwnedFD, _ request: RecordingRequest, for owner: ClientBudget.Owner,
                        budget: ClientBudget, timers: EventLoop) async throws -> MovieRecorder.Limits {
        let claim = try budget.claim(.fileCheck, "file check \(nextFileCheck.add(1, ordering: .relaxed).newValue)", for: owner)
        let thread: WorkerThread
        do {
            thread = try WorkerThread(name: "camerad-file-check", holding: claim)
        } catch {
            throw CameraError(.resourceExhausted, "no thread to check the movie's file on: \(error)")
        }
        typealias Answer = CheckedContinuation<Result<MovieRecorder.Limits, any Error>, Never>
        /// The continuation, resumed by whichever comes first: the answer or the deadline.
        final class Waiting: Sendable {
            let continuation = OrderedMutex<Answer?>(.recordingHandles, nil)
            func withLock<T>(_ body: (inout Answer?) -> T) -> T { continuation.withLock { body(&$0) } }
        }
        let waiting = Waiting()
        let answer = await withCheckedContinuation { (continuation: Answer) in
            waiting.withLock { $0 = continuation }
            thread.async {
                let result = Result { () throws -> MovieRecorder.Limits in
                    try MovieRecorder.check(descriptor)
                    return try limits(request.limits, descriptor)
                }
                waiting.withLock { $0.take() }?.wake(returning: result)
            }
            thread.finish()
            // On the event loop's clock; answered first, it finds nothing to wake.
            timers.schedule(after: fileAnswerDeadline) {
                waiting.withLock { $0.take() }?.wake(returning: .failure(CameraError(.timedOut,
                    "the movie's file did not answer in \(fileAnswerDeadline) (a network or FUSE file whose server hangs?); record to a local file")))
            }
        }
        return try answer.get()
    }

    /// The limits asked (their ranges, and the pre-roll's, checked at the edge: `RequestRanges.swift`), the
    /// filesystem's free space against the minimum.
    private static func limits(_ limits: MovieRecorder.Limits, _ descriptor: OwnedFD) throws(CameraError) -> MovieRecorder.Limits {
        if let minimum = limits.minFreeBytes, let free = MovieRecorder.freeBytes(descriptor), free < minimum {
            throw CameraError(.resourceExhausted, "the movie's filesystem has \(free >> 20) MiB free, under the minimum of "
                + "\(minimum >> 20) MiB asked (minFreeDiskSpaceLimit); free space or lower the minimum")
        }
        return limits
    }
}

/// One recording under way: its recorder, subscribed to its encoders until
/// its file is finished.
///
/// A stop — its owner's, or its duration limit's — takes every frame captured
/// before it: the recorder keeps taking packets until its picture reaches the
/// stop (x264's lookahead gives the last ones as the camera's next frames push
/// them out), and its sound the picture's end; then the file is finished and
/// the recording lets go of its encoders. An encoder starved or a camera that
/// sends no more frames leaves it waiting ``drainDeadline`` at most: then it
/// lets go — the last recording of an encoder stops it, which encodes the
/// frames it was given and flushes x264's lookahead into the file — and its
/// file is finished ``flushDeadline`` later, with what it got.
final class Recording: Sendable {
    let recorder: MovieRecorder
    private let hold: EncoderHold
    /// Whether it was stopped.
    private let stopped = Atomic(false)
    /// Ends each file at its duration limit, on the clock, whether frames arrive or not.
    private let limitClock: LimitClock
    /// What started it: the limits and free space every next file is checked against.
    private let request: RecordingRequest
    /// Its client's, for the checks of its next files.
    private let owner: ClientBudget.Owner
    /// What its encoders cost its client, until it goes (its recorder's worker holds its own).
    private let encoderClaims: [ClientBudget.Claim]

    /// How long a stop waits for the packets of the frames captured before it.
    static let drainDeadline = Duration.seconds(3)
    /// How long, after that, for an encoder's flushed packets.
    static let flushDeadline = Duration.seconds(1)
    /// How long past a file's duration limit the clock stops it, when its packets have not (late, or none come).
    static let limitGrace = Duration.seconds(1)

    /// What a recording holds of its encoders — its subscriptions to their
    /// nodes, its uses of them — let go of once its file is finished (or its stop waited too long).
    private final class EncoderHold: Sendable {
        let video: SharedEncoders<Recordings.VideoKey, VideoEncoderNode>.Use
        let audio: SharedEncoders<Recordings.AudioKey, AudioEncoderNode>.Use?
        let recordings: Recordings
        private let subscriptions = OrderedMutex<(video: UInt64?, audio: UInt64?)>(.recordingHandles, (nil, nil))
        private let usesGone = Atomic(false)

        init(video: SharedEncoders<Recordings.VideoKey, VideoEncoderNode>.Use,
             audio: SharedEncoders<Recordings.AudioKey, AudioEncoderNode>.Use?, recordings: Recordings) {
            (self.video, self.audio, self.recordings) = (video, audio, recordings)
        }

        func subscribed(video: UInt64? = nil, audio: UInt64? = nil) {
            subscriptions.withLock { ids in
                if let video { ids.video = video }
                if let audio { ids.audio = audio }
            }
        }

        /// Ends its subscriptions (once): what the recorder held goes back.
        func unsubscribe() {
            let (videoID, audioID) = subscriptions.withLock { ids in
                defer { ids = (nil, nil) }
                return ids
            }
            if let videoID { video.encoder.node.unsubscribe(videoID) }
            if let audioID, let audio { audio.encoder.node.unsubscribe(audioID) }
        }

        /// Lets go of its encoders (once): the last user's stops, flushed.
        func letGoOfEncoders() async {
            guard !usesGone.exchange(true, ordering: .relaxed) else { return }
            await recordings.videoEncoders.letGo(video)
            if let audio { await recordings.audioEncoders.letGo(audio) }
        }

        /// Forgets its encoders, whose device went: the next recording gets new ones.
        func forgetEncoders() async {
            await recordings.videoEncoders.forget(video)
            if let audio { await recordings.audioEncoders.forget(audio) }
        }
    }

    fileprivate init(request: RecordingRequest, descriptor: OwnedFD,
                     limits: MovieRecorder.Limits, video: SharedEncoders<Recordings.VideoKey, VideoEncoderNode>.Use,
                     audio: SharedEncoders<Recordings.AudioKey, AudioEncoderNode>.Use?, recordings: Recordings,
                     owner: ClientBudget.Owner, recorderClaim: ClientBudget.Claim, encoderClaims: [ClientBudget.Claim],
                     events: @escaping @Sendable (Recordings.Event) -> Void) async throws {
        self.request = request
        self.owner = owner
        self.encoderClaims = encoderClaims
        let hold = EncoderHold(video: video, audio: audio, recordings: recordings)
        self.hold = hold
        // Each file's time 0, for the duration limit's clock.
        let limitClock = LimitClock(limit: limits.maxDurationNanoseconds, timers: recordings.timers)
        self.limitClock = limitClock
        let format = video.encoder.format
        let requestedAt = monotonicNanoseconds()
        let videoKey = video.key
        recorder = try MovieRecorder(
            descriptor: descriptor, container: request.container, video: video.encoder.parameters, audio: audio?.encoder.parameters,
            limits: limits, fragmentInterval: request.fragmentInterval, metadata: request.metadata, display: request.display,
            // Root's recording may use the blocks a filesystem keeps for root; another user's may not.
            keepsReservedBlocks: owner.user.map { $0 != 0 } ?? false, sync: request.sync, claim: recorderClaim, logger: Logger(label: "camerad"),
            onStart: { start in
                limitClock.fileStarted(at: start)
                // The recorder's worker calls this and must not wait: the encoders' users are the shared table's (an actor).
                Task {
                    events(.started(Recordings.Started(width: format.width, height: format.height, frameRate: format.frameRate,
                                                       encoderRecordings: await recordings.videoEncoders.users(of: videoKey),
                                                       startTimeNanoseconds: start, preRollNanoseconds: max(0, requestedAt - start))))
                }
            },
            onHandOver: { finished, start in
                limitClock.fileStarted(at: start)
                events(.handedOver(finished, startTimeNanoseconds: start))
            },
            onEnd: { ending, figures in
                limitClock.end()
                hold.unsubscribe()
                // The recorder's worker calls this and must not wait for the shared encoders' table (an actor).
                Task {
                    await hold.letGoOfEncoders()
                    events(.finished(ending, figures))
                }
            })
        do throws(CameraError) {
            let recorder = self.recorder
            let (videoID, preRollFrom) = try await video.encoder.subscribe(
                recorder, maxInFlight: Recordings.videoPacketsInFlight(video.encoder.node), for: owner,
                preRollNanoseconds: request.preRollNanoseconds) { recorder.writeEarlier($0, to: .video) }
            hold.subscribed(video: videoID)
            if let audio {
                // The sound's recent packets from the picture's pre-roll on (where it has them).
                let audioID = try await audio.encoder.subscribe(recorder.audioInput, maxInFlight: Recordings.audioPacketsInFlight, for: owner,
                                                                preRollFrom: preRollFrom) { recorder.writeEarlier($0, to: .audio) }
                hold.subscribed(audio: audioID)
            }
        } catch {
            // An encoder whose device went: the next recording gets a new one.
            if error.code == .invalidState { await hold.forgetEncoders() }
            stopped.store(true, ordering: .relaxed)
            hold.unsubscribe()
            recorder.stop()
            await hold.letGoOfEncoders()
            throw error
        }
        limitClock.attach(self)
    }

    deinit { limitClock.end() }

    /// Stops the recording at each file's duration limit on the event loop's
    /// clock from its first frame (a file handed over starts its own),
    /// ``limitGrace`` after it — when its packets, which end it at its limit,
    /// did not — until the last file is finished.
    private final class LimitClock: Sendable {
        private struct State {
            var timer: ScheduledWork?
            weak var recording: Recording?
            var ended = false
        }
        private let limit: Int64?
        private let timers: EventLoop
        private let state = OrderedMutex(.recordingHandles, State())

        init(limit: Int64?, timers: EventLoop) {
            (self.limit, self.timers) = (limit, timers)
        }

        /// The recording it stops, once made (its files start after).
        func attach(_ recording: Recording) {
            state.withLock { $0.recording = recording }
        }

        /// A file started at `start` (capture time): its limit replaces the last file's.
        func fileStarted(at start: Int64) {
            guard let limit else { return }
            let (end, overflow) = start.addingReportingOverflow(limit)
            let next = overflow ? nil : timers.schedule(after: .nanoseconds(end - monotonicNanoseconds()) + limitGrace) { [weak self] in
                self?.state.withLock { $0.recording }?.stop(before: end, as: .maximumDurationReached)
            }
            // The loop's lock is never taken under this one: timers are stopped after it is let go.
            let (last, ended) = state.withLock { state in
                defer { if !state.ended { state.timer = next } }
                return (state.timer, state.ended)
            }
            last?.stop()
            if ended { next?.stop() }
        }

        /// The last file is finished (or the recording gone): no limit stops it.
        func end() {
            state.withLock { state in
                state.ended = true
                return state.timer.take()
            }?.stop()
        }
    }

    /// stopRecording(): the file ends with the frames captured before now,
    /// then is finished, and its encoders stop if nobody else uses them. Idempotent.
    func stop() {
        stop(before: monotonicNanoseconds(), as: .stopped)
    }

    /// Stops the file at `time` (camerad's clock), to end as `ending`; after the first, calls do nothing.
    private func stop(before time: Int64, as ending: MovieRecorder.Ending) {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        recorder.stop(before: time, as: ending)
        let (recorder, hold, timers) = (self.recorder, self.hold, self.hold.recordings.timers)
        // The deadlines are the event loop's timers; only letting go of the encoders is a task: the
        // shared encoders' table is an actor, which the loop's thread cannot wait for.
        timers.schedule(after: Self.drainDeadline) {
            Task {
                await hold.letGoOfEncoders()
                timers.schedule(after: Self.flushDeadline) { recorder.stop() }
            }
        }
    }

    /// Its picture's encoder (shared with the camera's other recordings at its settings).
    var videoEncoder: VideoEncoderNode { hold.video.encoder }

    /// NextFile: `next` (checked as the first file was, off the tasks) takes
    /// over at a keyframe asked for now.
    func handOver(to next: OwnedFD) async throws {
        _ = try await Recordings.inspect(next, request, for: owner, budget: hold.recordings.budget, timers: hold.recordings.timers)
        recorder.handOver(to: next)
        hold.video.encoder.requestKeyframe()
    }
}
