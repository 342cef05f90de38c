import CameraEncoding
import CameraProtocol
import Foundation

/// The Record call's messages and the recording core's own types
/// (``RecordingRequest``, ``Recordings/Event``): StartRecording read and
/// checked as far as the message alone can say, the events written back.
extension RecordingRequest {
    /// - Throws: INVALID_ARGUMENT for what no device could record: a name too
    ///   long, an unknown enum, a size without both sides, a sync interval
    ///   without its policy, sound settings below AAC's floors, a turned
    ///   picture in a container that holds no display matrix.
    init(_ start: Camerad_V1_StartRecording) throws {
        try RequestLimits.check(name: start.uniqueID, "unique_id")
        uniqueID = start.uniqueID
        if !start.audioUniqueID.isEmpty {
            try RequestLimits.check(name: start.audioUniqueID, "audio_unique_id")
            audioUniqueID = start.audioUniqueID
        }
        preset = try SessionPreset(start.preset)
        video = try Video(start.video)
        audio = try Audio(start.audio)
        display = DisplayTransform(clockwiseDegrees: Self.clockwiseDegrees(start.orientation), mirrored: start.mirrored)
        container = switch start.fileType {
        case .mp4: .mp4
        case .matroska: .matroska
        case .mov, .unspecified, .UNRECOGNIZED: .mov
        }
        guard container.turnsPicture || display == .identity else {
            throw CameraError(.invalidArgument, "a Matroska file holds no display matrix for the orientation or mirroring; "
                              + "record MP4 or MOV, or leave the orientation as it is")
        }
        sync = try Self.fileSync(start)
        // Their ranges, and the pre-roll's, are checked as the message is decoded (RequestRanges.swift).
        if start.maxDurationNs > 0 { limits.maxDurationNanoseconds = start.maxDurationNs }
        if start.maxFileSize > 0 { limits.maxBytes = start.maxFileSize }
        if start.minFreeDiskSpace > 0 { limits.minFreeBytes = start.minFreeDiskSpace }
        if start.movieFragmentIntervalNs > 0 { fragmentInterval = Double(start.movieFragmentIntervalNs) / 1e9 }
        metadata = Self.metadata(start.metadata)
        preRollNanoseconds = start.preRollNs
    }

    /// When the file is made durable, as asked.
    private static func fileSync(_ start: Camerad_V1_StartRecording) throws(CameraError) -> FileSync {
        let sync = try start.sync.known("sync")
        guard sync == .interval || start.syncIntervalNs == 0 else {
            throw CameraError(.invalidArgument, "sync_interval_ns goes with FILE_SYNC_INTERVAL; set that, or leave the interval 0")
        }
        switch sync {
        case .none: return .never
        case .interval:
            guard start.syncIntervalNs >= 1_000_000 else {
                throw CameraError(.invalidArgument, "FILE_SYNC_INTERVAL takes sync_interval_ns of 1 ms to an hour, not \(start.syncIntervalNs)")
            }
            return .interval(nanoseconds: start.syncIntervalNs)
        default: return .everyFragment
        }
    }

    /// How far a movie connection's orientation turns the picture, clockwise (AVCaptureVideoOrientation's meaning).
    private static func clockwiseDegrees(_ orientation: Camerad_V1_VideoOrientation) -> Int {
        switch orientation {
        case .portrait: 90
        case .landscapeLeft: 180
        case .portraitUpsideDown: 270
        case .unspecified, .landscapeRight, .UNRECOGNIZED: 0
        }
    }

    /// The file's tags, as libavformat's mov muxer writes them.
    private static func metadata(_ asked: Camerad_V1_MovieMetadata) -> [String: String] {
        var tags: [String: String] = [:]
        if !asked.locationIso6709.isEmpty { tags["location"] = asked.locationIso6709 }
        tags["creation_time"] = asked.creationDate.isEmpty ? Date().formatted(.iso8601) : asked.creationDate
        if !asked.make.isEmpty { tags["make"] = asked.make }
        if !asked.model.isEmpty { tags["model"] = asked.model }
        return tags
    }
}

extension RecordingRequest.Video {
    init(_ asked: Camerad_V1_VideoRecordingSettings) throws(CameraError) {
        guard asked.width == 0 && asked.height == 0 || asked.width > 0 && asked.height > 0 else {
            throw CameraError(.invalidArgument, "a recording's size needs both width and height (or neither, for the preset's or the camera's)")
        }
        codec = switch try asked.codec.known("codec") {
        case .mjpeg: .mjpeg
        default: .h264
        }
        (width, height, frameRate) = (Int(asked.width), Int(asked.height), Int(asked.frameRate))
        averageBitRate = Int(asked.averageBitRate)
        maxKeyframeInterval = Int(asked.maxKeyFrameInterval)
    }
}

extension RecordingRequest.Audio {
    /// Their ranges are checked as the message is decoded; AAC's floors here.
    init(_ asked: Camerad_V1_AudioRecordingSettings) throws(CameraError) {
        guard asked.sampleRate == 0 || asked.sampleRate >= 8_000 else {
            throw CameraError(.invalidArgument, "audio.sample_rate \(asked.sampleRate) Hz is below AAC's 8000; ask 8000 to 96000, or 0 for the microphone's")
        }
        guard asked.averageBitRate == 0 || asked.averageBitRate >= 8_000 else {
            throw CameraError(.invalidArgument, "audio.average_bit_rate \(asked.averageBitRate) is below 8000 bits a second; ask 8000 to 512000, or 0 for 128000")
        }
        (sampleRate, channels, averageBitRate) = (Int(asked.sampleRate), Int(asked.channels), Int(asked.averageBitRate))
    }
}

extension Camerad_V1_RecordingStarted {
    init(_ started: Recordings.Started) {
        self.init()
        width = UInt32(started.width)
        height = UInt32(started.height)
        frameRate = UInt32(started.frameRate)
        encoderRecordings = UInt32(started.encoderRecordings)
        startTimeNs = started.startTimeNanoseconds
        preRollNs = started.preRollNanoseconds
    }
}

extension Camerad_V1_RecordingFinished {
    init(_ ending: MovieRecorder.Ending, _ figures: MovieRecorder.Figures) {
        self.init()
        self.ending = switch ending {
        case .stopped: .stopped
        case .maximumDurationReached: .maximumDurationReached
        case .maximumFileSizeReached: .maximumFileSizeReached
        case .diskFull: .diskFull
        case .interrupted(let error): error.code == .deviceDisconnected ? .deviceWasDisconnected : .sessionWasInterrupted
        case .failed: .failed
        }
        successfullyFinished = ending.recordingSuccessfullyFinished
        self.figures = Camerad_V1_RecordingFigures(figures)
        switch ending {
        case .stopped: message = ""
        case .maximumDurationReached: message = "the recording reached its maximum duration"
        case .maximumFileSizeReached: message = "the recording reached its maximum file size"
        case .diskFull: message = "the disk is full (or under the free space asked for); the file plays up to here"
        case .interrupted(let error), .failed(let error): message = error.message
        }
    }
}

extension Camerad_V1_RecordingFigures {
    init(_ figures: MovieRecorder.Figures) {
        self.init()
        durationNs = figures.durationNanoseconds
        bytes = figures.bytes
        frames = UInt64(figures.packets)
        framesDropped = UInt64(figures.packetsDropped)
        soundPacketsDropped = UInt64(figures.soundPacketsDropped)
        fileSyncs = UInt64(figures.fileSyncs)
        longestSyncNs = figures.longestSyncNanoseconds
    }
}
