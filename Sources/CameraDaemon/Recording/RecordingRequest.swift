import CameraEncoding

/// What a recording asks for, in camerad's own terms: the Record call's
/// StartRecording as the handlers' edge reads it
/// (`Handlers/RecordingMapping.swift`), each field already checked as far as
/// the message alone can say; what needs the devices (their modes, a
/// microphone's layout) is checked by ``Recordings/start(_:descriptor:for:events:)``.
struct RecordingRequest: Sendable {
    /// The camera's uniqueID.
    var uniqueID: String
    /// The microphone's, for sound; nil: none.
    var audioUniqueID: String?
    /// The session's preset: the picture's size when none is asked, and the mode an idle camera starts in.
    var preset = SessionPreset.inputPriority
    var video = Video()
    var audio = Audio()
    var container = MovieWriter.Container.mov
    /// How players are to turn the picture: the movie connection's orientation and mirroring.
    var display = DisplayTransform.identity
    var sync = FileSync.everyFragment
    /// Its duration, size and free-space limits (each file's; nil: none).
    var limits = MovieRecorder.Limits()
    /// Seconds between two fragments (MP4, MOV) or clusters (Matroska).
    var fragmentInterval = 10.0
    /// The file's tags, as libavformat's muxers name them.
    var metadata: [String: String] = [:]
    /// How far before the call its file starts (a pre-roll); 0: at the call.
    var preRollNanoseconds: Int64 = 0

    /// The picture asked for; 0: what the camera, the preset or the codec gives.
    struct Video: Sendable {
        enum Codec: Sendable {
            case h264
            /// The camera's own JPEGs, none encoded.
            case mjpeg
        }

        var codec = Codec.h264
        var width = 0
        var height = 0
        var frameRate = 0
        /// Bits a second; 0: constant quality.
        var averageBitRate = 0
        /// Frames from one keyframe to the next; 0: two seconds' worth.
        var maxKeyframeInterval = 0
    }

    /// The sound asked for (AAC); 0: the microphone's rate, up to two of its channels, 128 kbit/s.
    struct Audio: Sendable {
        var sampleRate = 0
        var channels = 0
        var averageBitRate = 0
    }
}
