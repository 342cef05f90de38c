from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
ERROR_REASON_ALREADY_EXISTS: ErrorReason
ERROR_REASON_CANCELLED: ErrorReason
ERROR_REASON_CONNECTION_LOST: ErrorReason
ERROR_REASON_DAEMON_UNAVAILABLE: ErrorReason
ERROR_REASON_DEVICE_BUSY: ErrorReason
ERROR_REASON_DEVICE_DISCONNECTED: ErrorReason
ERROR_REASON_DEVICE_LOCKED: ErrorReason
ERROR_REASON_DEVICE_NOT_FOUND: ErrorReason
ERROR_REASON_HELLO_REQUIRED: ErrorReason
ERROR_REASON_INTERNAL: ErrorReason
ERROR_REASON_INVALID_ARGUMENT: ErrorReason
ERROR_REASON_INVALID_STATE: ErrorReason
ERROR_REASON_NOT_LOCKED: ErrorReason
ERROR_REASON_PERMISSION_DENIED: ErrorReason
ERROR_REASON_RESOURCE_EXHAUSTED: ErrorReason
ERROR_REASON_SHUTTING_DOWN: ErrorReason
ERROR_REASON_TIMED_OUT: ErrorReason
ERROR_REASON_UNIMPLEMENTED: ErrorReason
ERROR_REASON_UNSPECIFIED: ErrorReason
ERROR_REASON_UNSUPPORTED: ErrorReason
ERROR_REASON_UNSUPPORTED_FORMAT: ErrorReason
ERROR_REASON_VERSION_MISMATCH: ErrorReason
STATUS_CODE_ABORTED: StatusCode
STATUS_CODE_ALREADY_EXISTS: StatusCode
STATUS_CODE_CANCELLED: StatusCode
STATUS_CODE_DATA_LOSS: StatusCode
STATUS_CODE_DEADLINE_EXCEEDED: StatusCode
STATUS_CODE_FAILED_PRECONDITION: StatusCode
STATUS_CODE_INTERNAL: StatusCode
STATUS_CODE_INVALID_ARGUMENT: StatusCode
STATUS_CODE_NOT_FOUND: StatusCode
STATUS_CODE_OK: StatusCode
STATUS_CODE_OUT_OF_RANGE: StatusCode
STATUS_CODE_PERMISSION_DENIED: StatusCode
STATUS_CODE_RESOURCE_EXHAUSTED: StatusCode
STATUS_CODE_UNAUTHENTICATED: StatusCode
STATUS_CODE_UNAVAILABLE: StatusCode
STATUS_CODE_UNIMPLEMENTED: StatusCode
STATUS_CODE_UNKNOWN: StatusCode

class CallCancel(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CallEnd(_message.Message):
    __slots__ = ["status"]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: Status
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ...) -> None: ...

class CallMessage(_message.Message):
    __slots__ = ["payload"]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    payload: bytes
    def __init__(self, payload: _Optional[bytes] = ...) -> None: ...

class CallStart(_message.Message):
    __slots__ = ["method", "request"]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    method: str
    request: bytes
    def __init__(self, method: _Optional[str] = ..., request: _Optional[bytes] = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ["call_id", "cancel", "end", "fd_count", "message", "start"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    FD_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    call_id: int
    cancel: CallCancel
    end: CallEnd
    fd_count: int
    message: CallMessage
    start: CallStart
    def __init__(self, call_id: _Optional[int] = ..., fd_count: _Optional[int] = ..., start: _Optional[_Union[CallStart, _Mapping]] = ..., message: _Optional[_Union[CallMessage, _Mapping]] = ..., end: _Optional[_Union[CallEnd, _Mapping]] = ..., cancel: _Optional[_Union[CallCancel, _Mapping]] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ["code", "message", "reason"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    code: StatusCode
    message: str
    reason: ErrorReason
    def __init__(self, code: _Optional[_Union[StatusCode, str]] = ..., message: _Optional[str] = ..., reason: _Optional[_Union[ErrorReason, str]] = ...) -> None: ...

class StatusCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ErrorReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
