from camerad.v1 import device_pb2 as _device_pb2
from camerad.v1 import photo_pb2 as _photo_pb2
from camerad.v1 import record_pb2 as _record_pb2
from camerad.v1 import stream_pb2 as _stream_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
PROTOCOL_VERSION_CURRENT: ProtocolVersion
PROTOCOL_VERSION_UNSPECIFIED: ProtocolVersion

class AddVirtualCameraRequest(_message.Message):
    __slots__ = ["drift_ppm", "fourcc", "frame_duration", "height", "index", "localized_name", "media_type", "position", "static_picture", "sync_marks", "tone_amplitude", "unthrottled", "width"]
    DRIFT_PPM_FIELD_NUMBER: _ClassVar[int]
    FOURCC_FIELD_NUMBER: _ClassVar[int]
    FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    LOCALIZED_NAME_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    STATIC_PICTURE_FIELD_NUMBER: _ClassVar[int]
    SYNC_MARKS_FIELD_NUMBER: _ClassVar[int]
    TONE_AMPLITUDE_FIELD_NUMBER: _ClassVar[int]
    UNTHROTTLED_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    drift_ppm: int
    fourcc: int
    frame_duration: _device_pb2.Fraction
    height: int
    index: int
    localized_name: str
    media_type: _device_pb2.MediaType
    position: _device_pb2.Position
    static_picture: bool
    sync_marks: bool
    tone_amplitude: float
    unthrottled: bool
    width: int
    def __init__(self, index: _Optional[int] = ..., localized_name: _Optional[str] = ..., position: _Optional[_Union[_device_pb2.Position, str]] = ..., fourcc: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., frame_duration: _Optional[_Union[_device_pb2.Fraction, _Mapping]] = ..., unthrottled: bool = ..., static_picture: bool = ..., media_type: _Optional[_Union[_device_pb2.MediaType, str]] = ..., tone_amplitude: _Optional[float] = ..., sync_marks: bool = ..., drift_ppm: _Optional[int] = ...) -> None: ...

class AddVirtualCameraResponse(_message.Message):
    __slots__ = ["device"]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    device: _device_pb2.Device
    def __init__(self, device: _Optional[_Union[_device_pb2.Device, _Mapping]] = ...) -> None: ...

class AudioChannelLevel(_message.Message):
    __slots__ = ["average_power_level", "peak_hold_level"]
    AVERAGE_POWER_LEVEL_FIELD_NUMBER: _ClassVar[int]
    PEAK_HOLD_LEVEL_FIELD_NUMBER: _ClassVar[int]
    average_power_level: float
    peak_hold_level: float
    def __init__(self, average_power_level: _Optional[float] = ..., peak_hold_level: _Optional[float] = ...) -> None: ...

class AudioLevels(_message.Message):
    __slots__ = ["channels", "timestamp_ns"]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    channels: _containers.RepeatedCompositeFieldContainer[AudioChannelLevel]
    timestamp_ns: int
    def __init__(self, timestamp_ns: _Optional[int] = ..., channels: _Optional[_Iterable[_Union[AudioChannelLevel, _Mapping]]] = ...) -> None: ...

class ConfigureDeviceRequest(_message.Message):
    __slots__ = ["configuration", "persist", "unique_id"]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    PERSIST_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    configuration: DeviceConfiguration
    persist: bool
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ..., configuration: _Optional[_Union[DeviceConfiguration, _Mapping]] = ..., persist: bool = ...) -> None: ...

class ConfigureDeviceResponse(_message.Message):
    __slots__ = ["device"]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    device: _device_pb2.Device
    def __init__(self, device: _Optional[_Union[_device_pb2.Device, _Mapping]] = ...) -> None: ...

class ControlValue(_message.Message):
    __slots__ = ["id", "name", "value"]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    value: int
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...

class DeviceConfiguration(_message.Message):
    __slots__ = ["active_format", "active_max_frame_duration", "active_min_frame_duration", "controls", "exposure_duration", "exposure_mode", "exposure_point_of_interest", "focus_mode", "focus_point_of_interest", "input_gain", "iso", "lens_position", "torch_level", "torch_mode", "video_zoom_factor", "white_balance_mode", "white_balance_temperature"]
    ACTIVE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_MAX_FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_MIN_FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    CONTROLS_FIELD_NUMBER: _ClassVar[int]
    EXPOSURE_DURATION_FIELD_NUMBER: _ClassVar[int]
    EXPOSURE_MODE_FIELD_NUMBER: _ClassVar[int]
    EXPOSURE_POINT_OF_INTEREST_FIELD_NUMBER: _ClassVar[int]
    FOCUS_MODE_FIELD_NUMBER: _ClassVar[int]
    FOCUS_POINT_OF_INTEREST_FIELD_NUMBER: _ClassVar[int]
    INPUT_GAIN_FIELD_NUMBER: _ClassVar[int]
    ISO_FIELD_NUMBER: _ClassVar[int]
    LENS_POSITION_FIELD_NUMBER: _ClassVar[int]
    TORCH_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TORCH_MODE_FIELD_NUMBER: _ClassVar[int]
    VIDEO_ZOOM_FACTOR_FIELD_NUMBER: _ClassVar[int]
    WHITE_BALANCE_MODE_FIELD_NUMBER: _ClassVar[int]
    WHITE_BALANCE_TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    active_format: _device_pb2.Format
    active_max_frame_duration: _device_pb2.Fraction
    active_min_frame_duration: _device_pb2.Fraction
    controls: _containers.RepeatedCompositeFieldContainer[ControlValue]
    exposure_duration: _device_pb2.Fraction
    exposure_mode: _device_pb2.ExposureMode
    exposure_point_of_interest: _device_pb2.Point
    focus_mode: _device_pb2.FocusMode
    focus_point_of_interest: _device_pb2.Point
    input_gain: float
    iso: float
    lens_position: float
    torch_level: float
    torch_mode: _device_pb2.TorchMode
    video_zoom_factor: float
    white_balance_mode: _device_pb2.WhiteBalanceMode
    white_balance_temperature: float
    def __init__(self, active_format: _Optional[_Union[_device_pb2.Format, _Mapping]] = ..., active_min_frame_duration: _Optional[_Union[_device_pb2.Fraction, _Mapping]] = ..., active_max_frame_duration: _Optional[_Union[_device_pb2.Fraction, _Mapping]] = ..., focus_mode: _Optional[_Union[_device_pb2.FocusMode, str]] = ..., lens_position: _Optional[float] = ..., focus_point_of_interest: _Optional[_Union[_device_pb2.Point, _Mapping]] = ..., exposure_mode: _Optional[_Union[_device_pb2.ExposureMode, str]] = ..., exposure_duration: _Optional[_Union[_device_pb2.Fraction, _Mapping]] = ..., iso: _Optional[float] = ..., exposure_point_of_interest: _Optional[_Union[_device_pb2.Point, _Mapping]] = ..., white_balance_mode: _Optional[_Union[_device_pb2.WhiteBalanceMode, str]] = ..., white_balance_temperature: _Optional[float] = ..., torch_mode: _Optional[_Union[_device_pb2.TorchMode, str]] = ..., torch_level: _Optional[float] = ..., video_zoom_factor: _Optional[float] = ..., controls: _Optional[_Iterable[_Union[ControlValue, _Mapping]]] = ..., input_gain: _Optional[float] = ...) -> None: ...

class DeviceEvent(_message.Message):
    __slots__ = ["device", "kind", "timestamp_ns"]
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    KIND_CHANGED: DeviceEvent.Kind
    KIND_CONNECTED: DeviceEvent.Kind
    KIND_DISCONNECTED: DeviceEvent.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    KIND_LOCKED: DeviceEvent.Kind
    KIND_SUBSCRIBED: DeviceEvent.Kind
    KIND_UNLOCKED: DeviceEvent.Kind
    KIND_UNSPECIFIED: DeviceEvent.Kind
    TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    device: _device_pb2.Device
    kind: DeviceEvent.Kind
    timestamp_ns: int
    def __init__(self, kind: _Optional[_Union[DeviceEvent.Kind, str]] = ..., device: _Optional[_Union[_device_pb2.Device, _Mapping]] = ..., timestamp_ns: _Optional[int] = ...) -> None: ...

class DeviceFilter(_message.Message):
    __slots__ = ["device_types", "media_type", "position"]
    DEVICE_TYPES_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    device_types: _containers.RepeatedScalarFieldContainer[_device_pb2.DeviceType]
    media_type: _device_pb2.MediaType
    position: _device_pb2.Position
    def __init__(self, device_types: _Optional[_Iterable[_Union[_device_pb2.DeviceType, str]]] = ..., media_type: _Optional[_Union[_device_pb2.MediaType, str]] = ..., position: _Optional[_Union[_device_pb2.Position, str]] = ...) -> None: ...

class GetDeviceRequest(_message.Message):
    __slots__ = ["unique_id"]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ...) -> None: ...

class GetDeviceResponse(_message.Message):
    __slots__ = ["device"]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    device: _device_pb2.Device
    def __init__(self, device: _Optional[_Union[_device_pb2.Device, _Mapping]] = ...) -> None: ...

class HelloRequest(_message.Message):
    __slots__ = ["client_name", "protocol_version"]
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    client_name: str
    protocol_version: int
    def __init__(self, protocol_version: _Optional[int] = ..., client_name: _Optional[str] = ...) -> None: ...

class HelloResponse(_message.Message):
    __slots__ = ["client_pid", "client_uid", "features", "protocol_version", "server_pid", "server_version"]
    CLIENT_PID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_UID_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SERVER_PID_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    client_pid: int
    client_uid: int
    features: _containers.RepeatedScalarFieldContainer[str]
    protocol_version: int
    server_pid: int
    server_version: str
    def __init__(self, protocol_version: _Optional[int] = ..., server_version: _Optional[str] = ..., features: _Optional[_Iterable[str]] = ..., server_pid: _Optional[int] = ..., client_pid: _Optional[int] = ..., client_uid: _Optional[int] = ...) -> None: ...

class ListDevicesRequest(_message.Message):
    __slots__ = ["filter"]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: DeviceFilter
    def __init__(self, filter: _Optional[_Union[DeviceFilter, _Mapping]] = ...) -> None: ...

class ListDevicesResponse(_message.Message):
    __slots__ = ["devices"]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedCompositeFieldContainer[_device_pb2.Device]
    def __init__(self, devices: _Optional[_Iterable[_Union[_device_pb2.Device, _Mapping]]] = ...) -> None: ...

class LockForConfigurationRequest(_message.Message):
    __slots__ = ["unique_id", "wait_ms"]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    unique_id: str
    wait_ms: int
    def __init__(self, unique_id: _Optional[str] = ..., wait_ms: _Optional[int] = ...) -> None: ...

class LockForConfigurationResponse(_message.Message):
    __slots__ = ["device", "lock_count"]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    LOCK_COUNT_FIELD_NUMBER: _ClassVar[int]
    device: _device_pb2.Device
    lock_count: int
    def __init__(self, device: _Optional[_Union[_device_pb2.Device, _Mapping]] = ..., lock_count: _Optional[int] = ...) -> None: ...

class PingRequest(_message.Message):
    __slots__ = ["client_time_ns", "payload", "sequence"]
    CLIENT_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    client_time_ns: int
    payload: bytes
    sequence: int
    def __init__(self, sequence: _Optional[int] = ..., client_time_ns: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...

class PingResponse(_message.Message):
    __slots__ = ["client_time_ns", "payload", "sequence", "server_time_ns"]
    CLIENT_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    client_time_ns: int
    payload: bytes
    sequence: int
    server_time_ns: int
    def __init__(self, sequence: _Optional[int] = ..., client_time_ns: _Optional[int] = ..., server_time_ns: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...

class RemoveVirtualCameraRequest(_message.Message):
    __slots__ = ["unique_id"]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ...) -> None: ...

class RemoveVirtualCameraResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class UnlockForConfigurationRequest(_message.Message):
    __slots__ = ["unique_id"]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ...) -> None: ...

class UnlockForConfigurationResponse(_message.Message):
    __slots__ = ["lock_count"]
    LOCK_COUNT_FIELD_NUMBER: _ClassVar[int]
    lock_count: int
    def __init__(self, lock_count: _Optional[int] = ...) -> None: ...

class WatchAudioLevelsRequest(_message.Message):
    __slots__ = ["unique_id"]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ...) -> None: ...

class WatchDevicesRequest(_message.Message):
    __slots__ = ["include_existing"]
    INCLUDE_EXISTING_FIELD_NUMBER: _ClassVar[int]
    include_existing: bool
    def __init__(self, include_existing: bool = ...) -> None: ...

class ProtocolVersion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
