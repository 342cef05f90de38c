import CameraIPC
import CameraProtocol
import Foundation
import Glibc
import Synchronization

/// AVCaptureFileOutputRecordingDelegate. Called on a serial queue of the
/// output's, in order: `didStartRecordingTo` once the file's first frame is
/// written (not for a recording refused at its start), then
/// `didFinishRecordingTo` once the file is finished, with nil when it was
/// stopped, else the ``RecordingError`` (or, refused at the start, the
/// ``CaptureError``) saying why.
///
/// Not `Sendable`, as in AVFoundation: a view controller adopts it. Its methods
/// run on the output's serial queue, one at a time; what they touch is the
/// adopter's to guard.
public protocol CaptureFileOutputRecordingDelegate: AnyObject {
    func fileOutput(_ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection])
    func fileOutput(_ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
                    error: (any Error)?)
}

extension CaptureFileOutputRecordingDelegate {
    public func fileOutput(_ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]) {}
}

/// How a recording ended other than by its stop: AVError, with its recording
/// codes and their values. ``recordingSuccessfullyFinished`` is
/// AVErrorRecordingSuccessfullyFinishedKey: true for a limit (the file is
/// whole, as asked), false for a failure (the file plays up to where it ended).
///
/// Bridged to `NSError` as AVFoundation's is — domain `AVFoundationErrorDomain`,
/// the code's value, `userInfo[AVErrorRecordingSuccessfullyFinishedKey]` — so
/// that seed code reading `(error as NSError).userInfo` works unchanged.
public struct RecordingError: Error, Equatable, Sendable, CustomStringConvertible, CustomNSError {
    /// AVError.Code's recording codes, with Apple's values.
    public enum Code: Int, Sendable, CustomStringConvertible {
        case maximumDurationReached = -11810
        case maximumFileSizeReached = -11811
        case diskFull = -11807
        case deviceWasDisconnected = -11808
        case sessionWasInterrupted = -11818
        /// Writing the file failed for another reason (the message says which): AVError.unknown's value.
        case failed = -11800

        /// The code's name ("maximumDurationReached").
        public var description: String {
            switch self {
            case .maximumDurationReached: "maximumDurationReached"
            case .maximumFileSizeReached: "maximumFileSizeReached"
            case .diskFull: "diskFull"
            case .deviceWasDisconnected: "deviceWasDisconnected"
            case .sessionWasInterrupted: "sessionWasInterrupted"
            case .failed: "failed"
            }
        }
    }

    public let code: Code
    public let message: String
    public let recordingSuccessfullyFinished: Bool

    public var description: String { message }

    public static var errorDomain: String { AVFoundationErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        [NSLocalizedDescriptionKey: message, AVErrorRecordingSuccessfullyFinishedKey: recordingSuccessfullyFinished]
    }
}

/// AVError: a recording's end, as seed code checks it (`(error as? AVError)?.code == .maximumDurationReached`).
public typealias AVError = RecordingError
/// AVFoundation's error domain, a ``RecordingError``'s as an `NSError`.
public let AVFoundationErrorDomain = "AVFoundationErrorDomain"
/// The `userInfo` key of a ``RecordingError`` as an `NSError`: whether the file is whole.
public let AVErrorRecordingSuccessfullyFinishedKey = "AVErrorRecordingSuccessfullyFinishedKey"

/// AVCaptureFileOutput: what every file output has.
public class CaptureFileOutput: CaptureOutput, @unchecked Sendable {
    fileprivate struct Recording {
        /// The file being written, and who hears of it.
        var url: URL
        var delegate: RecordingDelegateBox
        var call: BidirectionalCall<Camerad_V1_RecordRequest, Camerad_V1_RecordResponse>?
        /// Files handed over to, not yet taken over, with who hears of each.
        var next: [(url: URL, delegate: RecordingDelegateBox)] = []
        /// Files handed over to before the call was made: sent once it is.
        var unsentFiles: [OwnedFD] = []
        /// stopRecording() came before the call was made.
        var stopWanted = false
    }

    fileprivate struct State {
        var recording: Recording?
        /// The recording's figures, or the last one's once it finished.
        var figures = Camerad_V1_RecordingFigures()
        var maxRecordedDuration = CMTime.invalid
        var maxRecordedFileSize: Int64 = 0
        var minFreeDiskSpaceLimit: Int64 = 0
    }
    fileprivate let state = Mutex(State())
    /// Where the delegate is called, in order.
    fileprivate let delegateQueue = DispatchQueue(label: "CaptureFileOutput")

    override init() {}

    /// The file being recorded; nil when none is.
    public var outputFileURL: URL? { state.withLock { $0.recording?.url } }

    public var isRecording: Bool { state.withLock { $0.recording != nil } }

    /// What the file holds so far, as camerad last said (about every 500 ms);
    /// once it finished, the whole file's.
    public var recordedDuration: CMTime { CMTime(nanoseconds: state.withLock { $0.figures.durationNs }) }

    /// The file's size so far, as camerad last said — live: the fragments on
    /// the disk and the packets of the one under way; once it finished, the whole file's.
    public var recordedFileSize: Int64 { state.withLock { $0.figures.bytes } }

    /// Frames written so far, as camerad last said (Linux only).
    public var recordedFrameCount: Int { state.withLock { Int($0.figures.frames) } }

    /// Frames lost between the file's first and its last, as camerad last said
    /// (Linux only): frames the encoder never got (the file goes on) and packets
    /// a slow disk lost (the file resumes at the next keyframe).
    public var droppedFrameCount: Int { state.withLock { Int($0.figures.framesDropped) } }

    /// The file's syncs (``CaptureMovieFileOutput/FileSync``) so far, as camerad last said (Linux only).
    public var fileSyncCount: Int { state.withLock { Int($0.figures.fileSyncs) } }

    /// The longest of the file's syncs so far — how long its last fragment may
    /// wait to be on the disk after it was written — as camerad last said (Linux only).
    public var longestFileSync: Duration { state.withLock { .nanoseconds($0.figures.longestSyncNs) } }

    /// Ends a recording, successfully finished, once it is this long; invalid: no limit.
    public var maxRecordedDuration: CMTime {
        get { state.withLock { $0.maxRecordedDuration } }
        set { state.withLock { $0.maxRecordedDuration = newValue } }
    }

    /// Ends a recording, successfully finished, once its file is this large,
    /// within a packet (the boxes that close the file may add a few kilobytes); 0: no limit.
    public var maxRecordedFileSize: Int64 {
        get { state.withLock { $0.maxRecordedFileSize } }
        set { state.withLock { $0.maxRecordedFileSize = newValue } }
    }

    /// Refuses to start, and ends a recording with ``RecordingError/Code/diskFull``,
    /// below this many bytes free on the file's filesystem; 0: no limit.
    public var minFreeDiskSpaceLimit: Int64 {
        get { state.withLock { $0.minFreeDiskSpaceLimit } }
        set { state.withLock { $0.minFreeDiskSpaceLimit = newValue } }
    }
}

/// AVCaptureMovieFileOutput: records the session's camera — with its
/// microphone, when the session has one — to a QuickTime or MPEG-4 movie.
///
/// The encoding runs in camerad, shared with every other recording of the
/// camera at the same settings. CaptureKit creates the file (never over one
/// already there) and hands camerad its descriptor; camerad never opens a path.
/// The file is written in fragments (``movieFragmentInterval``), so a crash
/// of this process or of camerad leaves a file that plays up to its last
/// fragment. `.mov` URLs get QuickTime, `.mkv` Matroska (Linux only: no
/// display matrix there, so a connection's orientation or mirroring fails
/// the recording), any other extension MPEG-4.
public final class CaptureMovieFileOutput: CaptureFileOutput, @unchecked Sendable {
    /// AVVideoCodecType.
    public struct VideoCodecType: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let h264 = VideoCodecType(rawValue: "avc1")
        /// The camera's own MJPEG, stored as it comes (none encoded): the
        /// camera must run an MJPG format; the size and rate are its, and no
        /// bit rate or keyframe interval is taken (every frame is a keyframe).
        public static let jpeg = VideoCodecType(rawValue: "jpeg")
    }

    /// outputSettings(for:) as a value: the codec, the picture's size and
    /// rate, and AVVideoCompressionPropertiesKey's bit rate and keyframe interval.
    public struct VideoOutputSettings: Equatable, Sendable {
        public var codec = VideoCodecType.h264
        /// nil: the session preset's size (``SessionPreset/hd1280x720``:
        /// 1280x720), else the camera's mode's (`.high`: the mode it picks).
        public var width: Int?
        public var height: Int?
        /// AVVideoExpectedSourceFrameRateKey; nil: the camera's (29.97 fps records at 30).
        public var frameRate: Int?
        /// AVVideoAverageBitRateKey, bits per second; nil: constant quality.
        public var averageBitRate: Int?
        /// AVVideoMaxKeyFrameIntervalKey, frames; nil: two seconds of frames.
        public var maxKeyFrameInterval: Int?

        public init() {}
    }

    /// outputSettings(for:) of the audio connection as a value: AAC
    /// (kAudioFormatMPEG4AAC, the one format camerad encodes) at this rate,
    /// with these channels, at this bit rate.
    public struct AudioOutputSettings: Equatable, Sendable {
        /// AVSampleRateKey, 8000 to 96000 Hz; nil: the microphone's.
        public var sampleRate: Int?
        /// AVNumberOfChannelsKey, 1 or 2; nil: the microphone's, 2 at most.
        public var numberOfChannels: Int?
        /// AVEncoderBitRateKey, 8000 to 512000 bits per second; nil: 128000.
        public var bitRate: Int?

        public init() {}
    }

    /// When the file is made durable (Linux only: AVFoundation leaves it to
    /// the system). The file reaches the disk a whole fragment at a time, so a
    /// crash leaves it playable up to its last fragment written; a power loss,
    /// up to its last fragment synced (`fdatasync`, on a thread of camerad's
    /// own: a slow disk delays durability, never the recording).
    public enum FileSync: Equatable, Sendable {
        /// After every fragment and at the end (the default).
        case everyFragment
        /// After the first fragment this long or more after the last sync, and at the end.
        case interval(CMTime)
        /// Never: the system writes the file back when it will (about 30 s).
        case none
    }

    private struct MovieSettings {
        var video = VideoOutputSettings()
        var audio = AudioOutputSettings()
        var fragmentInterval = CMTime(value: 10, timescale: 1)
        var metadata: [MetadataItem] = []
        var preRoll = CMTime.zero
        var fileSync = FileSync.everyFragment
    }
    private let movie = Mutex(MovieSettings())

    public override init() {}

    /// The camera's picture, and the microphone's sound when the session has one.
    override var mediaTypes: [MediaType] { [.video, .audio] }

    /// The codecs camerad records: H.264, which it encodes, and JPEG, a
    /// camera's own MJPEG stored as it comes.
    public var availableVideoCodecTypes: [VideoCodecType] { [.h264, .jpeg] }

    /// How often the file is made whole while it is written (default 10 s):
    /// what a crash can lose. Invalid or zero: 10 s.
    public var movieFragmentInterval: CMTime {
        get { movie.withLock { $0.fragmentInterval } }
        set { movie.withLock { $0.fragmentInterval = newValue } }
    }

    /// When the file is made durable (Linux only; default ``CaptureMovieFileOutput/FileSync/everyFragment``).
    public var fileSync: FileSync {
        get { movie.withLock { $0.fileSync } }
        set { movie.withLock { $0.fileSync = newValue } }
    }

    /// How long before ``startRecording(to:recordingDelegate:)`` the file
    /// starts (Linux only; at most 10 s; default none): at a keyframe at or
    /// before then, from the recent picture and sound of the encoders camerad
    /// shares — as far back as they have run for another recording of the
    /// same camera and settings (in any process); otherwise the file starts
    /// now. ``CaptureFileOutput/recordedDuration`` counts it.
    public var preRollDuration: CMTime {
        get { movie.withLock { $0.preRoll } }
        set { movie.withLock { $0.preRoll = newValue } }
    }

    /// Written into the file: location (ISO 6709), make, model, creation date.
    public var metadata: [MetadataItem]? {
        get { movie.withLock { $0.metadata } }
        set { movie.withLock { $0.metadata = newValue ?? [] } }
    }

    /// A connection's settings as AVFoundation's keys: the video connection's
    /// AVVideoCodecKey, AVVideoWidthKey, AVVideoHeightKey and
    /// AVVideoCompressionPropertiesKey; the audio connection's AVFormatIDKey
    /// (``kAudioFormatMPEG4AAC``), AVSampleRateKey, AVNumberOfChannelsKey and
    /// AVEncoderBitRateKey (those set).
    public func outputSettings(for connection: CaptureConnection) -> [String: Any] {
        if Self.isAudio(connection) {
            let settings = audioOutputSettings
            var dictionary: [String: Any] = [AVFormatIDKey: kAudioFormatMPEG4AAC]
            if let rate = settings.sampleRate { dictionary[AVSampleRateKey] = rate }
            if let channels = settings.numberOfChannels { dictionary[AVNumberOfChannelsKey] = channels }
            if let bitRate = settings.bitRate { dictionary[AVEncoderBitRateKey] = bitRate }
            return dictionary
        }
        let settings = videoOutputSettings
        var compression: [String: Any] = [:]
        if let rate = settings.averageBitRate { compression[AVVideoAverageBitRateKey] = rate }
        if let interval = settings.maxKeyFrameInterval { compression[AVVideoMaxKeyFrameIntervalKey] = interval }
        if let rate = settings.frameRate { compression[AVVideoExpectedSourceFrameRateKey] = rate }
        var dictionary: [String: Any] = [AVVideoCodecKey: settings.codec.rawValue]
        if let width = settings.width { dictionary[AVVideoWidthKey] = width }
        if let height = settings.height { dictionary[AVVideoHeightKey] = height }
        if !compression.isEmpty { dictionary[AVVideoCompressionPropertiesKey] = compression }
        return dictionary
    }

    /// Sets a connection's settings from AVFoundation's keys (those
    /// ``outputSettings(for:)`` lists); nil: the defaults.
    ///
    /// - Throws: INVALID_ARGUMENT for a codec or format camerad does not
    ///   encode, or a key or value it does not take (AVFoundation raises an exception).
    public func setOutputSettings(_ settings: [String: Any]?, for connection: CaptureConnection) throws(CaptureError) {
        let settings = settings ?? [:]
        func integer(_ value: Any?, _ key: String, _ range: ClosedRange<Int> = 1...Int.max) throws(CaptureError) -> Int? {
            guard let value else { return nil }
            guard let number = (value as? Int) ?? (value as? NSNumber).flatMap({ Int(exactly: $0.doubleValue) }),
                  range.contains(number) else {
                throw CaptureError(.invalidArgument, range.upperBound == .max ? "\(key) must be a positive integer, not \(value)"
                                   : "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(value)")
            }
            return number
        }
        if Self.isAudio(connection) {
            if let format = settings[AVFormatIDKey] {
                guard ((format as? UInt32) ?? (format as? NSNumber)?.uint32Value) == kAudioFormatMPEG4AAC else {
                    throw CaptureError(.invalidArgument, "camerad records a movie's sound as AAC: AVFormatIDKey kAudioFormatMPEG4AAC, not \(format)")
                }
            }
            var parsed = AudioOutputSettings()
            parsed.sampleRate = try integer(settings[AVSampleRateKey], AVSampleRateKey, 8_000...96_000)
            parsed.numberOfChannels = try integer(settings[AVNumberOfChannelsKey], AVNumberOfChannelsKey, 1...2)
            parsed.bitRate = try integer(settings[AVEncoderBitRateKey], AVEncoderBitRateKey, 8_000...512_000)
            let unknown = settings.keys.filter { ![AVFormatIDKey, AVSampleRateKey, AVNumberOfChannelsKey, AVEncoderBitRateKey].contains($0) }
            guard unknown.isEmpty else {
                throw CaptureError(.invalidArgument, "camerad does not take \(unknown.sorted()) in a movie's audio settings")
            }
            audioOutputSettings = parsed
            return
        }
        var parsed = VideoOutputSettings()
        if let codec = settings[AVVideoCodecKey] {
            guard let name = (codec as? String) ?? (codec as? VideoCodecType)?.rawValue,
                  let known = availableVideoCodecTypes.first(where: { $0.rawValue == name }) else {
                throw CaptureError(.invalidArgument, "camerad records \(availableVideoCodecTypes.map(\.rawValue)), not \(codec)")
            }
            parsed.codec = known
        }
        parsed.width = try integer(settings[AVVideoWidthKey], AVVideoWidthKey)
        parsed.height = try integer(settings[AVVideoHeightKey], AVVideoHeightKey)
        let compression = settings[AVVideoCompressionPropertiesKey] as? [String: Any] ?? [:]
        parsed.averageBitRate = try integer(compression[AVVideoAverageBitRateKey], AVVideoAverageBitRateKey)
        parsed.maxKeyFrameInterval = try integer(compression[AVVideoMaxKeyFrameIntervalKey], AVVideoMaxKeyFrameIntervalKey)
        parsed.frameRate = try integer(compression[AVVideoExpectedSourceFrameRateKey], AVVideoExpectedSourceFrameRateKey)
        let known: Set = [AVVideoCodecKey, AVVideoWidthKey, AVVideoHeightKey, AVVideoCompressionPropertiesKey]
        let knownCompression: Set = [AVVideoAverageBitRateKey, AVVideoMaxKeyFrameIntervalKey, AVVideoExpectedSourceFrameRateKey]
        let unknown = settings.keys.filter { !known.contains($0) } + compression.keys.filter { !knownCompression.contains($0) }
        guard unknown.isEmpty else {
            throw CaptureError(.invalidArgument, "camerad does not take \(unknown.sorted()) in a movie's output settings")
        }
        videoOutputSettings = parsed
    }

    /// ``outputSettings(for:)`` as a value (Linux: no dictionary of Any).
    public var videoOutputSettings: VideoOutputSettings {
        get { movie.withLock { $0.video } }
        set { movie.withLock { $0.video = newValue } }
    }

    /// The audio connection's ``outputSettings(for:)`` as a value.
    public var audioOutputSettings: AudioOutputSettings {
        get { movie.withLock { $0.audio } }
        set { movie.withLock { $0.audio = newValue } }
    }

    /// The container a URL's extension asks for: `.mov` QuickTime, `.mkv` Matroska, anything else MPEG-4.
    private static func fileType(of url: URL) -> Camerad_V1_FileType {
        switch url.pathExtension.lowercased() {
        case "mov": .mov
        case "mkv": .matroska
        default: .mp4
        }
    }

    /// Whether `connection` is the one that carries the microphone's sound.
    private static func isAudio(_ connection: CaptureConnection) -> Bool {
        connection.input.device.hasMediaType(.audio)
    }

    /// Starts recording the session's camera (and microphone) to `outputFileURL`,
    /// a new file: one already there is never written over (the recording
    /// finishes at once with ALREADY_EXISTS, AVFoundation's fileAlreadyExists).
    /// The delegate hears the start and the end; a recording that cannot start
    /// finishes at once with the error.
    ///
    /// Called while recording, it switches to the new file with no frame or
    /// sample lost between the two, as in AVFoundation: the file under way
    /// finishes at the next keyframe, asked for at once (its delegate hears it
    /// finish, without error) and `outputFileURL` takes over (`delegate` hears
    /// it start) — ``handOverRecording(to:)`` with a delegate of its own.
    public func startRecording(to outputFileURL: URL, recordingDelegate: any CaptureFileOutputRecordingDelegate) {
        let delegate = RecordingDelegateBox(delegate: recordingDelegate)
        let connections = self.connections
        func refuse(_ error: CaptureError) {
            CaptureDiagnostics.report("the recording did not start", error)
            delegateQueue.async { delegate.didFinish(self, outputFileURL, connections, error) }
        }
        if isRecording {
            do throws(CaptureError) {
                try switchFiles(to: outputFileURL, delegate: delegate)
            } catch {
                refuse(error)
            }
            return
        }
        guard let connection = connection(with: .video), let session = connection.session else {
            return refuse(CaptureError(.invalidState, "the movie output has no camera: add it to a session with a camera input"))
        }
        guard session.isRunning else {
            return refuse(CaptureError(.invalidState, "the session is not running: startRunning() before startRecording"))
        }
        // Its audio connection disabled: a movie without sound, as in AVFoundation.
        let microphone = self.connection(with: .audio).flatMap { $0.isEnabled ? $0.input.device : nil }
        var start = Camerad_V1_StartRecording()
        start.uniqueID = connection.input.device.uniqueID
        start.audioUniqueID = microphone?.uniqueID ?? ""
        start.fileType = Self.fileType(of: outputFileURL)
        start.video = Camerad_V1_VideoRecordingSettings(videoOutputSettings)
        start.audio = Camerad_V1_AudioRecordingSettings(audioOutputSettings)
        start.preset = session.sessionPreset.proto
        // Written as the track's display matrix, as AVFoundation does: players turn the picture.
        start.orientation = connection.videoOrientation.proto
        start.mirrored = connection.isVideoMirrored
        let limits = state.withLock { $0 }
        if limits.maxRecordedDuration.isValid { start.maxDurationNs = Int64(limits.maxRecordedDuration.seconds * 1e9) }
        start.maxFileSize = max(0, limits.maxRecordedFileSize)
        start.minFreeDiskSpace = max(0, limits.minFreeDiskSpaceLimit)
        let movie = self.movie.withLock { $0 }
        if movie.fragmentInterval.isValid && movie.fragmentInterval.seconds > 0 {
            start.movieFragmentIntervalNs = Int64(movie.fragmentInterval.seconds * 1e9)
        }
        start.metadata = Camerad_V1_MovieMetadata(movie.metadata)
        if movie.preRoll.isValid && movie.preRoll.seconds > 0 { start.preRollNs = Int64(movie.preRoll.seconds * 1e9) }
        switch movie.fileSync {
        case .everyFragment: start.sync = .everyFragment
        case .none: start.sync = .none
        case .interval(let interval):
            start.sync = .interval
            // camerad takes 1 ms to an hour, and says so.
            let nanoseconds = interval.isValid ? interval.seconds * 1e9 : 0
            start.syncIntervalNs = nanoseconds.isFinite ? Int64(max(-1e18, min(1e18, nanoseconds))) : 0
        }
        let file: OwnedFD
        do throws(CaptureError) {
            file = try Self.openMovie(outputFileURL)
        } catch {
            return refuse(error)
        }
        state.withLock { state in
            state.recording = Recording(url: outputFileURL, delegate: delegate, call: nil)
            state.figures = Camerad_V1_RecordingFigures()
        }
        Task {
            do throws(CaptureError) {
                let call = try await MovieRecordingCall.start(start, file: file) { [weak self] event in
                    self?.handle(event, connections: connections)
                }
                let (stopped, files) = state.withLock { state -> (Bool, [OwnedFD]) in
                    guard state.recording?.call == nil, state.recording?.url == outputFileURL else { return (true, []) }
                    state.recording?.call = call
                    defer { state.recording?.unsentFiles = [] }
                    return (state.recording?.stopWanted ?? true, state.recording?.unsentFiles ?? [])
                }
                // Files switched to while the call was made, in order; then
                // stopRecording() if it came meanwhile, or the recording already ended.
                for file in files { MovieRecordingCall(call).handOver(to: file) }
                if stopped { MovieRecordingCall(call).stop() }
            } catch {
                let unused = state.withLock { state -> [(url: URL, delegate: RecordingDelegateBox)] in
                    defer { state.recording = nil }
                    return state.recording?.next ?? []
                }
                Self.removeIfEmpty(outputFileURL)
                refuse(error)
                finishUnused(unused, connections: connections, because: error)
            }
        }
    }

    /// Ends the recording; the delegate's didFinishRecordingTo follows once
    /// the file is finished.
    public func stopRecording() {
        let call = state.withLock { state -> MovieRecordingCall? in
            guard let call = state.recording?.call else {
                state.recording?.stopWanted = true
                return nil
            }
            return MovieRecordingCall(call)
        }
        call?.stop()
    }

    /// Hands the recording over to `nextURL` (a new file, as ``startRecording(to:recordingDelegate:)``'s) at the
    /// next keyframe, asked for at once, with no frame lost between the files
    /// (Linux only, beyond AVFoundation). The delegate hears the file under
    /// way finish (no error) and `nextURL` start; limits apply to each file.
    ///
    /// - Throws: INVALID_STATE when not recording; ALREADY_EXISTS when `nextURL`
    ///   does; INVALID_ARGUMENT when it cannot be created. camerad refusing the
    ///   file ends the recording with its error.
    public func handOverRecording(to nextURL: URL) throws(CaptureError) {
        guard let delegate = state.withLock({ $0.recording?.delegate }) else {
            throw CaptureError(.invalidState, "no recording under way to hand over; startRecording first")
        }
        try switchFiles(to: nextURL, delegate: delegate)
    }

    /// Hands the recording under way over to `url`, which `delegate` hears
    /// of: at once, or once the call is made when it is still being made.
    private func switchFiles(to url: URL, delegate: RecordingDelegateBox) throws(CaptureError) {
        let file = try Self.openMovie(url)
        let call = state.withLock { state -> BidirectionalCall<Camerad_V1_RecordRequest, Camerad_V1_RecordResponse>?? in
            guard state.recording != nil else { return .none }
            state.recording?.next.append((url, delegate))
            if state.recording?.call == nil { state.recording?.unsentFiles.append(file) }
            return .some(state.recording?.call)
        }
        switch call {
        case .none:
            Self.removeIfEmpty(url)
            throw CaptureError(.invalidState, "the recording ended before it could switch to \(url.path); startRecording again")
        case .some(.some(let call)): MovieRecordingCall(call).handOver(to: file)
        case .some(.none): break  // sent with the call, once made
        }
    }

    private func handle(_ event: MovieRecordingCall.Event, connections: [CaptureConnection]) {
        guard let (url, delegate) = state.withLock({ state in state.recording.map { ($0.url, $0.delegate) } }) else { return }
        switch event {
        case .started:
            delegateQueue.async { delegate.didStart(self, url, connections) }
        case .progress(let figures):
            state.withLock { $0.figures = figures }
        case .handedOver:
            guard let next = state.withLock({ state -> (url: URL, delegate: RecordingDelegateBox)? in
                guard state.recording?.next.isEmpty == false, let next = state.recording?.next.removeFirst() else { return nil }
                state.recording?.url = next.url
                state.recording?.delegate = next.delegate
                state.figures = Camerad_V1_RecordingFigures()
                return next
            }) else { return }
            delegateQueue.async {
                delegate.didFinish(self, url, connections, nil)
                next.delegate.didStart(self, next.url, connections)
            }
        case .finished(let result, let figures):
            let unused = state.withLock { state -> [(url: URL, delegate: RecordingDelegateBox)] in
                defer { state.recording = nil }
                if let figures { state.figures = figures }
                return state.recording?.next ?? []
            }
            // Refused before anything was written: the file this output created goes again.
            if figures == nil { Self.removeIfEmpty(url) }
            delegateQueue.async { delegate.didFinish(self, url, connections, result) }
            finishUnused(unused, connections: connections, because: result)
        }
    }

    /// Files switched to that never took over (the recording ended first): each
    /// goes again, and its delegate hears it finish with the recording's error,
    /// or INVALID_STATE when it was stopped first.
    private func finishUnused(_ unused: [(url: URL, delegate: RecordingDelegateBox)], connections: [CaptureConnection],
                              because ending: (any Error)?) {
        for (url, delegate) in unused {
            Self.removeIfEmpty(url)
            let error = ending ?? CaptureError(.invalidState, "the recording stopped before it switched to \(url.path); startRecording again")
            delegateQueue.async { delegate.didFinish(self, url, connections, error) }
        }
    }

    /// The movie at `url`, a new file for camerad to write. A file already
    /// there — or a symbolic link, followed by nobody — is refused, never
    /// written over, as AVFoundation fails with fileAlreadyExists: so no
    /// link swapped in between a check and the open can turn a recording onto
    /// another file (`O_EXCL`). Non-blocking: nothing here waits on the file.
    private static func openMovie(_ url: URL) throws(CaptureError) -> OwnedFD {
        let fd = Glibc.open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NONBLOCK, 0o644)
        guard fd >= 0 else {
            let failure = errno
            var status = stat()
            if failure == EEXIST, lstat(url.path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
                let type = status.st_mode & S_IFMT
                let what = type == S_IFIFO ? "a pipe" : type == S_IFLNK ? "a symbolic link" : type == S_IFDIR ? "a directory"
                    : type == S_IFSOCK ? "a socket" : "a device"
                throw CaptureError(.invalidArgument, "\(url.path) is \(what); a movie goes to a new regular file: record to another URL")
            }
            if failure == EEXIST {
                throw CaptureError(.alreadyExists, "\(url.path) exists; a movie is never written over a file: remove it, or record to another URL")
            }
            throw CaptureError(.invalidArgument, "cannot create \(url.path): \(String(cString: strerror(failure)))")
        }
        return OwnedFD(adopting: fd)
    }

    private static func removeIfEmpty(_ url: URL) {
        var status = stat()
        if stat(url.path, &status) == 0, status.st_size == 0, status.st_mode & S_IFMT == S_IFREG { unlink(url.path) }
    }

    override func sessionDidStop(endedByItself: Bool) {
        // AVFoundation: a session that stops ends its recordings.
        stopRecording()
        super.sessionDidStop(endedByItself: endedByItself)
    }
}

/// A Record call from CaptureKit's side: made with the file's descriptor,
/// its responses read on the connection's thread.
struct MovieRecordingCall: Sendable {
    enum Event: Sendable {
        case started
        case progress(Camerad_V1_RecordingFigures)
        /// A file was finished at a keyframe and the next took over.
        case handedOver
        /// The file is finished: nil when stopped, else why it ended; with
        /// its figures, unless it was refused or the connection went.
        case finished((any Error)?, Camerad_V1_RecordingFigures?)
    }

    let call: BidirectionalCall<Camerad_V1_RecordRequest, Camerad_V1_RecordResponse>

    init(_ call: BidirectionalCall<Camerad_V1_RecordRequest, Camerad_V1_RecordResponse>) { self.call = call }

    /// Starts the recording: `handler` hears its events, on the connection's thread, `.finished` last.
    static func start(_ start: Camerad_V1_StartRecording, file: OwnedFD,
                      handler: @escaping @Sendable (Event) -> Void) async throws(CaptureError) -> BidirectionalCall<Camerad_V1_RecordRequest, Camerad_V1_RecordResponse> {
        let client = try await DaemonClient.shared.connection()
        let finished = Mutex(false)
        return try await CaptureError.converting {
            let call = try client.bidirectional(CameraService.record) { (event: CallEvent<Camerad_V1_RecordResponse>) in
                switch event {
                case .message(let received):
                    switch received.message.kind {
                    case .started: handler(.started)
                    case .progress(let figures): handler(.progress(figures))
                    case .handedOver: handler(.handedOver)
                    case .finished(let finishedMessage):
                        finished.withLock { $0 = true }
                        handler(.finished(RecordingError(finishedMessage), finishedMessage.figures))
                    case nil: break
                    }
                case .end(let error):
                    // The call ended without RecordingFinished: refused, or the connection went.
                    guard !finished.withLock({ $0 }) else { return }
                    handler(.finished(error.map { CaptureError($0) }
                        ?? CaptureError(.internalError, "camerad ended the recording without saying how"), nil))
                }
            }
            var request = Camerad_V1_RecordRequest()
            var withDescriptor = start
            withDescriptor.fdIndex = 0
            request.start = withDescriptor
            try call.send(request, descriptors: [file])
            return call
        }
    }

    func stop() {
        var request = Camerad_V1_RecordRequest()
        request.stop = Camerad_V1_StopRecording()
        try? call.send(request)
    }

    func handOver(to file: OwnedFD) {
        var request = Camerad_V1_RecordRequest()
        request.nextFile = Camerad_V1_NextFile()
        try? call.send(request, descriptors: [file])
    }
}

extension RecordingError {
    /// The error a RecordingFinished reports; nil for a stop.
    init?(_ finished: Camerad_V1_RecordingFinished) {
        let code: Code
        switch finished.ending {
        case .stopped, .unspecified, .UNRECOGNIZED: return nil
        case .maximumDurationReached: code = .maximumDurationReached
        case .maximumFileSizeReached: code = .maximumFileSizeReached
        case .diskFull: code = .diskFull
        case .deviceWasDisconnected: code = .deviceWasDisconnected
        case .sessionWasInterrupted: code = .sessionWasInterrupted
        case .failed: code = .failed
        }
        self.init(code: code, message: finished.message, recordingSuccessfullyFinished: finished.successfullyFinished)
    }
}

/// AVMetadataItem, as much of it as a movie's metadata needs: an identifier and a string.
public struct MetadataItem: Equatable, Sendable {
    public var identifier: MetadataIdentifier
    public var value: String

    public init(identifier: MetadataIdentifier, value: String) {
        self.identifier = identifier
        self.value = value
    }
}

/// AVMetadataIdentifier, those a movie takes.
public struct MetadataIdentifier: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// "+48.8577+002.2950/": latitude and longitude (ISO 6709).
    public static let quickTimeMetadataLocationISO6709 = MetadataIdentifier(rawValue: "mdta/com.apple.quicktime.location.ISO6709")
    public static let quickTimeMetadataMake = MetadataIdentifier(rawValue: "mdta/com.apple.quicktime.make")
    public static let quickTimeMetadataModel = MetadataIdentifier(rawValue: "mdta/com.apple.quicktime.model")
    /// ISO 8601; without it, the recording's start.
    public static let quickTimeMetadataCreationDate = MetadataIdentifier(rawValue: "mdta/com.apple.quicktime.creationdate")
}

/// AVVideoCodecType: ``CaptureMovieFileOutput/VideoCodecType`` (`.h264`, `.jpeg`).
public typealias AVVideoCodecType = CaptureMovieFileOutput.VideoCodecType

/// AVFoundation's video settings keys (AVVideoSettings.h).
public let AVVideoCodecKey = "AVVideoCodecKey"
public let AVVideoWidthKey = "AVVideoWidthKey"
public let AVVideoHeightKey = "AVVideoHeightKey"
public let AVVideoCompressionPropertiesKey = "AVVideoCompressionPropertiesKey"
public let AVVideoAverageBitRateKey = "AverageBitRate"
public let AVVideoMaxKeyFrameIntervalKey = "MaxKeyFrameInterval"
public let AVVideoExpectedSourceFrameRateKey = "ExpectedFrameRate"

/// AVEncoderBitRateKey (AVAudioSettings.h): a movie's sound, bits per second.
public let AVEncoderBitRateKey = "AVEncoderBitRateKey"
/// MPEG-4 AAC ('aac '): the format of a movie's sound.
public let kAudioFormatMPEG4AAC: UInt32 = 0x6161_6320

extension Camerad_V1_VideoRecordingSettings {
    init(_ settings: CaptureMovieFileOutput.VideoOutputSettings) {
        self.init()
        codec = settings.codec == .jpeg ? .mjpeg : .h264
        width = UInt32(clamping: settings.width ?? 0)
        height = UInt32(clamping: settings.height ?? 0)
        frameRate = UInt32(clamping: settings.frameRate ?? 0)
        averageBitRate = UInt32(clamping: settings.averageBitRate ?? 0)
        maxKeyFrameInterval = UInt32(clamping: settings.maxKeyFrameInterval ?? 0)
    }
}

extension Camerad_V1_AudioRecordingSettings {
    init(_ settings: CaptureMovieFileOutput.AudioOutputSettings) {
        self.init()
        sampleRate = UInt32(clamping: settings.sampleRate ?? 0)
        channels = UInt32(clamping: settings.numberOfChannels ?? 0)
        averageBitRate = UInt32(clamping: settings.bitRate ?? 0)
    }
}

extension Camerad_V1_MovieMetadata {
    init(_ items: [MetadataItem]) {
        self.init()
        for item in items {
            switch item.identifier {
            case .quickTimeMetadataLocationISO6709: locationIso6709 = item.value
            case .quickTimeMetadataMake: make = item.value
            case .quickTimeMetadataModel: model = item.value
            case .quickTimeMetadataCreationDate: creationDate = item.value
            default: break
            }
        }
    }
}

/// A recording's delegate as the output holds it: called only on the output's
/// serial queue, one call at a time (AVFoundation's contract), so carried
/// between threads unchecked — the adopter need not be `Sendable`.
struct RecordingDelegateBox: @unchecked Sendable {
    let delegate: any CaptureFileOutputRecordingDelegate

    func didStart(_ output: CaptureFileOutput, _ url: URL, _ connections: [CaptureConnection]) {
        delegate.fileOutput(output, didStartRecordingTo: url, from: connections)
    }

    func didFinish(_ output: CaptureFileOutput, _ url: URL, _ connections: [CaptureConnection], _ error: (any Error)?) {
        delegate.fileOutput(output, didFinishRecordingTo: url, from: connections, error: error)
    }
}
