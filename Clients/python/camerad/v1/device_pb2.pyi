from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BACKEND_ALSA: Backend
BACKEND_UNSPECIFIED: Backend
BACKEND_V4L2: Backend
BACKEND_VIRTUAL: Backend
CONTROL_TYPE_BITMASK: ControlType
CONTROL_TYPE_BOOLEAN: ControlType
CONTROL_TYPE_BUTTON: ControlType
CONTROL_TYPE_INTEGER: ControlType
CONTROL_TYPE_INTEGER64: ControlType
CONTROL_TYPE_INTEGER_MENU: ControlType
CONTROL_TYPE_MENU: ControlType
CONTROL_TYPE_UNSPECIFIED: ControlType
DESCRIPTOR: _descriptor.FileDescriptor
DEVICE_TYPE_BUILT_IN_WIDE_ANGLE_CAMERA: DeviceType
DEVICE_TYPE_EXTERNAL: DeviceType
DEVICE_TYPE_MICROPHONE: DeviceType
DEVICE_TYPE_UNSPECIFIED: DeviceType
EXPOSURE_MODE_AUTO_EXPOSE: ExposureMode
EXPOSURE_MODE_CONTINUOUS_AUTO_EXPOSURE: ExposureMode
EXPOSURE_MODE_CUSTOM: ExposureMode
EXPOSURE_MODE_LOCKED: ExposureMode
EXPOSURE_MODE_UNSPECIFIED: ExposureMode
FLASH_MODE_AUTO: FlashMode
FLASH_MODE_OFF: FlashMode
FLASH_MODE_ON: FlashMode
FLASH_MODE_UNSPECIFIED: FlashMode
FOCUS_MODE_AUTO_FOCUS: FocusMode
FOCUS_MODE_CONTINUOUS_AUTO_FOCUS: FocusMode
FOCUS_MODE_LOCKED: FocusMode
FOCUS_MODE_UNSPECIFIED: FocusMode
MEDIA_TYPE_AUDIO: MediaType
MEDIA_TYPE_UNSPECIFIED: MediaType
MEDIA_TYPE_VIDEO: MediaType
POSITION_BACK: Position
POSITION_FRONT: Position
POSITION_UNSPECIFIED: Position
SAMPLE_FORMAT_F32: SampleFormat
SAMPLE_FORMAT_S16: SampleFormat
SAMPLE_FORMAT_S32: SampleFormat
SAMPLE_FORMAT_UNSPECIFIED: SampleFormat
SESSION_PRESET_HD_1280X720: SessionPreset
SESSION_PRESET_HD_1920X1080: SessionPreset
SESSION_PRESET_HD_4K_3840X2160: SessionPreset
SESSION_PRESET_HIGH: SessionPreset
SESSION_PRESET_INPUT_PRIORITY: SessionPreset
SESSION_PRESET_LOW: SessionPreset
SESSION_PRESET_MEDIUM: SessionPreset
SESSION_PRESET_PHOTO: SessionPreset
SESSION_PRESET_UNSPECIFIED: SessionPreset
SESSION_PRESET_VGA_640X480: SessionPreset
TORCH_MODE_AUTO: TorchMode
TORCH_MODE_OFF: TorchMode
TORCH_MODE_ON: TorchMode
TORCH_MODE_UNSPECIFIED: TorchMode
WHITE_BALANCE_MODE_AUTO_WHITE_BALANCE: WhiteBalanceMode
WHITE_BALANCE_MODE_CONTINUOUS_AUTO_WHITE_BALANCE: WhiteBalanceMode
WHITE_BALANCE_MODE_LOCKED: WhiteBalanceMode
WHITE_BALANCE_MODE_UNSPECIFIED: WhiteBalanceMode

class AudioCapabilities(_message.Message):
    __slots__ = ["input_gain", "input_gain_settable", "max_channels", "max_period_us", "min_period_us", "native", "sample_formats", "sample_rates"]
    INPUT_GAIN_FIELD_NUMBER: _ClassVar[int]
    INPUT_GAIN_SETTABLE_FIELD_NUMBER: _ClassVar[int]
    MAX_CHANNELS_FIELD_NUMBER: _ClassVar[int]
    MAX_PERIOD_US_FIELD_NUMBER: _ClassVar[int]
    MIN_PERIOD_US_FIELD_NUMBER: _ClassVar[int]
    NATIVE_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FORMATS_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATES_FIELD_NUMBER: _ClassVar[int]
    input_gain: float
    input_gain_settable: bool
    max_channels: int
    max_period_us: int
    min_period_us: int
    native: AudioFormat
    sample_formats: _containers.RepeatedScalarFieldContainer[SampleFormat]
    sample_rates: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, native: _Optional[_Union[AudioFormat, _Mapping]] = ..., sample_rates: _Optional[_Iterable[int]] = ..., max_channels: _Optional[int] = ..., sample_formats: _Optional[_Iterable[_Union[SampleFormat, str]]] = ..., min_period_us: _Optional[int] = ..., max_period_us: _Optional[int] = ..., input_gain_settable: bool = ..., input_gain: _Optional[float] = ...) -> None: ...

class AudioFormat(_message.Message):
    __slots__ = ["channels", "period_frames", "sample_format", "sample_rate"]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FRAMES_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    channels: int
    period_frames: int
    sample_format: SampleFormat
    sample_rate: int
    def __init__(self, sample_rate: _Optional[int] = ..., channels: _Optional[int] = ..., sample_format: _Optional[_Union[SampleFormat, str]] = ..., period_frames: _Optional[int] = ...) -> None: ...

class CameraSettings(_message.Message):
    __slots__ = ["adjusting_exposure", "adjusting_focus", "adjusting_white_balance", "exposure_duration", "exposure_mode", "exposure_point_of_interest", "focus_mode", "focus_point_of_interest", "iso", "lens_position", "torch_level", "torch_mode", "video_zoom_factor", "white_balance_mode", "white_balance_temperature"]
    ADJUSTING_EXPOSURE_FIELD_NUMBER: _ClassVar[int]
    ADJUSTING_FOCUS_FIELD_NUMBER: _ClassVar[int]
    ADJUSTING_WHITE_BALANCE_FIELD_NUMBER: _ClassVar[int]
    EXPOSURE_DURATION_FIELD_NUMBER: _ClassVar[int]
    EXPOSURE_MODE_FIELD_NUMBER: _ClassVar[int]
    EXPOSURE_POINT_OF_INTEREST_FIELD_NUMBER: _ClassVar[int]
    FOCUS_MODE_FIELD_NUMBER: _ClassVar[int]
    FOCUS_POINT_OF_INTEREST_FIELD_NUMBER: _ClassVar[int]
    ISO_FIELD_NUMBER: _ClassVar[int]
    LENS_POSITION_FIELD_NUMBER: _ClassVar[int]
    TORCH_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TORCH_MODE_FIELD_NUMBER: _ClassVar[int]
    VIDEO_ZOOM_FACTOR_FIELD_NUMBER: _ClassVar[int]
    WHITE_BALANCE_MODE_FIELD_NUMBER: _ClassVar[int]
    WHITE_BALANCE_TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    adjusting_exposure: bool
    adjusting_focus: bool
    adjusting_white_balance: bool
    exposure_duration: Fraction
    exposure_mode: ExposureMode
    exposure_point_of_interest: Point
    focus_mode: FocusMode
    focus_point_of_interest: Point
    iso: float
    lens_position: float
    torch_level: float
    torch_mode: TorchMode
    video_zoom_factor: float
    white_balance_mode: WhiteBalanceMode
    white_balance_temperature: float
    def __init__(self, focus_mode: _Optional[_Union[FocusMode, str]] = ..., lens_position: _Optional[float] = ..., focus_point_of_interest: _Optional[_Union[Point, _Mapping]] = ..., adjusting_focus: bool = ..., exposure_mode: _Optional[_Union[ExposureMode, str]] = ..., exposure_duration: _Optional[_Union[Fraction, _Mapping]] = ..., iso: _Optional[float] = ..., exposure_point_of_interest: _Optional[_Union[Point, _Mapping]] = ..., adjusting_exposure: bool = ..., white_balance_mode: _Optional[_Union[WhiteBalanceMode, str]] = ..., white_balance_temperature: _Optional[float] = ..., adjusting_white_balance: bool = ..., torch_mode: _Optional[_Union[TorchMode, str]] = ..., torch_level: _Optional[float] = ..., video_zoom_factor: _Optional[float] = ...) -> None: ...

class Capabilities(_message.Message):
    __slots__ = ["digital_zoom", "exposure_modes", "exposure_point_of_interest_supported", "flash_modes", "focus_modes", "focus_point_of_interest_supported", "lens_position_supported", "max_exposure_duration", "max_iso", "max_white_balance_temperature", "max_zoom_factor", "min_exposure_duration", "min_iso", "min_white_balance_temperature", "min_zoom_factor", "supports_flash", "supports_torch", "torch_modes", "white_balance_modes"]
    DIGITAL_ZOOM_FIELD_NUMBER: _ClassVar[int]
    EXPOSURE_MODES_FIELD_NUMBER: _ClassVar[int]
    EXPOSURE_POINT_OF_INTEREST_SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    FLASH_MODES_FIELD_NUMBER: _ClassVar[int]
    FOCUS_MODES_FIELD_NUMBER: _ClassVar[int]
    FOCUS_POINT_OF_INTEREST_SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    LENS_POSITION_SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    MAX_EXPOSURE_DURATION_FIELD_NUMBER: _ClassVar[int]
    MAX_ISO_FIELD_NUMBER: _ClassVar[int]
    MAX_WHITE_BALANCE_TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    MAX_ZOOM_FACTOR_FIELD_NUMBER: _ClassVar[int]
    MIN_EXPOSURE_DURATION_FIELD_NUMBER: _ClassVar[int]
    MIN_ISO_FIELD_NUMBER: _ClassVar[int]
    MIN_WHITE_BALANCE_TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    MIN_ZOOM_FACTOR_FIELD_NUMBER: _ClassVar[int]
    SUPPORTS_FLASH_FIELD_NUMBER: _ClassVar[int]
    SUPPORTS_TORCH_FIELD_NUMBER: _ClassVar[int]
    TORCH_MODES_FIELD_NUMBER: _ClassVar[int]
    WHITE_BALANCE_MODES_FIELD_NUMBER: _ClassVar[int]
    digital_zoom: bool
    exposure_modes: _containers.RepeatedScalarFieldContainer[ExposureMode]
    exposure_point_of_interest_supported: bool
    flash_modes: _containers.RepeatedScalarFieldContainer[FlashMode]
    focus_modes: _containers.RepeatedScalarFieldContainer[FocusMode]
    focus_point_of_interest_supported: bool
    lens_position_supported: bool
    max_exposure_duration: Fraction
    max_iso: float
    max_white_balance_temperature: float
    max_zoom_factor: float
    min_exposure_duration: Fraction
    min_iso: float
    min_white_balance_temperature: float
    min_zoom_factor: float
    supports_flash: bool
    supports_torch: bool
    torch_modes: _containers.RepeatedScalarFieldContainer[TorchMode]
    white_balance_modes: _containers.RepeatedScalarFieldContainer[WhiteBalanceMode]
    def __init__(self, focus_modes: _Optional[_Iterable[_Union[FocusMode, str]]] = ..., focus_point_of_interest_supported: bool = ..., lens_position_supported: bool = ..., exposure_modes: _Optional[_Iterable[_Union[ExposureMode, str]]] = ..., exposure_point_of_interest_supported: bool = ..., white_balance_modes: _Optional[_Iterable[_Union[WhiteBalanceMode, str]]] = ..., supports_torch: bool = ..., torch_modes: _Optional[_Iterable[_Union[TorchMode, str]]] = ..., supports_flash: bool = ..., flash_modes: _Optional[_Iterable[_Union[FlashMode, str]]] = ..., min_zoom_factor: _Optional[float] = ..., max_zoom_factor: _Optional[float] = ..., min_exposure_duration: _Optional[_Union[Fraction, _Mapping]] = ..., max_exposure_duration: _Optional[_Union[Fraction, _Mapping]] = ..., min_iso: _Optional[float] = ..., max_iso: _Optional[float] = ..., min_white_balance_temperature: _Optional[float] = ..., max_white_balance_temperature: _Optional[float] = ..., digital_zoom: bool = ...) -> None: ...

class ConfigurationLock(_message.Message):
    __slots__ = ["client_name", "pid", "process_name"]
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_NAME_FIELD_NUMBER: _ClassVar[int]
    client_name: str
    pid: int
    process_name: str
    def __init__(self, pid: _Optional[int] = ..., process_name: _Optional[str] = ..., client_name: _Optional[str] = ...) -> None: ...

class Control(_message.Message):
    __slots__ = ["default_value", "display_name", "flags", "id", "maximum", "menu_items", "minimum", "name", "step", "type", "value"]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MENU_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    default_value: int
    display_name: str
    flags: int
    id: int
    maximum: int
    menu_items: _containers.RepeatedCompositeFieldContainer[MenuItem]
    minimum: int
    name: str
    step: int
    type: ControlType
    value: int
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., display_name: _Optional[str] = ..., type: _Optional[_Union[ControlType, str]] = ..., minimum: _Optional[int] = ..., maximum: _Optional[int] = ..., step: _Optional[int] = ..., default_value: _Optional[int] = ..., value: _Optional[int] = ..., menu_items: _Optional[_Iterable[_Union[MenuItem, _Mapping]]] = ..., flags: _Optional[int] = ...) -> None: ...

class Device(_message.Message):
    __slots__ = ["active_format_index", "active_max_frame_duration", "active_min_frame_duration", "audio", "backend", "capabilities", "controls", "device_path", "device_type", "formats", "is_connected", "linked_unique_ids", "localized_name", "lock", "manufacturer", "media_type", "model_id", "position", "settings", "supported_presets", "unavailable_reason", "unique_id"]
    ACTIVE_FORMAT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_MAX_FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_MIN_FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    CONTROLS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_PATH_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMATS_FIELD_NUMBER: _ClassVar[int]
    IS_CONNECTED_FIELD_NUMBER: _ClassVar[int]
    LINKED_UNIQUE_IDS_FIELD_NUMBER: _ClassVar[int]
    LOCALIZED_NAME_FIELD_NUMBER: _ClassVar[int]
    LOCK_FIELD_NUMBER: _ClassVar[int]
    MANUFACTURER_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    SUPPORTED_PRESETS_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    active_format_index: int
    active_max_frame_duration: Fraction
    active_min_frame_duration: Fraction
    audio: AudioCapabilities
    backend: Backend
    capabilities: Capabilities
    controls: _containers.RepeatedCompositeFieldContainer[Control]
    device_path: str
    device_type: DeviceType
    formats: _containers.RepeatedCompositeFieldContainer[Format]
    is_connected: bool
    linked_unique_ids: _containers.RepeatedScalarFieldContainer[str]
    localized_name: str
    lock: ConfigurationLock
    manufacturer: str
    media_type: MediaType
    model_id: str
    position: Position
    settings: CameraSettings
    supported_presets: _containers.RepeatedScalarFieldContainer[SessionPreset]
    unavailable_reason: str
    unique_id: str
    def __init__(self, unique_id: _Optional[str] = ..., model_id: _Optional[str] = ..., localized_name: _Optional[str] = ..., manufacturer: _Optional[str] = ..., position: _Optional[_Union[Position, str]] = ..., device_type: _Optional[_Union[DeviceType, str]] = ..., backend: _Optional[_Union[Backend, str]] = ..., device_path: _Optional[str] = ..., is_connected: bool = ..., unavailable_reason: _Optional[str] = ..., formats: _Optional[_Iterable[_Union[Format, _Mapping]]] = ..., active_format_index: _Optional[int] = ..., active_min_frame_duration: _Optional[_Union[Fraction, _Mapping]] = ..., active_max_frame_duration: _Optional[_Union[Fraction, _Mapping]] = ..., controls: _Optional[_Iterable[_Union[Control, _Mapping]]] = ..., capabilities: _Optional[_Union[Capabilities, _Mapping]] = ..., supported_presets: _Optional[_Iterable[_Union[SessionPreset, str]]] = ..., settings: _Optional[_Union[CameraSettings, _Mapping]] = ..., lock: _Optional[_Union[ConfigurationLock, _Mapping]] = ..., media_type: _Optional[_Union[MediaType, str]] = ..., audio: _Optional[_Union[AudioCapabilities, _Mapping]] = ..., linked_unique_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class Format(_message.Message):
    __slots__ = ["compressed", "description", "fourcc", "frame_rate_ranges", "height", "width"]
    COMPRESSED_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FOURCC_FIELD_NUMBER: _ClassVar[int]
    FRAME_RATE_RANGES_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    compressed: bool
    description: str
    fourcc: int
    frame_rate_ranges: _containers.RepeatedCompositeFieldContainer[FrameRateRange]
    height: int
    width: int
    def __init__(self, fourcc: _Optional[int] = ..., description: _Optional[str] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., frame_rate_ranges: _Optional[_Iterable[_Union[FrameRateRange, _Mapping]]] = ..., compressed: bool = ...) -> None: ...

class Fraction(_message.Message):
    __slots__ = ["denominator", "numerator"]
    DENOMINATOR_FIELD_NUMBER: _ClassVar[int]
    NUMERATOR_FIELD_NUMBER: _ClassVar[int]
    denominator: int
    numerator: int
    def __init__(self, numerator: _Optional[int] = ..., denominator: _Optional[int] = ...) -> None: ...

class FrameRateRange(_message.Message):
    __slots__ = ["max_frame_duration", "min_frame_duration"]
    MAX_FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    MIN_FRAME_DURATION_FIELD_NUMBER: _ClassVar[int]
    max_frame_duration: Fraction
    min_frame_duration: Fraction
    def __init__(self, min_frame_duration: _Optional[_Union[Fraction, _Mapping]] = ..., max_frame_duration: _Optional[_Union[Fraction, _Mapping]] = ...) -> None: ...

class MenuItem(_message.Message):
    __slots__ = ["index", "name", "value"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    index: int
    name: str
    value: int
    def __init__(self, index: _Optional[int] = ..., name: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...

class Point(_message.Message):
    __slots__ = ["x", "y"]
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    x: float
    y: float
    def __init__(self, x: _Optional[float] = ..., y: _Optional[float] = ...) -> None: ...

class Position(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DeviceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class MediaType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Backend(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ControlType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class FocusMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ExposureMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class WhiteBalanceMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TorchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class FlashMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SessionPreset(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SampleFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
