from camerad.v1 import device_pb2 as _device_pb2
from camerad.v1 import stream_pb2 as _stream_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
FILE_SYNC_EVERY_FRAGMENT: FileSync
FILE_SYNC_INTERVAL: FileSync
FILE_SYNC_NONE: FileSync
FILE_SYNC_UNSPECIFIED: FileSync
FILE_TYPE_MATROSKA: FileType
FILE_TYPE_MOV: FileType
FILE_TYPE_MP4: FileType
FILE_TYPE_UNSPECIFIED: FileType
RECORDING_ENDING_DEVICE_WAS_DISCONNECTED: RecordingEnding
RECORDING_ENDING_DISK_FULL: RecordingEnding
RECORDING_ENDING_FAILED: RecordingEnding
RECORDING_ENDING_MAXIMUM_DURATION_REACHED: RecordingEnding
RECORDING_ENDING_MAXIMUM_FILE_SIZE_REACHED: RecordingEnding
RECORDING_ENDING_SESSION_WAS_INTERRUPTED: RecordingEnding
RECORDING_ENDING_STOPPED: RecordingEnding
RECORDING_ENDING_UNSPECIFIED: RecordingEnding
VIDEO_CODEC_H264: VideoCodec
VIDEO_CODEC_MJPEG: VideoCodec
VIDEO_CODEC_UNSPECIFIED: VideoCodec

class AudioRecordingSettings(_message.Message):
    __slots__ = ["average_bit_rate", "channels", "sample_rate"]
    AVERAGE_BIT_RATE_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    average_bit_rate: int
    channels: int
    sample_rate: int
    def __init__(self, sample_rate: _Optional[int] = ..., channels: _Optional[int] = ..., average_bit_rate: _Optional[int] = ...) -> None: ...

class FileHandedOver(_message.Message):
    __slots__ = ["figures", "start_time_ns"]
    FIGURES_FIELD_NUMBER: _ClassVar[int]
    START_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    figures: RecordingFigures
    start_time_ns: int
    def __init__(self, figures: _Optional[_Union[RecordingFigures, _Mapping]] = ..., start_time_ns: _Optional[int] = ...) -> None: ...

class MovieMetadata(_message.Message):
    __slots__ = ["creation_date", "location_iso6709", "make", "model"]
    CREATION_DATE_FIELD_NUMBER: _ClassVar[int]
    LOCATION_ISO6709_FIELD_NUMBER: _ClassVar[int]
    MAKE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    creation_date: str
    location_iso6709: str
    make: str
    model: str
    def __init__(self, location_iso6709: _Optional[str] = ..., creation_date: _Optional[str] = ..., make: _Optional[str] = ..., model: _Optional[str] = ...) -> None: ...

class NextFile(_message.Message):
    __slots__ = ["fd_index"]
    FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    fd_index: int
    def __init__(self, fd_index: _Optional[int] = ...) -> None: ...

class RecordRequest(_message.Message):
    __slots__ = ["next_file", "start", "stop"]
    NEXT_FILE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    next_file: NextFile
    start: StartRecording
    stop: StopRecording
    def __init__(self, start: _Optional[_Union[StartRecording, _Mapping]] = ..., stop: _Optional[_Union[StopRecording, _Mapping]] = ..., next_file: _Optional[_Union[NextFile, _Mapping]] = ...) -> None: ...

class RecordResponse(_message.Message):
    __slots__ = ["finished", "handed_over", "progress", "started"]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    HANDED_OVER_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    finished: RecordingFinished
    handed_over: FileHandedOver
    progress: RecordingFigures
    started: RecordingStarted
    def __init__(self, started: _Optional[_Union[RecordingStarted, _Mapping]] = ..., progress: _Optional[_Union[RecordingFigures, _Mapping]] = ..., finished: _Optional[_Union[RecordingFinished, _Mapping]] = ..., handed_over: _Optional[_Union[FileHandedOver, _Mapping]] = ...) -> None: ...

class RecordingFigures(_message.Message):
    __slots__ = ["bytes", "duration_ns", "file_syncs", "frames", "frames_dropped", "longest_sync_ns", "sound_packets_dropped"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    FILE_SYNCS_FIELD_NUMBER: _ClassVar[int]
    FRAMES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    LONGEST_SYNC_NS_FIELD_NUMBER: _ClassVar[int]
    SOUND_PACKETS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    duration_ns: int
    file_syncs: int
    frames: int
    frames_dropped: int
    longest_sync_ns: int
    sound_packets_dropped: int
    def __init__(self, duration_ns: _Optional[int] = ..., bytes: _Optional[int] = ..., frames: _Optional[int] = ..., frames_dropped: _Optional[int] = ..., sound_packets_dropped: _Optional[int] = ..., file_syncs: _Optional[int] = ..., longest_sync_ns: _Optional[int] = ...) -> None: ...

class RecordingFinished(_message.Message):
    __slots__ = ["ending", "figures", "message", "successfully_finished"]
    ENDING_FIELD_NUMBER: _ClassVar[int]
    FIGURES_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SUCCESSFULLY_FINISHED_FIELD_NUMBER: _ClassVar[int]
    ending: RecordingEnding
    figures: RecordingFigures
    message: str
    successfully_finished: bool
    def __init__(self, ending: _Optional[_Union[RecordingEnding, str]] = ..., successfully_finished: bool = ..., figures: _Optional[_Union[RecordingFigures, _Mapping]] = ..., message: _Optional[str] = ...) -> None: ...

class RecordingStarted(_message.Message):
    __slots__ = ["encoder_recordings", "frame_rate", "height", "pre_roll_ns", "start_time_ns", "width"]
    ENCODER_RECORDINGS_FIELD_NUMBER: _ClassVar[int]
    FRAME_RATE_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    PRE_ROLL_NS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    encoder_recordings: int
    frame_rate: int
    height: int
    pre_roll_ns: int
    start_time_ns: int
    width: int
    def __init__(self, width: _Optional[int] = ..., height: _Optional[int] = ..., frame_rate: _Optional[int] = ..., encoder_recordings: _Optional[int] = ..., start_time_ns: _Optional[int] = ..., pre_roll_ns: _Optional[int] = ...) -> None: ...

class StartRecording(_message.Message):
    __slots__ = ["audio", "audio_unique_id", "fd_index", "file_type", "max_duration_ns", "max_file_size", "metadata", "min_free_disk_space", "mirrored", "movie_fragment_interval_ns", "orientation", "pre_roll_ns", "preset", "sync", "sync_interval_ns", "unique_id", "video"]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    AUDIO_UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    FILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    MAX_DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MIN_FREE_DISK_SPACE_FIELD_NUMBER: _ClassVar[int]
    MIRRORED_FIELD_NUMBER: _ClassVar[int]
    MOVIE_FRAGMENT_INTERVAL_NS_FIELD_NUMBER: _ClassVar[int]
    ORIENTATION_FIELD_NUMBER: _ClassVar[int]
    PRESET_FIELD_NUMBER: _ClassVar[int]
    PRE_ROLL_NS_FIELD_NUMBER: _ClassVar[int]
    SYNC_FIELD_NUMBER: _ClassVar[int]
    SYNC_INTERVAL_NS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    VIDEO_FIELD_NUMBER: _ClassVar[int]
    audio: AudioRecordingSettings
    audio_unique_id: str
    fd_index: int
    file_type: FileType
    max_duration_ns: int
    max_file_size: int
    metadata: MovieMetadata
    min_free_disk_space: int
    mirrored: bool
    movie_fragment_interval_ns: int
    orientation: _stream_pb2.VideoOrientation
    pre_roll_ns: int
    preset: _device_pb2.SessionPreset
    sync: FileSync
    sync_interval_ns: int
    unique_id: str
    video: VideoRecordingSettings
    def __init__(self, unique_id: _Optional[str] = ..., audio_unique_id: _Optional[str] = ..., file_type: _Optional[_Union[FileType, str]] = ..., video: _Optional[_Union[VideoRecordingSettings, _Mapping]] = ..., fd_index: _Optional[int] = ..., max_duration_ns: _Optional[int] = ..., max_file_size: _Optional[int] = ..., min_free_disk_space: _Optional[int] = ..., movie_fragment_interval_ns: _Optional[int] = ..., metadata: _Optional[_Union[MovieMetadata, _Mapping]] = ..., pre_roll_ns: _Optional[int] = ..., sync: _Optional[_Union[FileSync, str]] = ..., sync_interval_ns: _Optional[int] = ..., preset: _Optional[_Union[_device_pb2.SessionPreset, str]] = ..., orientation: _Optional[_Union[_stream_pb2.VideoOrientation, str]] = ..., mirrored: bool = ..., audio: _Optional[_Union[AudioRecordingSettings, _Mapping]] = ...) -> None: ...

class StopRecording(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class VideoRecordingSettings(_message.Message):
    __slots__ = ["average_bit_rate", "codec", "frame_rate", "height", "max_key_frame_interval", "width"]
    AVERAGE_BIT_RATE_FIELD_NUMBER: _ClassVar[int]
    CODEC_FIELD_NUMBER: _ClassVar[int]
    FRAME_RATE_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    MAX_KEY_FRAME_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    average_bit_rate: int
    codec: VideoCodec
    frame_rate: int
    height: int
    max_key_frame_interval: int
    width: int
    def __init__(self, codec: _Optional[_Union[VideoCodec, str]] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., frame_rate: _Optional[int] = ..., average_bit_rate: _Optional[int] = ..., max_key_frame_interval: _Optional[int] = ...) -> None: ...

class FileType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class VideoCodec(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class FileSync(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RecordingEnding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
