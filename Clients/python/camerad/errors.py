"""Errors: the protocol's ErrorReason, with CaptureKit's CaptureError.Code names."""
from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """The protocol's ErrorReason numbers (envelope.proto), one to one with CaptureKit's codes."""

    CANCELLED = 1
    INVALID_ARGUMENT = 2
    UNIMPLEMENTED = 3
    HELLO_REQUIRED = 4
    VERSION_MISMATCH = 5
    PERMISSION_DENIED = 6
    RESOURCE_EXHAUSTED = 7
    SHUTTING_DOWN = 8
    INTERNAL = 9
    DAEMON_UNAVAILABLE = 10
    CONNECTION_LOST = 11
    ALREADY_EXISTS = 12
    TIMED_OUT = 13
    DEVICE_NOT_FOUND = 20
    DEVICE_DISCONNECTED = 21
    DEVICE_BUSY = 22
    DEVICE_LOCKED = 23
    NOT_LOCKED = 24
    UNSUPPORTED_FORMAT = 25
    INVALID_STATE = 26
    UNSUPPORTED = 27
    #: A failure without a reason this package knows (a newer or older camerad).
    UNKNOWN = 1000

    @property
    def capturekit_name(self) -> str:
        """CaptureKit's name: ``deviceNotFound``."""
        if self is ErrorCode.INTERNAL:
            return "internalError"
        head, *rest = self.name.lower().split("_")
        return head + "".join(word.capitalize() for word in rest)

    @classmethod
    def from_reason(cls, reason: int) -> "ErrorCode":
        try:
            return cls(reason)
        except ValueError:
            return cls.UNKNOWN


class CaptureError(Exception):
    """Every error this package raises: a code, and one line that says what to do."""

    def __init__(self, code: ErrorCode, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        #: The gRPC canonical status code camerad gave.
        self.status = status

    def __repr__(self) -> str:
        return f"CaptureError({self.code.capturekit_name}, {self.message!r})"
