import SwiftProtobuf

// The range of every number a request may carry, checked as the request is
// decoded (``CheckedMessage``): one table for every request message and the
// messages inside them. A range holds what any camerad could mean by the field
// (0 among it: proto3's "unset"); what a device or a setting allows besides
// (a camera's sizes, a control's range) is checked where it is known, with
// the device's own words. `Protos/README.md` lists the ranges;
// `RequestExtremesTests` sends every field the extremes of its type and
// checks each number outside its range is refused naming its field.

private let int64Max = Int128(Int64.max)
private let anHourOfNanoseconds: Int128 = 3_600_000_000_000
/// The longest pre-roll a recording may ask for (`PacketHistory.span` keeps that much).
public let maxPreRollNanoseconds: Int64 = 10_000_000_000

// MARK: - Shared messages

extension Camerad_V1_Fraction: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.anyInteger("numerator", \.numerator), .anyInteger("denominator", \.denominator)]
    }
}

extension Camerad_V1_Point: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.real("x", \.x, 0...1, "0 is the left edge, 1 the right"), .real("y", \.y, 0...1, "0 is the top, 1 the bottom")]
    }
}

extension Camerad_V1_FrameRateRange: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.message("min_frame_duration", \.minFrameDuration), .message("max_frame_duration", \.maxFrameDuration)]
    }
}

extension Camerad_V1_Format: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.anyInteger("fourcc", \.fourcc),
         .integer("width", \.width, 0...65535, "pixels"), .integer("height", \.height, 0...65535, "pixels"),
         .messages("frame_rate_ranges", \.frameRateRanges)]
    }
}

// MARK: - Calls

extension Camerad_V1_HelloRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [.anyInteger("protocol_version", \.protocolVersion)] }
}

extension Camerad_V1_DeviceFilter: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.enumerations("device_types", \.deviceTypes), .enumeration("media_type", \.mediaType), .enumeration("position", \.position)]
    }
}

extension Camerad_V1_ListDevicesRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [.message("filter", \.filter)] }
}

extension Camerad_V1_GetDeviceRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [] }
}

extension Camerad_V1_WatchDevicesRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [] }
}

extension Camerad_V1_AddVirtualCameraRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.integer("index", \.index, 0...63, "virtual-0 to virtual-63"),
         .enumeration("position", \.position),
         .anyInteger("fourcc", \.fourcc),
         .integer("width", \.width, 0...65535, "pixels"), .integer("height", \.height, 0...65535, "pixels"),
         .message("frame_duration", \.frameDuration),
         .enumeration("media_type", \.mediaType),
         .real("tone_amplitude", \.toneAmplitude, 0...1, "of full scale"),
         .integer("drift_ppm", \.driftPpm, -10_000...10_000, "ppm of CLOCK_MONOTONIC; 0, on it")]
    }
}

extension Camerad_V1_RemoveVirtualCameraRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [] }
}

extension Camerad_V1_PingRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.anyInteger("sequence", \.sequence), .anyInteger("client_time_ns", \.clientTimeNs)]
    }
}

extension Camerad_V1_OutputSettings: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.enumeration("pixel_format", \.pixelFormat),
         .integer("width", \.width, 0...65535, "pixels"), .integer("height", \.height, 0...65535, "pixels"),
         .message("min_frame_duration", \.minFrameDuration),
         .enumeration("orientation", \.orientation),
         .enumeration("delivery", \.delivery),
         .integer("max_frames_in_flight", \.maxFramesInFlight, 0...64, "0 for the default; a device allows fewer")]
    }
}

extension Camerad_V1_AudioFormat: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.integer("sample_rate", \.sampleRate, 0...768_000, "Hz; 0 for the microphone's"),
         .integer("channels", \.channels, 0...64, "0 for the microphone's"),
         .enumeration("sample_format", \.sampleFormat),
         .integer("period_frames", \.periodFrames, 0...1_048_576, "frames a period; 0 for 10 ms")]
    }
}

extension Camerad_V1_OpenStream: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.message("settings", \.settings), .enumeration("preset", \.preset), .message("audio", \.audio)]
    }
}

extension Camerad_V1_ReleaseFrames: CheckedMessage {
    /// Any pool and slot: a stream's releases are checked against what it holds.
    public static var fieldChecks: [FieldCheck<Self>] { [.anyInteger("pool_id", \.poolID), .anyIntegers("slots", \.slots)] }
}

extension Camerad_V1_StreamRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [.message("open", \.open), .message("release", \.release)] }
}

extension Camerad_V1_GetDeviceStatisticsRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [] }
}

extension Camerad_V1_LockForConfigurationRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [.integer("wait_ms", \.waitMs, 0...3_600_000, "an hour at most")] }
}

extension Camerad_V1_UnlockForConfigurationRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [] }
}

extension Camerad_V1_ControlValue: CheckedMessage {
    /// Any value: each control's own range is checked against the device's.
    public static var fieldChecks: [FieldCheck<Self>] { [.anyInteger("id", \.id), .anyInteger("value", \.value)] }
}

extension Camerad_V1_DeviceConfiguration: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.message("active_format", \.activeFormat),
         .message("active_min_frame_duration", \.activeMinFrameDuration),
         .message("active_max_frame_duration", \.activeMaxFrameDuration),
         .enumeration("focus_mode", \.focusMode),
         .real("lens_position", \.lensPosition, 0...1, "0 is the nearest, 1 the farthest"),
         .message("focus_point_of_interest", \.focusPointOfInterest),
         .enumeration("exposure_mode", \.exposureMode),
         .message("exposure_duration", \.exposureDuration),
         .real("iso", \.iso, 0...1_000_000, "ISO"),
         .message("exposure_point_of_interest", \.exposurePointOfInterest),
         .enumeration("white_balance_mode", \.whiteBalanceMode),
         .real("white_balance_temperature", \.whiteBalanceTemperature, 0...100_000, "kelvin"),
         .enumeration("torch_mode", \.torchMode),
         .real("torch_level", \.torchLevel, 0...1, "of full brightness"),
         .real("video_zoom_factor", \.videoZoomFactor, 0...1_000, "1 is no zoom"),
         .messages("controls", \.controls),
         .real("input_gain", \.inputGain, 0...1, "of the capture volume's range")]
    }
}

extension Camerad_V1_ConfigureDeviceRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [.message("configuration", \.configuration)] }
}

extension Camerad_V1_PhotoSettings: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.enumeration("codec", \.codec),
         .integer("quality", \.quality, 0...100, "0 for the default"),
         .enumeration("flash_mode", \.flashMode),
         .integer("max_width", \.maxWidth, 0...65535, "pixels"), .integer("max_height", \.maxHeight, 0...65535, "pixels"),
         .enumeration("orientation", \.orientation)]
    }
}

extension Camerad_V1_CapturePhotoRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [.message("settings", \.settings)] }
}

extension Camerad_V1_WatchAudioLevelsRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [] }
}

extension Camerad_V1_VideoRecordingSettings: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.enumeration("codec", \.codec),
         .integer("width", \.width, 0...7680, "pixels; 0 for the preset's, else the camera's"), .integer("height", \.height, 0...4320, "pixels; 0 for the preset's, else the camera's"),
         .integer("frame_rate", \.frameRate, 0...240, "frames a second; 0 for the camera's"),
         .integer("average_bit_rate", \.averageBitRate, 0...800_000_000, "bits a second; 0 for a constant quality"),
         .integer("max_key_frame_interval", \.maxKeyFrameInterval, 0...1_000_000, "frames; 0 for the encoder's choice")]
    }
}

extension Camerad_V1_AudioRecordingSettings: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.integer("sample_rate", \.sampleRate, 0...96_000, "Hz, 8000 or more; 0 for the microphone's"),
         .integer("channels", \.channels, 0...2, "1 or 2; 0 for the microphone's"),
         .integer("average_bit_rate", \.averageBitRate, 0...512_000, "bits a second, 8000 or more; 0 for 128000")]
    }
}

extension Camerad_V1_MovieMetadata: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [] }
}

extension Camerad_V1_StartRecording: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.enumeration("file_type", \.fileType),
         .message("video", \.video),
         .anyInteger("fd_index", \.fdIndex),
         .integer("max_duration_ns", \.maxDurationNs, 0...int64Max, "0 for none"),
         .integer("max_file_size", \.maxFileSize, 0...int64Max, "bytes; 0 for none"),
         .integer("min_free_disk_space", \.minFreeDiskSpace, 0...int64Max, "bytes; 0 for none"),
         .integer("movie_fragment_interval_ns", \.movieFragmentIntervalNs, 0...anHourOfNanoseconds, "an hour at most; 0 for 10 s"),
         .message("metadata", \.metadata),
         .integer("pre_roll_ns", \.preRollNs, 0...Int128(maxPreRollNanoseconds), "10 s at most"),
         .enumeration("sync", \.sync),
         .integer("sync_interval_ns", \.syncIntervalNs, 0...anHourOfNanoseconds, "1 ms to an hour, with FILE_SYNC_INTERVAL"),
         .enumeration("preset", \.preset),
         .enumeration("orientation", \.orientation),
         .message("audio", \.audio)]
    }
}

extension Camerad_V1_StopRecording: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [] }
}

extension Camerad_V1_NextFile: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] { [.anyInteger("fd_index", \.fdIndex)] }
}

extension Camerad_V1_RecordRequest: CheckedMessage {
    public static var fieldChecks: [FieldCheck<Self>] {
        [.message("start", \.start), .message("stop", \.stop), .message("next_file", \.nextFile)]
    }
}

/// Every message with checks, for the tests that hold the table to the .proto files.
public let checkedMessageTypes: [any CheckedMessage.Type] = [
    Camerad_V1_Fraction.self, Camerad_V1_Point.self, Camerad_V1_FrameRateRange.self, Camerad_V1_Format.self,
    Camerad_V1_HelloRequest.self, Camerad_V1_DeviceFilter.self, Camerad_V1_ListDevicesRequest.self, Camerad_V1_GetDeviceRequest.self,
    Camerad_V1_WatchDevicesRequest.self, Camerad_V1_AddVirtualCameraRequest.self, Camerad_V1_RemoveVirtualCameraRequest.self,
    Camerad_V1_PingRequest.self, Camerad_V1_OutputSettings.self, Camerad_V1_AudioFormat.self, Camerad_V1_OpenStream.self,
    Camerad_V1_ReleaseFrames.self, Camerad_V1_StreamRequest.self, Camerad_V1_GetDeviceStatisticsRequest.self,
    Camerad_V1_LockForConfigurationRequest.self, Camerad_V1_UnlockForConfigurationRequest.self, Camerad_V1_ControlValue.self,
    Camerad_V1_DeviceConfiguration.self, Camerad_V1_ConfigureDeviceRequest.self, Camerad_V1_PhotoSettings.self,
    Camerad_V1_CapturePhotoRequest.self, Camerad_V1_WatchAudioLevelsRequest.self, Camerad_V1_VideoRecordingSettings.self,
    Camerad_V1_AudioRecordingSettings.self, Camerad_V1_MovieMetadata.self, Camerad_V1_StartRecording.self, Camerad_V1_StopRecording.self, Camerad_V1_NextFile.self,
    Camerad_V1_RecordRequest.self,
]
