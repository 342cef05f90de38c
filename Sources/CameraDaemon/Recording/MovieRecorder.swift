import CameraEncoding
import CameraIPC
import Glibc
import Logging
import Synchronization

/// One movie file being recorded (issue 35's `CaptureMovieFileOutput` in the
/// daemon): a sink of an encoder node's packets that muxes them into the
/// descriptor its client passed (``MovieWriter``: fragmented, crash-safe), on
/// a worker thread of its own — a slow disk holds up this file alone: its
/// subscription's in-flight limit drops its packets (reported, until its next
/// keyframe), never anyone else's.
///
/// Its file starts at its first packet, a keyframe (its subscription starts
/// at keyframes). It ends when its owner stops it, at a limit (duration,
/// size), when the disk is full, or with its camera; `onEnd` says which, with
/// the file's figures, once the file is finished (playable in every case).
final class MovieRecorder: FrameSink {
    /// Why a recording ended (AVFoundation's AVError codes, and a clean stop).
    enum Ending: Sendable, Equatable {
        /// Its owner stopped it (stopRecording()).
        case stopped
        case maximumDurationReached
        case maximumFileSizeReached
        case diskFull
        /// The camera went or stopped (deviceWasDisconnected, sessionWasInterrupted).
        case interrupted(CameraError)
        /// Writing failed for another reason.
        case failed(CameraError)

        /// AVErrorRecordingSuccessfullyFinishedKey: the file is whole, the recording ended as it should.
        var recordingSuccessfullyFinished: Bool {
            switch self {
            case .stopped, .maximumDurationReached, .maximumFileSizeReached: true
            case .diskFull, .interrupted, .failed: false
            }
        }
    }

    /// What it has written so far (recordedDuration, recordedFileSize) and what it lost.
    struct Figures: Sendable, Equatable {
        var durationNanoseconds: Int64 = 0
        var bytes: Int64 = 0
        /// The picture's packets (frames) written.
        var packets = 0
        /// Frames lost between the first written and the last — behind an encoder
        /// or a slow disk, in the keyframe waits that followed, in a pre-roll's
        /// history: the gaps in the frames' numbers.
        var packetsDropped = 0
        /// The sound's packets lost while the recorder was behind (silence in the file).
        var soundPacketsDropped = 0
        /// Which file they are of: 0, then one more at each hand-over.
        var file = 0
        /// The recording's fdatasyncs (``FileSync``) so far, and the longest.
        var fileSyncs = 0
        var longestSyncNanoseconds: Int64 = 0
    }

    /// Limits that end a recording: with success (AVFoundation's
    /// maxRecordedDuration, maxRecordedFileSize), or with `diskFull` when the
    /// file's filesystem has less free than `minFreeBytes` (minFreeDiskSpaceLimit).
    struct Limits: Sendable {
        var maxDurationNanoseconds: Int64?
        var maxBytes: Int64?
        var minFreeBytes: Int64?
    }

    private let container: MovieWriter.Container
    private let video: EncodedStreamParameters
    private let audio: EncodedStreamParameters?
    private let limits: Limits
    private let fragmentInterval: Double
    private let metadata: [String: String]
    /// How players turn each file's picture.
    private let display: DisplayTransform
    private let keepsReservedBlocks: Bool
    private let sync: FileSync
    /// Its syncs' thread (none for ``FileSync/never``).
    private let syncer: FileSyncer?
    private let logger: Logger
    private let thread: WorkerThread
    private let onStart: @Sendable (_ startNanoseconds: Int64) -> Void
    private let onHandOver: @Sendable (_ finished: Figures, _ startNanoseconds: Int64) -> Void
    private let onEnd: @Sendable (Ending, Figures) -> Void
    private let state: OrderedMutex<State>
    /// The figures as they stand, for any thread: a lock of their own, never
    /// held over the file's I/O (a write to a file whose server hangs holds
    /// `state`; reading the figures or counting drops must not wait on it).
    private let published = OrderedMutex(.recorderFigures, Figures())
    /// AAC packets held for the picture to reach them: a minute's.
    static let heldSoundLimit = 2_813

    private struct State {
        /// Used on the worker only, under this lock.
        var writer: MovieWriter?
        /// The file being written, and the one to hand over to at the next keyframe.
        var file: OwnedFD
        var nextFile: OwnedFD?
        var start: Int64?
        /// What it has written (its drops are counted in `published` alone).
        var figures = Figures()
        /// Where the picture written so far ends (its last frame's end), and its last frame's duration.
        var pictureEnd: Int64 = .min
        var frameDuration: Int64 = 0
        /// Sound the picture has not reached (its encoder behind): written as it
        /// does; what is left at the end is past the picture's end, and let go.
        var heldSound: [EncodedPacket] = []
        /// The number of the last frame written: the next one's gap from it is what was lost.
        var lastFrame: UInt64?
        /// Where its picture stops — its owner's stop, its duration limit — and how it will have ended:
        /// the picture's packets from `time` on are not the file's.
        var stopping: (time: Int64, ending: Ending)?
        /// Its picture reached its stop (or its encoder ended): only the sound is waited for.
        var pictureDone = false
        /// Where the sound received so far ends, and whether its encoder ended.
        var soundEnd: Int64 = .min
        var soundEnded = false
        /// Set once it ended: packets after are given back unwritten.
        var ending: Ending?
        /// The writer's fragments seen so far, and when the last sync was asked for.
        var fragments = 0
        var lastSync: Int64 = .min

        /// Whether the file is to be synced now, by `policy`: a fragment reached it since last asked.
        mutating func syncDue(_ policy: FileSync) -> Bool {
            guard let writer, writer.fragmentsWritten > fragments else { return false }
            fragments = writer.fragmentsWritten
            let now = monotonicNanoseconds()
            switch policy {
            case .never: return false
            case .everyFragment: break
            case .interval(let nanoseconds): guard lastSync == .min || now - lastSync >= nanoseconds else { return false }
            }
            lastSync = now
            return true
        }

        /// How it ends, once its picture reached its stop and its sound the picture's end.
        func finished(hasSound: Bool) -> Ending? {
            guard pictureDone, let stopping else { return nil }
            return !hasSound || soundEnded || writer == nil || soundEnd >= pictureEnd ? stopping.ending : nil
        }

        /// Stops the picture at `time` unless it stops earlier already.
        mutating func stop(before time: Int64, as ending: Ending) {
            if let stopping, stopping.time <= time { return }
            stopping = (time, ending)
            if writer != nil && pictureEnd >= time { pictureDone = true }
        }
    }

    /// - Throws: INVALID_ARGUMENT when no worker can be had (nothing is written yet).
    /// - Parameters:
    ///   - audio: the sound's stream, when the file has one: its packets
    ///     come through ``audioInput`` (a sink of an ``AudioEncoderNode``'s node).
    ///   - onStart: told, on the worker, once the file's first packet (a
    ///     keyframe) is written, with its capture time: the file's time 0.
    ///   - keepsReservedBlocks: write no more than an unprivileged user could
    ///     (``MovieWriter``): for a client other than root.
    ///   - sync: when the file is made durable (on a thread of its own, ``FileSyncer``).
    ///   - claim: what its worker costs its client, held until the worker ends
    ///     (a write to a file whose server hangs keeps it for as long).
    ///   - onHandOver: told, on the worker, once a file was finished at a
    ///     keyframe and the next took over (``handOver(to:)``): the finished
    ///     file's figures, the new one's time 0.
    init(descriptor: OwnedFD, container: MovieWriter.Container, video: EncodedStreamParameters, audio: EncodedStreamParameters? = nil,
         limits: Limits = Limits(), fragmentInterval: Double = 10, metadata: [String: String] = [:], display: DisplayTransform = .identity,
         keepsReservedBlocks: Bool = false,
         sync: FileSync = .everyFragment, claim: ClientBudget.Claim? = nil, logger: Logger,
         onStart: @escaping @Sendable (_ startNanoseconds: Int64) -> Void = { _ in },
         onHandOver: @escaping @Sendable (_ finished: Figures, _ startNanoseconds: Int64) -> Void = { _, _ in },
         onEnd: @escaping @Sendable (Ending, Figures) -> Void) throws(CameraError) {
        self.container = container
        self.video = video
        self.audio = audio
        self.limits = limits
        self.fragmentInterval = fragmentInterval
        self.metadata = metadata
        self.display = display
        self.keepsReservedBlocks = keepsReservedBlocks
        self.sync = sync
        self.logger = logger
        self.onStart = onStart
        self.onHandOver = onHandOver
        self.onEnd = onEnd
        state = OrderedMutex(.movieRecorder, State(file: descriptor))
        do {
            thread = try WorkerThread(name: "camerad-recorder", holding: claim)
            syncer = sync == .never ? nil : try FileSyncer(holding: claim)
        } catch {
            throw CameraError(.resourceExhausted, "no thread to record on: \(error)")
        }
    }

    /// What it has written so far.
    var figures: Figures { withSyncs(published.withLock { $0 }) }

    /// `figures` with the syncs done so far.
    private func withSyncs(_ figures: Figures) -> Figures {
        guard let counts = syncer?.counts else { return figures }
        var figures = figures
        (figures.fileSyncs, figures.longestSyncNanoseconds) = (counts.syncs, counts.longestNanoseconds)
        return figures
    }

    /// The syncs asked for that joined one waiting to start (each fragment is synced by one or the other).
    var syncsJoined: Int { syncer?.counts.joined ?? 0 }

    /// Publishes what the worker has written, keeping the drops counted meanwhile; under `state`'s lock.
    private func publish(_ written: Figures) -> Figures {
        published.withLock { figures in
            let dropped = (figures.packetsDropped, figures.soundPacketsDropped)
            figures = written
            (figures.packetsDropped, figures.soundPacketsDropped) = dropped
            return figures
        }
    }

    /// Ends the recording with the frames captured before `time` (its owner's
    /// stop, its duration limit reached on the clock): it keeps taking the
    /// picture's packets until one from `time` on comes (or its encoder ends,
    /// flushed), and the sound until it reaches the picture's end; then the
    /// file is finished. ``stop()`` ends it sooner if that takes too long.
    func stop(before time: Int64, as ending: Ending = .stopped) {
        thread.async { [self] in
            let reached = state.withLock { state -> Ending? in
                guard state.ending == nil else { return nil }
                state.stop(before: time, as: ending)
                return state.finished(hasSound: audio != nil)
            }
            if let reached { end(reached) }
        }
    }

    /// Ends the recording now, with what it was given (as its stop would end it, or as stopped).
    func stop() {
        thread.async { [self] in end(state.withLock { $0.stopping?.ending } ?? .stopped) }
    }

    /// The next file (checked with ``check(_:)``) takes over at the next
    /// keyframe — ask the encoder for one: the file under way is finished
    /// before it, no frame lost between the two.
    func handOver(to next: OwnedFD) {
        thread.async { [self] in state.withLock { $0.nextFile = next } }
    }

    // MARK: - FrameSink

    func started(_ news: StreamNews) {}

    func frame(_ handle: FrameHandle) -> Bool {
        thread.async { [self] in
            write(EncodedPacket(handle.frame), frame: handle.frame.sequence, to: .video)
            try? handle.release()
        }
        return true
    }

    /// The packets from before a subscription's first (its pre-roll, from
    /// the encoder's recent ones), written before what it brings.
    func writeEarlier(_ held: [PacketHistory.Held], to kind: EncodedStreamParameters.Kind) {
        thread.async { [self] in
            for packet in held { write(packet.packet, frame: kind == .video ? packet.sequence : nil, to: kind) }
        }
    }

    /// The sink of the sound's packets: written beside the picture's from
    /// the picture's first keyframe on (what comes before it is not the file's).
    /// The picture's end ends the file; the sound's does not.
    var audioInput: any FrameSink { AudioInput(recorder: self) }

    private final class AudioInput: FrameSink {
        let recorder: MovieRecorder

        init(recorder: MovieRecorder) { self.recorder = recorder }

        func started(_ news: StreamNews) {}

        func frame(_ handle: FrameHandle) -> Bool {
            recorder.thread.async { [recorder] in
                recorder.write(EncodedPacket(handle.frame), to: .audio)
                try? handle.release()
            }
            return true
        }

        /// The sound's encoder ended (flushed): a file stopping waits for no more.
        func end(with error: CameraError?) {
            recorder.thread.async { [recorder] in
                let reached = recorder.state.withLock { state -> Ending? in
                    state.soundEnded = true
                    return state.ending == nil ? state.finished(hasSound: true) : nil
                }
                if let reached { recorder.end(reached) }
            }
        }

        func dropped(_ drops: DropTally) {
            let count = drops.reports.reduce(0) { $0 + $1.count }
            recorder.published.withLock { $0.soundPacketsDropped += count }
        }

        func formatChanged(_ news: StreamNews) {}
        func interrupted(_ reason: StreamInterruption, _ error: CameraError) {}
    }

    /// The picture's drops are counted as gaps in the frames' numbers when the
    /// next frame is written: those reported before it joined (in a pre-roll's
    /// history) too, and none twice.
    func dropped(_ drops: DropTally) {}

    func formatChanged(_ news: StreamNews) {}

    func interrupted(_ reason: StreamInterruption, _ error: CameraError) {
        thread.async { [self] in end(.interrupted(error)) }
    }

    /// Its encoder ended: flushed, after a stop (the sound may still come), or without one (its camera went).
    func end(with error: CameraError?) {
        thread.async { [self] in
            let reached = state.withLock { state -> Ending? in
                guard state.ending == nil else { return nil }
                if let error { return .interrupted(error) }
                guard state.stopping != nil else { return .stopped }
                state.pictureDone = true
                return state.finished(hasSound: audio != nil)
            }
            if let reached { end(reached) }
        }
    }

    // MARK: - On the worker

    /// Writes a packet of the picture (`frame`: its frame's number) or the sound.
    private func write(_ packet: EncodedPacket, frame: UInt64? = nil, to kind: EncodedStreamParameters.Kind) {
        var startedAt: Int64?
        var handedOver: (Figures, Int64)?
        var toSync: [OwnedFD] = []
        let reached = state.withLock { state -> Ending? in
            defer { if state.ending == nil, state.syncDue(sync) { toSync.append(state.file) } }
            guard state.ending == nil else { return nil }
            do throws(EncodingError) {
                if kind == .video, !state.pictureDone, let stopping = state.stopping,
                   packet.presentationTimeNanoseconds >= stopping.time {
                    state.pictureDone = true
                    // The frames between the last written and this one that would have come before the stop
                    // (their times spread evenly between the two) never came: lost, counted as any gap is.
                    if let frame, let last = state.lastFrame, frame > last + 1, state.pictureEnd < stopping.time {
                        let gap = frame - last
                        let span = Double(packet.presentationTimeNanoseconds - state.pictureEnd) + Double(state.frameDuration)
                        let sinceLast = Double(stopping.time - state.pictureEnd) + Double(state.frameDuration)
                        let before = (sinceLast / span * Double(gap)).rounded(.up) - 1
                        published.withLock { $0.packetsDropped += Int(min(max(before, 0), Double(gap - 1))) }
                    }
                }
                guard kind == .video, !state.pictureDone else {
                    guard kind == .audio else { return state.finished(hasSound: audio != nil) }
                    state.soundEnd = max(state.soundEnd, packet.presentationTimeNanoseconds + packet.durationNanoseconds)
                    // Sound waits for the picture to reach it (the picture's encoder is behind, by its lookahead
                    // at least): a file's sound neither starts before nor outlasts its picture.
                    if state.heldSound.count >= Self.heldSoundLimit {
                        state.heldSound.removeFirst()
                        published.withLock { $0.soundPacketsDropped += 1 }
                    }
                    state.heldSound.append(packet)
                    try writeHeldSound(&state)
                    return state.finished(hasSound: true)
                }
                if packet.isKeyframe, let next = state.nextFile, let current = state.writer {
                    // Hand-over: the file under way ends before this keyframe, which starts the next.
                    try writeHeldSound(&state)
                    try current.finishWriting()
                    if sync != .never { toSync.append(state.file) }
                    state.figures.bytes = current.bytesWritten
                    handedOver = (publish(state.figures), packet.presentationTimeNanoseconds)
                    let fresh = Figures(file: state.figures.file + 1)
                    published.withLock { $0 = fresh }
                    state.figures = fresh
                    (state.writer, state.file, state.nextFile, state.fragments) = (nil, next, nil, 0)
                }
                let writer: MovieWriter
                if let current = state.writer {
                    writer = current
                } else {
                    // The file starts at the picture's first packet, a keyframe.
                    writer = try MovieWriter(descriptor: state.file.rawValue, container: container, video: video, audio: audio,
                                             startNanoseconds: packet.presentationTimeNanoseconds,
                                             fragmentInterval: fragmentInterval, metadata: metadata, display: display,
                                             keepsReservedBlocks: keepsReservedBlocks)
                    state.writer = writer
                    state.start = packet.presentationTimeNanoseconds
                    if handedOver == nil { startedAt = packet.presentationTimeNanoseconds }
                    // The duration limit, from each file's first frame: the frames that end by it (within
                    // half a frame: a file of 1 s at 30 fps holds 30 frames, whatever their stamps' jitter).
                    if let max = limits.maxDurationNanoseconds, state.stopping.map({ $0.ending == .maximumDurationReached }) ?? true {
                        let (end, overflow) = packet.presentationTimeNanoseconds.addingReportingOverflow(max - packet.durationNanoseconds / 2)
                        state.stopping = (overflow ? .max : end, .maximumDurationReached)
                    }
                }
                // The size limit holds within a packet: one that would take the file past it is not written.
                if let max = limits.maxBytes, state.figures.packets > 0, writer.bytesRecorded + Int64(packet.bytes.count) > max {
                    return .maximumFileSizeReached
                }
                try writer.write(packet, to: .video)
                if let frame {
                    if let last = state.lastFrame, frame > last, frame - last > 1 {
                        published.withLock { $0.packetsDropped += Int(clamping: frame - last - 1) }
                    }
                    state.lastFrame = frame
                }
                let start = state.start ?? packet.presentationTimeNanoseconds
                state.pictureEnd = packet.presentationTimeNanoseconds + packet.durationNanoseconds
                state.frameDuration = packet.durationNanoseconds
                state.figures.packets += 1
                state.figures.durationNanoseconds = state.pictureEnd - start
                try writeHeldSound(&state)
                state.figures.bytes = writer.bytesRecorded
                _ = publish(state.figures)
            } catch {
                return error.errno == ENOSPC ? .diskFull : .failed(CameraError(.internalError, "writing the movie: \(error.message)"))
            }
            if let stopping = state.stopping, state.pictureEnd >= stopping.time { state.pictureDone = true }
            if let max = limits.maxBytes, state.figures.bytes >= max { return .maximumFileSizeReached }
            // The filesystem's free space, once a second or so of frames.
            if let least = limits.minFreeBytes, kind == .video, state.figures.packets % 32 == 0,
               let free = Self.freeBytes(state.file), free < least {
                return .diskFull
            }
            return state.finished(hasSound: audio != nil)
        }
        for file in toSync { syncer?.sync(file) }
        if let startedAt { onStart(startedAt) }
        if let (finished, start) = handedOver { onHandOver(withSyncs(finished), start) }
        if let reached { end(reached) }
    }

    /// Writes the sound the picture has reached; sound from before the file's start is let go.
    private func writeHeldSound(_ state: inout State) throws(EncodingError) {
        guard let writer = state.writer, let start = state.start else { return }
        var written = 0
        for sound in state.heldSound {
            guard sound.presentationTimeNanoseconds < state.pictureEnd else { break }
            if sound.presentationTimeNanoseconds >= start { try writer.write(sound, to: .audio) }
            written += 1
        }
        state.heldSound.removeFirst(written)
    }

    /// Finishes the file (once) and says how it ended.
    private func end(_ ending: Ending) {
        let result = state.withLock { state -> (Ending, Figures, OwnedFD?)? in
            guard state.ending == nil else { return nil }
            var ending = ending
            do throws(EncodingError) {
                try state.writer?.finishWriting()
            } catch {
                logger.notice("finishing a movie: \(error.message)")
                if ending.recordingSuccessfullyFinished {
                    ending = error.errno == ENOSPC ? .diskFull : .failed(CameraError(.internalError, "finishing the movie: \(error.message)"))
                }
            }
            // The size the file has at its end, finished or not (the live figure counted packets not yet written).
            if let writer = state.writer { state.figures.bytes = writer.bytesWritten }
            let written = state.writer != nil
            state.writer = nil
            state.ending = ending
            return (ending, publish(state.figures), written ? state.file : nil)
        }
        guard let (ending, figures, file) = result else { return }
        // Its worker ends with the jobs queued (packets after the end go back unwritten); what comes later,
        // its owner's unsubscribing gives back.
        thread.finish()
        guard let syncer else { return onEnd(ending, figures) }
        // The end is told once the file's end is synced too.
        syncer.finish(file) { [self] in onEnd(ending, withSyncs(figures)) }
    }
}

extension EncodedPacket {
    /// An encoder node's buffer as the packet it holds.
    init(_ frame: PooledFrame) {
        self.init(bytes: Array(frame.bytes), presentationTimeNanoseconds: frame.timestampNanoseconds,
                  decodeTimeNanoseconds: frame.packet?.decodeTimestampNanoseconds ?? frame.timestampNanoseconds,
                  durationNanoseconds: frame.durationNanoseconds, isKeyframe: frame.packet?.isKeyframe ?? false)
    }
}
