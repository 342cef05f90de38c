"""CaptureKit's shape in Python: CaptureDevice, DiscoverySession, CaptureSession,
VideoDataOutput, PhotoOutput — AVFoundation's names, snake_case.

Like CaptureKit (and AVFoundation), a process has one connection to camerad for
these: it opens on first use (``set_socket`` or $CAMERAD_SOCKET say where);
every call also takes ``client=`` for a connection of your own.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

from ._protocol import fourcc_string
from .client import Client, Frame, Stream
from .errors import CaptureError, ErrorCode
from .v1 import camera_pb2, device_pb2, photo_pb2, stream_pb2

_shared: Optional[Client] = None
_shared_lock = threading.Lock()
_socket: Optional[str] = None

POSITIONS = {device_pb2.POSITION_UNSPECIFIED: "unspecified", device_pb2.POSITION_BACK: "back",
             device_pb2.POSITION_FRONT: "front"}
DEVICE_TYPES = {device_pb2.DEVICE_TYPE_BUILT_IN_WIDE_ANGLE_CAMERA: "builtInWideAngleCamera",
                device_pb2.DEVICE_TYPE_EXTERNAL: "external", device_pb2.DEVICE_TYPE_MICROPHONE: "microphone"}
PIXEL_FORMATS = {None: stream_pb2.OUTPUT_PIXEL_FORMAT_NATIVE, "nv12": stream_pb2.OUTPUT_PIXEL_FORMAT_NV12,
                 "i420": stream_pb2.OUTPUT_PIXEL_FORMAT_I420, "yuyv": stream_pb2.OUTPUT_PIXEL_FORMAT_YUYV,
                 "bgra": stream_pb2.OUTPUT_PIXEL_FORMAT_BGRA, "nv12-full": stream_pb2.OUTPUT_PIXEL_FORMAT_NV12_FULL_RANGE,
                 "argb": stream_pb2.OUTPUT_PIXEL_FORMAT_ARGB}


def set_socket(path: Optional[str]) -> None:
    """Where the shared connection goes (closes it if open)."""
    global _socket
    disconnect()
    _socket = path


def shared_client() -> Client:
    """The process's connection, opened on first use."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._connection.closed:
            _shared = Client(_socket)
        return _shared


def disconnect() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close()
            _shared = None


@dataclass(frozen=True)
class Format:
    """AVCaptureDevice.Format: one pixel format at one size."""
    pixel_format: str
    description: str
    width: int
    height: int
    is_compressed: bool
    #: (min frame duration, max frame duration), each (numerator, denominator) seconds.
    frame_rate_ranges: Tuple[Tuple[Tuple[int, int], Tuple[int, int]], ...]


@dataclass(frozen=True)
class ConfigurationLockHolder:
    pid: int
    process_name: str
    client_name: str


class CaptureDevice:
    """AVCaptureDevice: one camera, as camerad last described it (``refresh()`` asks again)."""

    def __init__(self, message: device_pb2.Device, client: Optional[Client] = None) -> None:
        self._client = client
        self._message = message

    @property
    def client(self) -> Client:
        return self._client or shared_client()

    # ---- Finding devices ----

    @classmethod
    def devices(cls, client: Optional[Client] = None) -> List["CaptureDevice"]:
        return [cls(device, client) for device in (client or shared_client()).list_devices()]

    @classmethod
    def default(cls, device_type: Optional[str] = None, position: Optional[str] = None,
                client: Optional[Client] = None) -> Optional["CaptureDevice"]:
        """AVCaptureDevice.default: the first camera of that type and position, or None. With
        neither, as on an iPhone: the back wide-angle camera, else any back camera, else the first."""
        found = DiscoverySession([device_type] if device_type else None, position, client).devices
        if device_type is None and position is None:
            back = [d for d in found if d.position == "back"]
            found = [d for d in back if d.device_type == "builtInWideAngleCamera"] + back + found
        return found[0] if found else None

    @classmethod
    def matching(cls, unique_id: str, client: Optional[Client] = None) -> "CaptureDevice":
        """The device with this unique ID; CaptureError(DEVICE_NOT_FOUND) otherwise."""
        return cls((client or shared_client()).get_device(unique_id), client)

    def refresh(self) -> None:
        self._message = self.client.get_device(self.unique_id)

    # ---- What it is ----

    @property
    def unique_id(self) -> str:
        return self._message.unique_id

    @property
    def model_id(self) -> str:
        return self._message.model_id

    @property
    def localized_name(self) -> str:
        return self._message.localized_name

    @property
    def position(self) -> str:
        """"front", "back" or "unspecified"."""
        return POSITIONS.get(self._message.position, "unspecified")

    @property
    def device_type(self) -> Optional[str]:
        """"builtInWideAngleCamera", "external", or None."""
        return DEVICE_TYPES.get(self._message.device_type)

    @property
    def media_type(self) -> str:
        """"video" for a camera, "audio" for a microphone."""
        return "audio" if self._message.media_type == device_pb2.MEDIA_TYPE_AUDIO else "video"

    def has_media_type(self, media_type: str) -> bool:
        return media_type == self.media_type

    @property
    def linked_unique_ids(self) -> List[str]:
        """AVCaptureDevice.linkedDevices, by uniqueID: a USB webcam's camera and microphone name each other."""
        return list(self._message.linked_unique_ids)

    @property
    def is_connected(self) -> bool:
        return self._message.is_connected

    @property
    def formats(self) -> List[Format]:
        return [Format(fourcc_string(f.fourcc), f.description, f.width,
                       f.height, f.compressed,
                       tuple(((r.min_frame_duration.numerator, r.min_frame_duration.denominator),
                              (r.max_frame_duration.numerator, r.max_frame_duration.denominator))
                             for r in f.frame_rate_ranges))
                for f in self._message.formats]

    @property
    def controls(self) -> List[device_pb2.Control]:
        return list(self._message.controls)

    @property
    def message(self) -> device_pb2.Device:
        """All camerad says of it (a camerad.v1 Device)."""
        return self._message

    def __repr__(self) -> str:
        return f"CaptureDevice({self.localized_name} [{self.unique_id}])"

    # ---- The configuration lock ----

    def lock_for_configuration(self, wait: float = 0.0) -> None:
        """Takes the lock across processes (counted); DEVICE_LOCKED names the holder."""
        self.client.lock_for_configuration(self.unique_id, wait)

    def unlock_for_configuration(self) -> None:
        """Undoes one lock; like Apple's, it does not fail."""
        try:
            self.client.unlock_for_configuration(self.unique_id)
        except CaptureError:
            pass

    @property
    def configuration_lock_holder(self) -> Optional[ConfigurationLockHolder]:
        if not self._message.HasField("lock"):
            return None
        lock = self._message.lock
        return ConfigurationLockHolder(lock.pid, lock.process_name, lock.client_name)


class DiscoverySession:
    """AVCaptureDevice.DiscoverySession: the cameras of some types at a position."""

    def __init__(self, device_types: Optional[Sequence[str]] = None, position: Optional[str] = None,
                 client: Optional[Client] = None) -> None:
        self.device_types = list(device_types or [])
        self.position = position
        self._client = client

    @property
    def devices(self) -> List[CaptureDevice]:
        filter = camera_pb2.DeviceFilter()
        for name in self.device_types:
            filter.device_types.append({v: k for k, v in DEVICE_TYPES.items()}[name])
        if self.position:
            filter.position = {v: k for k, v in POSITIONS.items()}[self.position]
        client = self._client or shared_client()
        return [CaptureDevice(device, self._client) for device in client.list_devices(filter)]


class CaptureDeviceInput:
    def __init__(self, device: CaptureDevice) -> None:
        self.device = device


class VideoDataOutput:
    """AVCaptureVideoDataOutput with its connection's orientation and mirroring.

    ``pixel_format``: None (the device's own), "nv12", "nv12-full" (full-range values, CoreVideo's '420f'), "i420", "yuyv", "bgra", "argb".
    While its session runs, ``frame()`` is the next frame.
    """

    def __init__(self, pixel_format: Optional[str] = None, width: int = 0, height: int = 0,
                 always_discards_late_video_frames: bool = True, max_frames_in_flight: int = 3,
                 min_frame_duration: Optional[Tuple[int, int]] = None, orientation: int = 0, mirrored: bool = False,
                 inline: bool = False) -> None:
        self.pixel_format = pixel_format
        self.width, self.height = width, height
        self.always_discards_late_video_frames = always_discards_late_video_frames
        self.max_frames_in_flight = max_frames_in_flight
        self.min_frame_duration = min_frame_duration
        self.orientation = orientation
        self.mirrored = mirrored
        self.inline = inline
        self.stream: Optional[Stream] = None

    @property
    def settings(self) -> stream_pb2.OutputSettings:
        settings = stream_pb2.OutputSettings(
            pixel_format=PIXEL_FORMATS[self.pixel_format.lower() if self.pixel_format else None],
            width=self.width, height=self.height, orientation=self.orientation, mirrored=self.mirrored,
            always_discards_late_video_frames=self.always_discards_late_video_frames,
            max_frames_in_flight=self.max_frames_in_flight,
            delivery=stream_pb2.DELIVERY_INLINE if self.inline else stream_pb2.DELIVERY_SHARED_MEMORY)
        if self.min_frame_duration:
            settings.min_frame_duration.numerator, settings.min_frame_duration.denominator = self.min_frame_duration
        return settings

    def frame(self, timeout: Optional[float] = None) -> Frame:
        if self.stream is None:
            raise CaptureError(ErrorCode.INVALID_STATE, "the output's session is not running; start_running() first")
        return self.stream.frame(timeout)

    def __iter__(self) -> Iterator[Frame]:
        if self.stream is None:
            raise CaptureError(ErrorCode.INVALID_STATE, "the output's session is not running; start_running() first")
        return iter(self.stream)


@dataclass
class Photo:
    """AVCapturePhoto: a JPEG with EXIF (or BGRA / NV12 bytes)."""
    data: bytes
    pixel_format: str
    width: int
    height: int
    sequence: int
    presentation_time_ns: int
    note: str

    def file_data_representation(self) -> bytes:
        return self.data


class PhotoOutput:
    """AVCapturePhotoOutput."""

    def __init__(self) -> None:
        self.session: Optional["CaptureSession"] = None

    def capture_photo(self, max_dimensions: Tuple[int, int] = (0, 0), quality: int = 0, codec: str = "jpeg") -> Photo:
        if self.session is None or self.session.input is None:
            raise CaptureError(ErrorCode.INVALID_STATE, "add the photo output to a session with an input first")
        settings = photo_pb2.PhotoSettings(max_width=max_dimensions[0], max_height=max_dimensions[1],
                                           quality=quality, codec={"jpeg": photo_pb2.PHOTO_CODEC_JPEG,
                                                                   "bgra": photo_pb2.PHOTO_CODEC_BGRA,
                                                                   "nv12": photo_pb2.PHOTO_CODEC_NV12}[codec])
        device = self.session.input.device
        response = device.client.capture_photo(device.unique_id, settings)
        return Photo(response.data, fourcc_string(response.fourcc),
                     response.width, response.height, response.sequence, response.presentation_time_ns, response.note)


class CaptureSession:
    """AVCaptureSession: one input, its outputs; ``start_running()`` opens a stream per video output."""

    def __init__(self, session_preset: int = 0) -> None:
        self.session_preset = session_preset
        self.input: Optional[CaptureDeviceInput] = None
        self.outputs: List[object] = []
        self.is_running = False

    def add_input(self, input) -> None:
        self.input = input if isinstance(input, CaptureDeviceInput) else CaptureDeviceInput(input)

    def add_output(self, output) -> None:
        self.outputs.append(output)
        if isinstance(output, PhotoOutput):
            output.session = self

    def start_running(self) -> None:
        """Starts every video output's stream; raises CaptureError (and starts none) if one is refused."""
        if self.is_running:
            return
        if self.input is None:
            raise CaptureError(ErrorCode.INVALID_STATE, "the session has no input; add_input() first")
        device = self.input.device
        started = []
        try:
            for output in self.outputs:
                if isinstance(output, VideoDataOutput):
                    output.stream = device.client.stream(device.unique_id, output.settings, self.session_preset)
                    started.append(output)
        except CaptureError:
            for output in started:
                output.stream.close()
                output.stream = None
            raise
        self.is_running = True

    def stop_running(self) -> None:
        for output in self.outputs:
            if isinstance(output, VideoDataOutput) and output.stream:
                output.stream.close()
                output.stream = None
        self.is_running = False

    def __enter__(self) -> "CaptureSession":
        self.start_running()
        return self

    def __exit__(self, *exception) -> None:
        self.stop_running()
