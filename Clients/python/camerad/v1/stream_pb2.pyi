from camerad.v1 import device_pb2 as _device_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DELIVERY_INLINE: Delivery
DELIVERY_SHARED_MEMORY: Delivery
DESCRIPTOR: _descriptor.FileDescriptor
DROP_REASON_DISCONTINUITY: DropReason
DROP_REASON_FRAME_WAS_LATE: DropReason
DROP_REASON_OUT_OF_BUFFERS: DropReason
DROP_REASON_UNSPECIFIED: DropReason
INTERRUPTION_REASON_DEVICE_DISCONNECTED: InterruptionReason
INTERRUPTION_REASON_DEVICE_FAILED: InterruptionReason
INTERRUPTION_REASON_SHUTTING_DOWN: InterruptionReason
INTERRUPTION_REASON_UNSPECIFIED: InterruptionReason
OUTPUT_PIXEL_FORMAT_ARGB: OutputPixelFormat
OUTPUT_PIXEL_FORMAT_BGRA: OutputPixelFormat
OUTPUT_PIXEL_FORMAT_I420: OutputPixelFormat
OUTPUT_PIXEL_FORMAT_NATIVE: OutputPixelFormat
OUTPUT_PIXEL_FORMAT_NV12: OutputPixelFormat
OUTPUT_PIXEL_FORMAT_NV12_FULL_RANGE: OutputPixelFormat
OUTPUT_PIXEL_FORMAT_YUYV: OutputPixelFormat
VIDEO_ORIENTATION_LANDSCAPE_LEFT: VideoOrientation
VIDEO_ORIENTATION_LANDSCAPE_RIGHT: VideoOrientation
VIDEO_ORIENTATION_PORTRAIT: VideoOrientation
VIDEO_ORIENTATION_PORTRAIT_UPSIDE_DOWN: VideoOrientation
VIDEO_ORIENTATION_UNSPECIFIED: VideoOrientation

class DeviceStatistics(_message.Message):
    __slots__ = ["capturing", "frames_captured", "streams", "unique_id", "variants"]
    CAPTURING_FIELD_NUMBER: _ClassVar[int]
    FRAMES_CAPTURED_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    VARIANTS_FIELD_NUMBER: _ClassVar[int]
    capturing: bool
    frames_captured: int
    streams: int
    unique_id: str
    variants: _containers.RepeatedCompositeFieldContainer[VariantStatistics]
    def __init__(self, unique_id: _Optional[str] = ..., capturing: bool = ..., frames_captured: _Optional[int] = ..., streams: _Optional[int] = ..., variants: _Optional[_Iterable[_Union[VariantStatistics, _Mapping]]] = ...) -> None: ...

class FormatChanged(_message.Message):
    __slots__ = ["device", "frame_duration", "note", "pool"]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    device: _device_pb2.Device
    frame_duration: _device_pb2.Fraction
    note: str
    pool: FramePool
    def __init__(self, pool: _Optional[_Union[FramePool, _Mapping]] = ..., device: _Optional[_Union[_device_pb2.Device, _Mapping]] = ..., frame_duration: _Optional[_Union[_device_pb2.Fraction, _Mapping]] = ..., note: _Optional[str] = ...) -> None: ...

class FramePool(_message.Message):
    __slots__ = ["audio", "compressed", "fd_index", "fourcc", "full_range", "height", "planes", "pool_id", "shared", "slot_count", "slot_size", "slots", "width"]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    COMPRESSED_FIELD_NUMBER: _ClassVar[int]
    FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    FOURCC_FIELD_NUMBER: _ClassVar[int]
    FULL_RANGE_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    PLANES_FIELD_NUMBER: _ClassVar[int]
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    SLOT_COUNT_FIELD_NUMBER: _ClassVar[int]
    SLOT_SIZE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    audio: _device_pb2.AudioFormat
    compressed: bool
    fd_index: int
    fourcc: int
    full_range: bool
    height: int
    planes: _containers.RepeatedCompositeFieldContainer[PlaneInfo]
    pool_id: int
    shared: bool
    slot_count: int
    slot_size: int
    slots: _containers.RepeatedCompositeFieldContainer[SlotLocation]
    width: int
    def __init__(self, pool_id: _Optional[int] = ..., fd_index: _Optional[int] = ..., slot_size: _Optional[int] = ..., slot_count: _Optional[int] = ..., fourcc: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., planes: _Optional[_Iterable[_Union[PlaneInfo, _Mapping]]] = ..., compressed: bool = ..., shared: bool = ..., slots: _Optional[_Iterable[_Union[SlotLocation, _Mapping]]] = ..., full_range: bool = ..., audio: _Optional[_Union[_device_pb2.AudioFormat, _Mapping]] = ...) -> None: ...

class FrameReady(_message.Message):
    __slots__ = ["bytes_used", "data", "duration_ns", "planes", "pool_id", "presentation_time_ns", "sequence", "slot"]
    BYTES_USED_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    PLANES_FIELD_NUMBER: _ClassVar[int]
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    PRESENTATION_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    bytes_used: int
    data: bytes
    duration_ns: int
    planes: _containers.RepeatedCompositeFieldContainer[PlaneInfo]
    pool_id: int
    presentation_time_ns: int
    sequence: int
    slot: int
    def __init__(self, pool_id: _Optional[int] = ..., slot: _Optional[int] = ..., sequence: _Optional[int] = ..., presentation_time_ns: _Optional[int] = ..., duration_ns: _Optional[int] = ..., bytes_used: _Optional[int] = ..., planes: _Optional[_Iterable[_Union[PlaneInfo, _Mapping]]] = ..., data: _Optional[bytes] = ...) -> None: ...

class FrameRing(_message.Message):
    __slots__ = ["capacity", "fd_index", "signal_fd_index"]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    capacity: int
    fd_index: int
    signal_fd_index: int
    def __init__(self, fd_index: _Optional[int] = ..., capacity: _Optional[int] = ..., signal_fd_index: _Optional[int] = ...) -> None: ...

class FramesDropped(_message.Message):
    __slots__ = ["count", "last_sequence", "reason"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    count: int
    last_sequence: int
    reason: DropReason
    def __init__(self, reason: _Optional[_Union[DropReason, str]] = ..., count: _Optional[int] = ..., last_sequence: _Optional[int] = ...) -> None: ...

class GetDeviceStatisticsRequest(_message.Message):
    __slots__ = ["unique_id"]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ...) -> None: ...

class OpenStream(_message.Message):
    __slots__ = ["audio", "preset", "settings", "unique_id"]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    PRESET_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    audio: _device_pb2.AudioFormat
    preset: _device_pb2.SessionPreset
    settings: OutputSettings
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ..., settings: _Optional[_Union[OutputSettings, _Mapping]] = ..., preset: _Optional[_Union[_device_pb2.SessionPreset, str]] = ..., audio: _Optional[_Union[_device_pb2.AudioFormat, _Mapping]] = ...) -> None: ...

class OutputSettings(_message.Message):
    __slots__ = ["always_discards_late_video_frames", "delivery", "frame_ring", "height", "max_frames_in_flight", "min_frame_duration", "mirrored", "orientation", "pixel_format", "release_ring", "width"]
    ALWAYS_DISCARDS_LATE_VIDEO_FRAMES_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    FRAME_RING_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    MAX_FRAMES_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    MIN_FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    MIRRORED_FIELD_NUMBER: _ClassVar[int]
    ORIENTATION_FIELD_NUMBER: _ClassVar[int]
    PIXEL_FORMAT_FIELD_NUMBER: _ClassVar[int]
    RELEASE_RING_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    always_discards_late_video_frames: bool
    delivery: Delivery
    frame_ring: bool
    height: int
    max_frames_in_flight: int
    min_frame_duration: _device_pb2.Fraction
    mirrored: bool
    orientation: VideoOrientation
    pixel_format: OutputPixelFormat
    release_ring: bool
    width: int
    def __init__(self, pixel_format: _Optional[_Union[OutputPixelFormat, str]] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., min_frame_duration: _Optional[_Union[_device_pb2.Fraction, _Mapping]] = ..., orientation: _Optional[_Union[VideoOrientation, str]] = ..., mirrored: bool = ..., always_discards_late_video_frames: bool = ..., delivery: _Optional[_Union[Delivery, str]] = ..., max_frames_in_flight: _Optional[int] = ..., release_ring: bool = ..., frame_ring: bool = ...) -> None: ...

class PlaneInfo(_message.Message):
    __slots__ = ["bytes_per_row", "height", "offset"]
    BYTES_PER_ROW_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    bytes_per_row: int
    height: int
    offset: int
    def __init__(self, offset: _Optional[int] = ..., bytes_per_row: _Optional[int] = ..., height: _Optional[int] = ...) -> None: ...

class ReleaseFrames(_message.Message):
    __slots__ = ["pool_id", "slots"]
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    pool_id: int
    slots: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, pool_id: _Optional[int] = ..., slots: _Optional[_Iterable[int]] = ...) -> None: ...

class ReleaseRing(_message.Message):
    __slots__ = ["capacity", "fd_index"]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    capacity: int
    fd_index: int
    def __init__(self, fd_index: _Optional[int] = ..., capacity: _Optional[int] = ...) -> None: ...

class SlotLocation(_message.Message):
    __slots__ = ["fd_index", "offset"]
    FD_INDEX_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    fd_index: int
    offset: int
    def __init__(self, fd_index: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class StreamInterrupted(_message.Message):
    __slots__ = ["message", "reason"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    message: str
    reason: InterruptionReason
    def __init__(self, reason: _Optional[_Union[InterruptionReason, str]] = ..., message: _Optional[str] = ...) -> None: ...

class StreamRequest(_message.Message):
    __slots__ = ["open", "release"]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    open: OpenStream
    release: ReleaseFrames
    def __init__(self, open: _Optional[_Union[OpenStream, _Mapping]] = ..., release: _Optional[_Union[ReleaseFrames, _Mapping]] = ...) -> None: ...

class StreamResponse(_message.Message):
    __slots__ = ["dropped", "format_changed", "frame", "interrupted", "started"]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    FORMAT_CHANGED_FIELD_NUMBER: _ClassVar[int]
    FRAME_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTED_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    dropped: FramesDropped
    format_changed: FormatChanged
    frame: FrameReady
    interrupted: StreamInterrupted
    started: StreamStarted
    def __init__(self, started: _Optional[_Union[StreamStarted, _Mapping]] = ..., frame: _Optional[_Union[FrameReady, _Mapping]] = ..., dropped: _Optional[_Union[FramesDropped, _Mapping]] = ..., format_changed: _Optional[_Union[FormatChanged, _Mapping]] = ..., interrupted: _Optional[_Union[StreamInterrupted, _Mapping]] = ...) -> None: ...

class StreamStarted(_message.Message):
    __slots__ = ["device", "frame_duration", "frame_ring", "note", "pool", "release_ring"]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    FRAME_RING_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    RELEASE_RING_FIELD_NUMBER: _ClassVar[int]
    device: _device_pb2.Device
    frame_duration: _device_pb2.Fraction
    frame_ring: FrameRing
    note: str
    pool: FramePool
    release_ring: ReleaseRing
    def __init__(self, pool: _Optional[_Union[FramePool, _Mapping]] = ..., device: _Optional[_Union[_device_pb2.Device, _Mapping]] = ..., frame_duration: _Optional[_Union[_device_pb2.Fraction, _Mapping]] = ..., note: _Optional[str] = ..., release_ring: _Optional[_Union[ReleaseRing, _Mapping]] = ..., frame_ring: _Optional[_Union[FrameRing, _Mapping]] = ...) -> None: ...

class VariantStatistics(_message.Message):
    __slots__ = ["conversions", "fourcc", "frames_copied", "frames_shared", "frames_skipped", "height", "mirrored", "pool_id", "rotation_degrees", "slot_count", "slots_in_use", "streams", "width"]
    CONVERSIONS_FIELD_NUMBER: _ClassVar[int]
    FOURCC_FIELD_NUMBER: _ClassVar[int]
    FRAMES_COPIED_FIELD_NUMBER: _ClassVar[int]
    FRAMES_SHARED_FIELD_NUMBER: _ClassVar[int]
    FRAMES_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    MIRRORED_FIELD_NUMBER: _ClassVar[int]
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    ROTATION_DEGREES_FIELD_NUMBER: _ClassVar[int]
    SLOTS_IN_USE_FIELD_NUMBER: _ClassVar[int]
    SLOT_COUNT_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    conversions: int
    fourcc: int
    frames_copied: int
    frames_shared: int
    frames_skipped: int
    height: int
    mirrored: bool
    pool_id: int
    rotation_degrees: int
    slot_count: int
    slots_in_use: int
    streams: int
    width: int
    def __init__(self, pool_id: _Optional[int] = ..., fourcc: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., rotation_degrees: _Optional[int] = ..., mirrored: bool = ..., streams: _Optional[int] = ..., slot_count: _Optional[int] = ..., slots_in_use: _Optional[int] = ..., conversions: _Optional[int] = ..., frames_skipped: _Optional[int] = ..., frames_shared: _Optional[int] = ..., frames_copied: _Optional[int] = ...) -> None: ...

class OutputPixelFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class VideoOrientation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Delivery(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DropReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class InterruptionReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
