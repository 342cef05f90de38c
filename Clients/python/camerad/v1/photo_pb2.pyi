from camerad.v1 import device_pb2 as _device_pb2
from camerad.v1 import stream_pb2 as _stream_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
PHOTO_CODEC_BGRA: PhotoCodec
PHOTO_CODEC_JPEG: PhotoCodec
PHOTO_CODEC_NV12: PhotoCodec

class CapturePhotoRequest(_message.Message):
    __slots__ = ["settings", "unique_id"]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    settings: PhotoSettings
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ..., settings: _Optional[_Union[PhotoSettings, _Mapping]] = ...) -> None: ...

class CapturePhotoResponse(_message.Message):
    __slots__ = ["data", "flash_fired", "fourcc", "height", "note", "passed_through", "planes", "presentation_time_ns", "sequence", "width"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FLASH_FIRED_FIELD_NUMBER: _ClassVar[int]
    FOURCC_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    PASSED_THROUGH_FIELD_NUMBER: _ClassVar[int]
    PLANES_FIELD_NUMBER: _ClassVar[int]
    PRESENTATION_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    flash_fired: bool
    fourcc: int
    height: int
    note: str
    passed_through: bool
    planes: _containers.RepeatedCompositeFieldContainer[_stream_pb2.PlaneInfo]
    presentation_time_ns: int
    sequence: int
    width: int
    def __init__(self, data: _Optional[bytes] = ..., fourcc: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., planes: _Optional[_Iterable[_Union[_stream_pb2.PlaneInfo, _Mapping]]] = ..., sequence: _Optional[int] = ..., presentation_time_ns: _Optional[int] = ..., flash_fired: bool = ..., passed_through: bool = ..., note: _Optional[str] = ...) -> None: ...

class PhotoSettings(_message.Message):
    __slots__ = ["codec", "flash_mode", "max_height", "max_width", "mirrored", "orientation", "quality"]
    CODEC_FIELD_NUMBER: _ClassVar[int]
    FLASH_MODE_FIELD_NUMBER: _ClassVar[int]
    MAX_HEIGHT_FIELD_NUMBER: _ClassVar[int]
    MAX_WIDTH_FIELD_NUMBER: _ClassVar[int]
    MIRRORED_FIELD_NUMBER: _ClassVar[int]
    ORIENTATION_FIELD_NUMBER: _ClassVar[int]
    QUALITY_FIELD_NUMBER: _ClassVar[int]
    codec: PhotoCodec
    flash_mode: _device_pb2.FlashMode
    max_height: int
    max_width: int
    mirrored: bool
    orientation: _stream_pb2.VideoOrientation
    quality: int
    def __init__(self, codec: _Optional[_Union[PhotoCodec, str]] = ..., quality: _Optional[int] = ..., flash_mode: _Optional[_Union[_device_pb2.FlashMode, str]] = ..., max_width: _Optional[int] = ..., max_height: _Optional[int] = ..., orientation: _Optional[_Union[_stream_pb2.VideoOrientation, str]] = ..., mirrored: bool = ...) -> None: ...

class PhotoCodec(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
