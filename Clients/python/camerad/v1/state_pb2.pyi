from camerad.v1 import camera_pb2 as _camera_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StoredDefaults(_message.Message):
    __slots__ = ["devices"]
    class DevicesEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _camera_pb2.DeviceConfiguration
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_camera_pb2.DeviceConfiguration, _Mapping]] = ...) -> None: ...
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.MessageMap[str, _camera_pb2.DeviceConfiguration]
    def __init__(self, devices: _Optional[_Mapping[str, _camera_pb2.DeviceConfiguration]] = ...) -> None: ...
