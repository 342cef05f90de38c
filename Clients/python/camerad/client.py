"""The blocking client: one connection to camerad, its calls, streams and frames."""
from __future__ import annotations

import contextlib
import os
import select
import socket
import struct
import sys
import threading
import time
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from . import _protocol as wire
from .errors import CaptureError, ErrorCode
from .v1 import camera_pb2, device_pb2, photo_pb2, record_pb2, stream_pb2

DROP_REASONS = {1: "frameWasLate", 2: "outOfBuffers", 3: "discontinuity"}


def socket_path(path: Optional[str] = None) -> str:
    """The socket as camerad resolves it: `path`, $CAMERAD_SOCKET, $XDG_RUNTIME_DIR/camerad.sock, /run/camerad."""
    if path:
        return path
    if os.environ.get("CAMERAD_SOCKET"):
        return os.environ["CAMERAD_SOCKET"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "camerad.sock")
    return "/run/camerad/camerad.sock"


def receive(sock: socket.socket, connection: wire.Connection) -> None:
    """One recvmsg into the connection (the socket must be readable or non-blocking)."""
    try:
        data, ancillary, flags, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(4 * wire.MAX_WAITING_FDS),
                                                 socket.MSG_CMSG_CLOEXEC | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return
    except OSError as error:
        connection.fail(ErrorCode.CONNECTION_LOST, f"the connection to camerad broke ({error.strerror}); "
                        "reconnect when camerad runs again")
        return
    fds: List[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            count = len(payload) // 4
            fds.extend(int.from_bytes(payload[4 * i:4 * i + 4], sys.byteorder, signed=True) for i in range(count))
    if flags & socket.MSG_CTRUNC:
        wire.close_fds(fds)
        connection.fail(ErrorCode.CONNECTION_LOST, "camerad sent more descriptors than a client takes; "
                        "the connection was closed")
        return
    if not data:
        wire.close_fds(fds)
        connection.fail(ErrorCode.CONNECTION_LOST, "the connection to camerad ended (camerad closed it); "
                        "reconnect when camerad runs again")
        return
    connection.receive(data, fds)


class Client:
    """One connection to camerad. Calls block up to `timeout` seconds.

    Thread-safe: calls and streams of one client may be used from several threads
    (one reads the socket at a time, for everybody).
    """

    def __init__(self, socket: Optional[str] = None, client_name: Optional[str] = None,
                 timeout: float = 30.0) -> None:
        import socket as sockets
        self.timeout = timeout
        self.path = socket_path(socket)
        self._socket = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        try:
            self._socket.connect(self.path)
        except OSError as error:
            self._socket.close()
            raise CaptureError(ErrorCode.DAEMON_UNAVAILABLE, f"cannot reach camerad at {self.path} "
                               f"({error.strerror}); start it, or point CAMERAD_SOCKET at its socket") from None
        self._connection = wire.Connection()
        self._lock = threading.RLock()
        self._send_lock = threading.Lock()
        # The socket, and each frame ring's signal edge-triggered: never read, it stays readable.
        self._epoll = select.epoll()
        self._epoll.register(self._socket.fileno(), select.EPOLLIN)
        self._connection.on_frame_ring = lambda fd: self._epoll.register(fd, select.EPOLLIN | select.EPOLLET)
        request = camera_pb2.HelloRequest(protocol_version=wire.PROTOCOL_VERSION,
                                          client_name=client_name or os.path.basename(sys.argv[0]) or "python")
        try:
            #: camerad's answer to Hello: its version, its pid, this client's pid and uid.
            self.hello: camera_pb2.HelloResponse = self.call("Hello", request, camera_pb2.HelloResponse)
        except CaptureError:
            self.close()
            raise

    # ---- The socket ----

    def _send(self, data: bytes) -> None:
        if self._connection.closed:
            raise self._connection.closed
        with self._send_lock:
            try:
                self._socket.sendall(data)
            except OSError as error:
                with self._lock:
                    self._connection.fail(ErrorCode.CONNECTION_LOST, f"the connection to camerad broke "
                                          f"({error.strerror}); reconnect when camerad runs again")
                raise self._connection.closed from None

    def _send_with_descriptor(self, data: bytes, fd: int) -> None:
        """`data` with `fd` riding on its first byte (SCM_RIGHTS), in a sendmsg of its own."""
        with self._send_lock:
            try:
                sent = self._socket.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
                if sent < len(data):
                    self._socket.sendall(data[sent:])
            except OSError as error:
                raise CaptureError(ErrorCode.CONNECTION_LOST, f"sending a file to camerad failed "
                                   f"({error.strerror}); reconnect when camerad runs again") from None

    def _wait(self, done: Callable[[], bool], timeout: Optional[float]) -> bool:
        """Reads until `done()` or the timeout; False on the timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if done() or self._connection.closed:
                    return True
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                ready = self._epoll.poll(0.05 if left is None else min(left, 0.05))
                if any(fd == self._socket.fileno() for fd, _ in ready):
                    receive(self._socket, self._connection)
                if any(fd != self._socket.fileno() for fd, _ in ready):
                    self._connection.read_rings()

    def _open_call(self, call: wire.Call) -> wire.Call:
        with self._lock:
            return self._connection.open(call)

    def _forget(self, call: wire.Call) -> None:
        with self._lock:
            self._connection.forget(call)

    def close(self) -> None:
        """Ends the connection: its streams end, their frames stay readable until released."""
        with self._lock:
            self._connection.fail(ErrorCode.CONNECTION_LOST, "the client closed its connection")
        self._socket.close()
        self._epoll.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exception) -> None:
        self.close()

    # ---- Calls ----

    def call(self, method: str, request, response_type, timeout: Optional[float] = None):
        """Any unary method by name ("ListDevices"): the decoded answer, or CaptureError."""
        call = self._open_call(wire.UnaryCall(method))
        if not call.ended:
            self._send(wire.start_bytes(call.id, method, request.SerializeToString()))
        limit = self.timeout if timeout is None else timeout
        if not self._wait(lambda: call.ended, limit):
            self._forget(call)
            self._send(wire.cancel_bytes(call.id))
            raise CaptureError(ErrorCode.TIMED_OUT, f"camerad did not answer {method} within {limit} s; check it is "
                               "running, or raise the client's timeout")
        return call.result(response_type)

    def list_devices(self, filter: Optional[camera_pb2.DeviceFilter] = None) -> List[device_pb2.Device]:
        request = camera_pb2.ListDevicesRequest(filter=filter) if filter else camera_pb2.ListDevicesRequest()
        return list(self.call("ListDevices", request, camera_pb2.ListDevicesResponse).devices)

    def get_device(self, unique_id: str) -> device_pb2.Device:
        return self.call("GetDevice", camera_pb2.GetDeviceRequest(unique_id=unique_id),
                         camera_pb2.GetDeviceResponse).device

    def device_statistics(self, unique_id: str) -> stream_pb2.DeviceStatistics:
        return self.call("GetDeviceStatistics", stream_pb2.GetDeviceStatisticsRequest(unique_id=unique_id),
                         stream_pb2.DeviceStatistics)

    def lock_for_configuration(self, unique_id: str, wait: float = 0.0) -> int:
        """Takes the device's configuration lock (counted); DEVICE_LOCKED names the holder. The lock count."""
        request = camera_pb2.LockForConfigurationRequest(unique_id=unique_id, wait_ms=int(wait * 1000))
        return self.call("LockForConfiguration", request, camera_pb2.LockForConfigurationResponse,
                         timeout=self.timeout + wait).lock_count

    def unlock_for_configuration(self, unique_id: str) -> int:
        request = camera_pb2.UnlockForConfigurationRequest(unique_id=unique_id)
        return self.call("UnlockForConfiguration", request, camera_pb2.UnlockForConfigurationResponse).lock_count

    def configure_device(self, unique_id: str, configuration: camera_pb2.DeviceConfiguration,
                         persist: bool = False) -> device_pb2.Device:
        request = camera_pb2.ConfigureDeviceRequest(unique_id=unique_id, configuration=configuration, persist=persist)
        return self.call("ConfigureDevice", request, camera_pb2.ConfigureDeviceResponse).device

    def capture_photo(self, unique_id: str, settings: Optional[photo_pb2.PhotoSettings] = None
                      ) -> photo_pb2.CapturePhotoResponse:
        request = photo_pb2.CapturePhotoRequest(unique_id=unique_id, settings=settings or photo_pb2.PhotoSettings())
        return self.call("CapturePhoto", request, photo_pb2.CapturePhotoResponse)

    def watch_devices(self, include_existing: bool = False) -> Iterator[camera_pb2.DeviceEvent]:
        """Device events (SUBSCRIBED, CONNECTED, DISCONNECTED, CHANGED, LOCKED, UNLOCKED) until closed."""
        call = self._open_call(wire.WatchCall())
        self._send(wire.start_bytes(call.id, "WatchDevices",
                                    camera_pb2.WatchDevicesRequest(include_existing=include_existing)
                                    .SerializeToString()))
        try:
            while True:
                self._wait(lambda: bool(call.events) or call.ended, None)
                while call.events:
                    yield call.events.popleft()
                if call.ended:
                    if call.error and call.error.code != ErrorCode.CANCELLED:
                        raise call.error
                    return
        finally:
            if not call.ended and not self._connection.closed:
                self._forget(call)
                self._send(wire.cancel_bytes(call.id))

    def record(self, unique_id: str, file, audio_unique_id: str = "", file_type: Optional[str] = None,
               width: int = 0, height: int = 0, frame_rate: int = 0, average_bit_rate: int = 0,
               max_duration: float = 0, max_file_size: int = 0, fragment_interval: float = 0,
               location: str = "", codec: str = "h264", pre_roll: float = 0,
               sync: "str | float" = "fragment", audio_sample_rate: int = 0, audio_channels: int = 0,
               audio_bit_rate: int = 0) -> Recording:
        """Records a camera (and `audio_unique_id`'s microphone) into `file`: a path, which this
        client opens (created or truncated), or an open file object or descriptor, written to by
        camerad (which never opens a path itself). `file_type` "mov", "mp4" or "mkv" (Matroska:
        no display matrix; None: from the path's extension, else mp4). The sound is AAC at
        `audio_sample_rate`, `audio_channels` and `audio_bit_rate` (0: the microphone's rate, up to
        two of its channels, 128 kbit/s). `codec` "h264" (encoded) or "mjpeg": a camera running an MJPG
        format stored as it comes (its size and rate). `pre_roll` (seconds, at most 10) starts the
        file that long before now, from the recent packets of encoders another recording of the
        camera at the same settings keeps running (``Recording.started.pre_roll_ns`` says how far
        back it went). `sync`: when the file is made durable (fdatasync) — "fragment" (after every
        fragment and at the end, the default), "none", or seconds (after the first fragment that
        long after the last sync). Limits end it successfully; ``Recording.wait()`` says how."""
        codecs = {"h264": record_pb2.VIDEO_CODEC_H264, "mjpeg": record_pb2.VIDEO_CODEC_MJPEG}
        if codec not in codecs:
            raise CaptureError(ErrorCode.INVALID_ARGUMENT, f"codec {codec!r} is not one of h264, mjpeg")
        policies = {"fragment": record_pb2.FILE_SYNC_EVERY_FRAGMENT, "none": record_pb2.FILE_SYNC_NONE}
        if isinstance(sync, str):
            if sync not in policies:
                raise CaptureError(ErrorCode.INVALID_ARGUMENT, f"sync {sync!r} is not one of fragment, none, or seconds")
            file_sync, sync_interval_ns = policies[sync], 0
        else:
            file_sync, sync_interval_ns = record_pb2.FILE_SYNC_INTERVAL, int(sync * 1e9)
        with _movie_descriptor(file) as (fd, path):
            types = {"mov": record_pb2.FILE_TYPE_MOV, "mp4": record_pb2.FILE_TYPE_MP4, "mkv": record_pb2.FILE_TYPE_MATROSKA}
            if file_type is None:
                extension = os.path.splitext(str(path))[1].lower().lstrip(".")
                file_type = extension if extension in ("mov", "mkv") else "mp4"
            if file_type not in types:
                raise CaptureError(ErrorCode.INVALID_ARGUMENT, f"file type {file_type!r} is not one of mov, mp4, mkv")
            start = record_pb2.StartRecording(
                unique_id=unique_id, audio_unique_id=audio_unique_id, file_type=types[file_type],
                video=record_pb2.VideoRecordingSettings(codec=codecs[codec], width=width, height=height,
                                                        frame_rate=frame_rate, average_bit_rate=average_bit_rate),
                max_duration_ns=int(max_duration * 1e9), max_file_size=max_file_size,
                movie_fragment_interval_ns=int(fragment_interval * 1e9), pre_roll_ns=int(pre_roll * 1e9),
                metadata=record_pb2.MovieMetadata(location_iso6709=location), fd_index=0,
                sync=file_sync, sync_interval_ns=sync_interval_ns,
                audio=record_pb2.AudioRecordingSettings(sample_rate=audio_sample_rate, channels=audio_channels,
                                                        average_bit_rate=audio_bit_rate))
            call = self._open_call(wire.RecordCall())
            self._send(wire.start_bytes(call.id, "Record"))
            self._send_with_descriptor(
                wire.message_with_descriptor(call.id, record_pb2.RecordRequest(start=start).SerializeToString()), fd)
        return Recording(self, call, str(path))

    def stream(self, unique_id: str, settings: Optional[stream_pb2.OutputSettings] = None,
               preset: int = 0) -> "Stream":
        """Frames of a device with AVCaptureVideoDataOutput's settings (None: its own format), once started."""
        return Stream(self, unique_id, settings or stream_pb2.OutputSettings(), preset)

    def audio_stream(self, unique_id: str, rate: int = 0, channels: int = 0, sample_format: Optional[str] = None,
                     period_frames: int = 0, periods_in_flight: int = 0) -> "Stream":
        """Periods of a microphone (AVCaptureAudioDataOutput), once started: `rate`, `channels`,
        `sample_format` ("s16", "s32", "f32") and `period_frames` 0 or None are the microphone's
        own (the period 10 ms of the rate); camerad converts, once for every client asking the
        same. Each frame is a period: ``frame.array()`` is (samples, channels)."""
        audio = device_pb2.AudioFormat(sample_rate=rate, channels=channels, period_frames=period_frames)
        if sample_format is not None:
            numbers = {name: number for number, name in wire.SAMPLE_FORMATS.items()}
            if sample_format not in numbers:
                raise CaptureError(ErrorCode.INVALID_ARGUMENT,
                                   f"sample format {sample_format!r} is not one of s16, s32, f32")
            audio.sample_format = numbers[sample_format]
        return Stream(self, unique_id, stream_pb2.OutputSettings(max_frames_in_flight=periods_in_flight), 0, audio)


@contextlib.contextmanager
def _movie_descriptor(file):
    """`file` as the descriptor to send camerad, with its name: a path is opened here (created
    or truncated) and closed after the block (camerad has its own by then); an open file object
    or a descriptor is the caller's."""
    if isinstance(file, (str, os.PathLike)):
        path = os.fspath(file)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            yield fd, path
        finally:
            os.close(fd)
    else:
        fd = file if isinstance(file, int) else file.fileno()
        yield fd, getattr(file, "name", str(fd))


class Recording:
    """A movie camerad records (AVCaptureMovieFileOutput, in camerad): see ``Client.record``."""

    def __init__(self, client: Client, call: wire.RecordCall, path: str) -> None:
        self._client = client
        self._call = call
        #: The movie's path, as given.
        self.path = path

    @property
    def started(self) -> Optional[record_pb2.RecordingStarted]:
        """RecordingStarted once the file's first frame is written (size, rate, recordings sharing its encoder)."""
        return self._call.started

    @property
    def figures(self) -> Optional[record_pb2.RecordingFigures]:
        """What is written so far (duration_ns, bytes, frames, frames_dropped), as camerad last said."""
        return self._call.figures

    @property
    def finished(self) -> Optional[record_pb2.RecordingFinished]:
        """RecordingFinished once the file is finished (ending, successfully_finished, figures, message)."""
        return self._call.finished

    def wait_started(self, timeout: Optional[float] = None) -> record_pb2.RecordingStarted:
        """Waits for the first frame to be written; CaptureError when camerad refused the recording."""
        self._client._wait(lambda: self._call.started is not None or self._call.ended,
                           self._client.timeout if timeout is None else timeout)
        if self._call.started is None:
            raise self._call.error or CaptureError(ErrorCode.TIMED_OUT, "the recording did not start; "
                                                   "check the camera streams")
        return self._call.started

    @property
    def handed_over(self) -> List[record_pb2.FileHandedOver]:
        """The hand-overs done (``next_file``), each with the finished file's figures."""
        return list(self._call.handed_over)

    def next_file(self, file) -> None:
        """Hands the recording over to `file` (a path this client opens, or an open file or
        descriptor) at a keyframe asked for at once: no frame lost between the two files."""
        with _movie_descriptor(file) as (fd, _):
            request = record_pb2.RecordRequest(next_file=record_pb2.NextFile(fd_index=0))
            self._client._send_with_descriptor(wire.message_with_descriptor(self._call.id, request.SerializeToString()), fd)

    def stop(self) -> None:
        """Ends the recording; ``wait()`` gives its RecordingFinished once the file is finished."""
        if not self._call.ended:
            request = record_pb2.RecordRequest(stop=record_pb2.StopRecording())
            self._client._send(wire.message_bytes(self._call.id, request.SerializeToString()))

    def wait(self, timeout: Optional[float] = None) -> record_pb2.RecordingFinished:
        """Waits for the recording's end: its RecordingFinished, or CaptureError when it was refused
        (a pipe, a read-only file, settings the encoder cannot do) or the connection went."""
        if not self._client._wait(lambda: self._call.ended, self._client.timeout if timeout is None else timeout):
            raise CaptureError(ErrorCode.TIMED_OUT, "the recording did not end in time; stop() it first")
        if self._call.finished is None:
            raise self._call.error or CaptureError(ErrorCode.INTERNAL, "camerad ended the recording without saying how")
        return self._call.finished

    def __enter__(self) -> "Recording":
        return self

    def __exit__(self, *exception) -> None:
        self.stop()
        self.wait()


class Frame:
    """One frame: read-only bytes in camerad's shared memory, this client's until released.

    ``with stream.frame() as f:`` releases it at the end of the block.
    """

    def __init__(self, stream: "Stream", raw: wire.RawFrame) -> None:
        self._stream = stream
        self._raw = raw
        self.sequence: int = raw.sequence
        #: CLOCK_MONOTONIC nanoseconds at capture.
        self.presentation_time_ns: int = raw.presentation_time_ns
        self.duration_ns: int = raw.duration_ns
        self.format: wire.StreamFormat = raw.format
        self.pixel_format: str = raw.format.pixel_format
        #: YUV values span 0-255 (requested as "nv12-full"); False: video range.
        self.full_range: bool = raw.format.full_range
        self.width: int = raw.format.width
        self.height: int = raw.format.height
        #: Audio: the period's frames (a sample per channel each); its first is
        #: sequence * period_frames on the microphone's clock. 0 for video.
        self.n_samples: int = raw.size // (raw.format.channels * wire.SAMPLE_BYTES[raw.format.sample_format]) \
            if raw.format.is_audio else 0
        #: (offset, bytes per row, height) of each plane, from the frame's start.
        self.planes: List[Tuple[int, int, int]] = raw.planes
        #: The drop reports since the stream's previous frame: (reason name, count, last sequence number).
        self.drop_reports: List[Tuple[str, int, int]] = [(DROP_REASONS.get(reason, "unspecified"), count, last)
                                                         for reason, count, last in raw.reports]
        #: Frames reported dropped between the stream's previous frame and this one, by reason name.
        self.dropped_before: Dict[str, int] = {}
        for name, count, _ in self.drop_reports:
            self.dropped_before[name] = self.dropped_before.get(name, 0) + count
        self.released = False

    @property
    def size(self) -> int:
        return self._raw.size

    @property
    def buffer(self) -> memoryview:
        """The frame's bytes, read-only, no copy."""
        if self.released:
            raise CaptureError(ErrorCode.INVALID_STATE, "the frame was released; copy() what you keep")
        return self._raw.buffer

    def array(self) -> np.ndarray:
        """A read-only numpy view straight onto the frame's memory (no copy), valid until the frame is released.

        BGRA and ARGB: (height, width, 4); YUYV: (height, width, 2); NV12 and I420 with rows
        packed: (height * 3 // 2, width) as picamera2 gives YUV420; otherwise (MJPEG)
        the bytes, one dimension. An audio period: (samples, channels) of int16, int32 or float32.
        """
        buffer = self.buffer
        if self.format.is_audio:
            return np.ndarray((self.n_samples, self.format.channels), wire.SAMPLE_DTYPES[self.format.sample_format], buffer)
        bytes_per_row = self.planes[0][1] if self.planes else 0
        if self.pixel_format in ("AR24", "BA24") and bytes_per_row:
            return np.ndarray((self.height, self.width, 4), np.uint8, buffer, 0, (bytes_per_row, 4, 1))
        if self.pixel_format == "YUYV" and bytes_per_row:
            return np.ndarray((self.height, self.width, 2), np.uint8, buffer, 0, (bytes_per_row, 2, 1))
        if self.pixel_format in ("NV12", "YU12") and bytes_per_row == self.width and \
                self.size >= self.width * self.height * 3 // 2:
            return np.ndarray((self.height * 3 // 2, self.width), np.uint8, buffer, 0, (self.width, 1))
        return np.frombuffer(buffer, np.uint8)

    def plane(self, index: int) -> np.ndarray:
        """Plane `index` as a 2-D read-only view (rows, bytes per row), no copy."""
        offset, bytes_per_row, rows = self.planes[index]
        return np.ndarray((rows, bytes_per_row), np.uint8, self.buffer, offset, (bytes_per_row, 1))

    def copy(self) -> np.ndarray:
        """An array of its own, valid after the frame is released."""
        return np.array(self.array(), copy=True)

    def release(self) -> None:
        """Gives the frame back to camerad (once; later calls do nothing)."""
        if not self.released:
            self.released = True
            self._stream._release(self._raw)

    def __enter__(self) -> "Frame":
        return self

    def __exit__(self, *exception) -> None:
        self.release()

    def __repr__(self) -> str:
        if self.format.is_audio:
            return f"Frame(#{self.sequence} {self.n_samples} samples of {self.format})"
        return f"Frame(#{self.sequence} {self.pixel_format} {self.width}x{self.height})"


class StreamCore:
    """What the blocking and the asyncio streams share: the call, its events as
    frames and counts, releases, and closing. They differ only in how they wait."""

    def __init__(self, client, unique_id: str) -> None:
        self.client = client
        self.unique_id = unique_id
        #: Frames reported dropped, by reason name.
        self.drops: Dict[str, int] = {name: 0 for name in DROP_REASONS.values()}
        self.frames = 0
        self.error: Optional[CaptureError] = None
        self.interruption = 0
        self.ended = False
        #: What the frames are; a format change replaces it.
        self.format: Optional[wire.StreamFormat] = None
        #: Frames given back through the stream's release ring (no message), and by ReleaseFrames.
        self.released_through_ring = 0
        self.released_by_message = 0
        self._held: Dict[int, wire.RawFrame] = {}
        self._call: wire.StreamCall = client._open_call(wire.StreamCall())

    @property
    def announced_through_ring(self) -> int:
        """Frames camerad announced in the stream's frame ring (no message for them)."""
        return self._call.announced_through_ring

    def _open_bytes(self, settings: stream_pb2.OutputSettings, preset: int,
                    audio: Optional[device_pb2.AudioFormat] = None) -> bytes:
        request = stream_pb2.StreamRequest()
        request.open.unique_id = self.unique_id
        request.open.settings.CopyFrom(settings)
        if audio is not None:
            request.open.audio.CopyFrom(audio)
        # Frames come and go back through shared memory where this CPU's ordering allows.
        rings = wire.RINGS and settings.delivery != stream_pb2.DELIVERY_INLINE
        request.open.settings.release_ring = request.open.settings.frame_ring = rings
        request.open.preset = preset
        return wire.start_bytes(self._call.id, "Stream") + wire.message_bytes(self._call.id,
                                                                            request.SerializeToString())

    def _started(self) -> None:
        """After the wait for the start: the format, or the error that ended it first."""
        if self._call.started is None:
            self._cancel_if_broken()
            raise self._call.error or CaptureError(ErrorCode.INTERNAL, "the stream ended before it started")
        self.format = self._call.started

    def _send_quietly(self, data: bytes) -> None:
        """Sends unless the connection is gone (then there is nothing to tell camerad)."""
        if not self.client._connection.closed:
            with contextlib.suppress(CaptureError):
                self.client._send(data)

    def _cancel_if_broken(self) -> None:
        if self._call.broken:
            self._send_quietly(wire.cancel_bytes(self._call.id))

    def _take(self, event) -> Optional[Frame]:
        """One event of the call: a frame to hand out, or None once it is counted."""
        kind, value = event
        if kind == "frame":
            self._held[id(value)] = value
            self.frames += 1
            return Frame(self, value)
        if kind == "dropped":
            reason, count, _ = value
            name = DROP_REASONS.get(reason, "unspecified")
            self.drops[name] = self.drops.get(name, 0) + count
        elif kind == "format":
            self.format = value
        elif kind == "ended":
            self.ended = True
            self.error, self.interruption = value
            self._cancel_if_broken()
        return None

    def _ended_error(self) -> CaptureError:
        return self.error or CaptureError(ErrorCode.CANCELLED, "the stream was closed")

    def _release(self, raw: wire.RawFrame) -> None:
        if self._held.pop(id(raw), None) is None or raw.pool is None or self.ended or self._call.ended:
            return
        ring = self._call.release_ring
        if ring and ring.push(raw.pool.id, raw.slot):
            self.released_through_ring += 1
            return
        self.released_by_message += 1
        request = stream_pb2.StreamRequest()
        request.release.pool_id = raw.pool.id
        request.release.slots.append(raw.slot)
        self._send_quietly(wire.message_bytes(self._call.id, request.SerializeToString()))

    def close(self) -> None:
        """Stops the stream; frames still held stay readable until released."""
        if not self._call.ended and not self.client._connection.closed:
            self.client._forget(self._call)
            self._send_quietly(wire.cancel_bytes(self._call.id))
        self._call.end(CaptureError(ErrorCode.CANCELLED, "the stream was closed"))
        self.ended = True


class Stream(StreamCore):
    """A Stream call: frames of one device in this client's output settings.

    ``frame()`` is the next frame (drop reports before it are counted in its
    ``dropped_before`` and in ``drops``); ``format`` what the frames are.
    """

    def __init__(self, client: Client, unique_id: str, settings: stream_pb2.OutputSettings, preset: int,
                 audio: Optional[device_pb2.AudioFormat] = None) -> None:
        super().__init__(client, unique_id)
        call = self._call
        if not call.ended:
            client._send(self._open_bytes(settings, preset, audio))
        if not client._wait(lambda: call.started is not None or call.ended, client.timeout):
            self.close()
            raise CaptureError(ErrorCode.TIMED_OUT, f"camerad did not start the stream within {client.timeout} s")
        self._started()

    def _next_event(self, timeout: Optional[float]):
        call = self._call
        self.client._wait(lambda: bool(call.events), timeout)
        with self.client._lock:
            return call.events.popleft() if call.events else None

    def frame(self, timeout: Optional[float] = None) -> Frame:
        """The next frame, waiting up to `timeout` seconds (None: for ever).

        Raises CaptureError when the stream ended (``code`` says why: deviceDisconnected,
        shuttingDown, connectionLost...) or TIMED_OUT.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.ended:
                raise self._ended_error()
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            event = self._next_event(left)
            if event is None:
                if deadline is not None and time.monotonic() >= deadline:
                    raise CaptureError(ErrorCode.TIMED_OUT, f"no frame came within {timeout} s")
                continue
            frame = self._take(event)
            if frame:
                return frame

    def __iter__(self) -> Iterator[Frame]:
        """Frames until the stream ends; release each (or use ``with``)."""
        while True:
            try:
                yield self.frame()
            except CaptureError:
                if self.ended:
                    return
                raise

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exception) -> None:
        self.close()
