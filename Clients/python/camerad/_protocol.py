"""The wire, without I/O: framing, descriptors, calls, and a stream's pools and frames.

Protos/README.md is the specification. The blocking client (client.py) and the
asyncio one (aio.py) read and write the socket; everything they read goes
through ``Connection.receive`` and everything they write comes from here.
"""
from __future__ import annotations

import collections
import mmap
import os
import platform
import struct
import threading
from typing import Callable, Deque, Dict, List, Optional, Tuple

from .errors import CaptureError, ErrorCode
from .v1 import camera_pb2, device_pb2, envelope_pb2, record_pb2, stream_pb2

PROTOCOL_VERSION = 2
#: camerad sends at most 16 MiB per message.
MAX_INCOMING = 16 << 20
#: The most descriptors waiting for their message: two pools' worth.
MAX_WAITING_FDS = 66
METHOD_PREFIX = "/camerad.v1.Camera/"
#: Frames announced and given back through shared memory (stream.proto's FrameRing and
#: ReleaseRing): their order rests on this CPU keeping stores, and loads, in program
#: order, which x86-64 does and Python gives no fence for elsewhere: messages there.
RINGS = platform.machine() in ("x86_64", "AMD64")


def error_from_status(status: envelope_pb2.Status) -> Optional[CaptureError]:
    """The error a call ended with; None for OK."""
    if status.code == envelope_pb2.STATUS_CODE_OK:
        return None
    return CaptureError(ErrorCode.from_reason(status.reason), status.message, status.code)


def frame_envelope(envelope: envelope_pb2.Envelope) -> bytes:
    payload = envelope.SerializeToString()
    return struct.pack(">I", len(payload)) + payload


def start_bytes(call_id: int, method: str, request: bytes = b"") -> bytes:
    envelope = envelope_pb2.Envelope(call_id=call_id)
    envelope.start.method = METHOD_PREFIX + method
    envelope.start.request = request
    return frame_envelope(envelope)


def message_bytes(call_id: int, payload: bytes) -> bytes:
    envelope = envelope_pb2.Envelope(call_id=call_id)
    envelope.message.payload = payload
    return frame_envelope(envelope)


def cancel_bytes(call_id: int) -> bytes:
    envelope = envelope_pb2.Envelope(call_id=call_id)
    envelope.cancel.SetInParent()
    return frame_envelope(envelope)


def close_fds(fds: List[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class Call:
    """One open call. Subclasses take its envelopes."""

    def __init__(self, method: str) -> None:
        self.id = 0
        self.method = method
        self.ended = False
        self.error: Optional[CaptureError] = None
        #: Run when something arrived for the call (the asyncio client wakes its waiters).
        self.on_change: Optional[Callable[[], None]] = None
        #: Given a new frame ring's signal, to wait on (the connection's ``on_frame_ring``).
        self.on_frame_ring: Optional[Callable[[int], None]] = None

    def receive(self, envelope: envelope_pb2.Envelope, fds: List[int]) -> None:
        close_fds(fds)
        if envelope.WhichOneof("kind") == "end":
            self.end(error_from_status(envelope.end.status))

    def end(self, error: Optional[CaptureError]) -> None:
        if not self.ended:
            self.ended = True
            self.error = error

    def changed(self) -> None:
        if self.on_change:
            self.on_change()


class UnaryCall(Call):
    def __init__(self, method: str) -> None:
        super().__init__(method)
        self.response: Optional[bytes] = None

    def receive(self, envelope: envelope_pb2.Envelope, fds: List[int]) -> None:
        if envelope.WhichOneof("kind") == "message" and self.response is None:
            close_fds(fds)
            self.response = envelope.message.payload
        else:
            super().receive(envelope, fds)

    def result(self, response_type):
        """The decoded response, or the call's error."""
        if self.error:
            raise self.error
        if self.response is None:
            raise CaptureError(ErrorCode.INTERNAL, f"camerad ended {self.method} without an answer")
        message = response_type()
        try:
            message.ParseFromString(self.response)
        except Exception:
            raise CaptureError(ErrorCode.INTERNAL,
                               f"camerad's answer to {self.method} does not decode as {response_type.__name__}; "
                               "check camerad and this package speak the same protocol") from None
        return message


class WatchCall(Call):
    """WatchDevices: its events, queued."""

    def __init__(self) -> None:
        super().__init__("WatchDevices")
        self.events: Deque[camera_pb2.DeviceEvent] = collections.deque()

    def receive(self, envelope: envelope_pb2.Envelope, fds: List[int]) -> None:
        if envelope.WhichOneof("kind") == "message":
            close_fds(fds)
            event = camera_pb2.DeviceEvent()
            try:
                event.ParseFromString(envelope.message.payload)
            except Exception:
                self.end(CaptureError(ErrorCode.INTERNAL, "camerad sent the watch a message that is not a DeviceEvent"))
                return
            self.events.append(event)
        else:
            super().receive(envelope, fds)


def message_with_descriptor(call_id: int, payload: bytes) -> bytes:
    """A message whose one descriptor rides with its first byte (send it with SCM_RIGHTS)."""
    envelope = envelope_pb2.Envelope(call_id=call_id, fd_count=1)
    envelope.message.payload = payload
    return frame_envelope(envelope)


class RecordCall(Call):
    """Record: what camerad said of the recording, as it came."""

    def __init__(self) -> None:
        super().__init__("Record")
        self.started: Optional[record_pb2.RecordingStarted] = None
        self.figures: Optional[record_pb2.RecordingFigures] = None
        self.finished: Optional[record_pb2.RecordingFinished] = None
        self.handed_over: List[record_pb2.FileHandedOver] = []

    def receive(self, envelope: envelope_pb2.Envelope, fds: List[int]) -> None:
        if envelope.WhichOneof("kind") != "message":
            super().receive(envelope, fds)
            return
        close_fds(fds)
        response = record_pb2.RecordResponse()
        try:
            response.ParseFromString(envelope.message.payload)
        except Exception:
            self.end(CaptureError(ErrorCode.INTERNAL, "camerad sent the recording a message that is not a RecordResponse"))
            return
        kind = response.WhichOneof("kind")
        if kind == "started":
            self.started = response.started
        elif kind == "progress":
            self.figures = response.progress
        elif kind == "handed_over":
            self.handed_over.append(response.handed_over)
            self.figures = None
        elif kind == "finished":
            self.finished = response.finished
            self.figures = response.finished.figures


class Connection:
    """Bytes in, calls out: the framing and descriptor rules of Protos/README.md."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.base = 0  # the stream offset of buffer[0]
        self.fds: Deque[Tuple[int, int]] = collections.deque()  # (fd, the offset its recvmsg read up to)
        self.calls: Dict[int, Call] = {}
        self.next_id = 1
        self.closed: Optional[CaptureError] = None
        #: Given a new frame ring's signal, to wait on (edge-triggered) with the socket.
        self.on_frame_ring: Optional[Callable[[int], None]] = None

    def open(self, call: Call) -> Call:
        call.on_frame_ring = self.on_frame_ring
        call.id = self.next_id
        self.next_id += 1
        if self.closed:
            call.end(self.closed)
        else:
            self.calls[call.id] = call
        return call

    def forget(self, call: Call) -> None:
        self.calls.pop(call.id, None)

    def fail(self, code: ErrorCode, message: str) -> None:
        """The connection is over: every call ends with this error."""
        if self.closed:
            return
        self.closed = CaptureError(code, message)
        close_fds([fd for fd, _ in self.fds])
        self.fds.clear()
        self.buffer.clear()
        for call in list(self.calls.values()):
            call.end(self.closed)
            call.changed()
        self.calls.clear()

    def receive(self, data: bytes, fds: List[int]) -> None:
        """What one recvmsg read, with the descriptors that came with it."""
        if self.closed:
            close_fds(fds)
            return
        self.buffer += data
        arrived_by = self.base + len(self.buffer)
        for fd in fds:
            self.fds.append((fd, arrived_by))
        if len(self.fds) > MAX_WAITING_FDS:
            self.fail(ErrorCode.CONNECTION_LOST,
                      f"camerad sent more descriptors than a client takes ({MAX_WAITING_FDS} waiting); "
                      "the connection was closed")
            return
        self.parse()

    def parse(self) -> None:
        at = 0
        while not self.closed and len(self.buffer) - at >= 4:
            (length,) = struct.unpack_from(">I", self.buffer, at)
            if length > MAX_INCOMING:
                self.fail(ErrorCode.CONNECTION_LOST,
                          f"camerad sent a message of {length} bytes, more than the protocol's {MAX_INCOMING}; "
                          "the connection was closed: check camerad and this package speak the same protocol")
                return
            if len(self.buffer) - at < 4 + length:
                break
            end = self.base + at + 4 + length
            envelope = envelope_pb2.Envelope()
            try:
                envelope.ParseFromString(bytes(self.buffer[at + 4:at + 4 + length]))
                kind = envelope.WhichOneof("kind")
            except Exception:
                kind = None
            at += 4 + length
            if kind is None or (envelope.call_id == 0 and kind != "end"):
                self.fail(ErrorCode.CONNECTION_LOST, "camerad sent a message that is not an envelope; the connection "
                          "was closed: check camerad and this package speak the same protocol")
                return
            if envelope.fd_count > len(self.fds):
                self.fail(ErrorCode.CONNECTION_LOST, f"camerad's message claims {envelope.fd_count} descriptors but "
                          f"{len(self.fds)} arrived; the connection was closed")
                return
            taken = [self.fds.popleft()[0] for _ in range(envelope.fd_count)]
            # Then those that came no later than this message's last byte: no later message can claim them.
            while self.fds and self.fds[0][1] <= end:
                close_fds([self.fds.popleft()[0]])
            self.route(envelope, taken)
        if self.closed:
            return
        del self.buffer[:at]
        self.base += at

    def read_rings(self) -> None:
        """Reads every stream's frame ring (its signal fired)."""
        for call in list(self.calls.values()):
            if isinstance(call, StreamCall) and call.frame_ring:
                before = len(call.events)
                call.read_ring()
                if call.ended:
                    self.forget(call)
                if len(call.events) != before:
                    call.changed()

    def route(self, envelope: envelope_pb2.Envelope, fds: List[int]) -> None:
        if envelope.call_id == 0:
            close_fds(fds)
            error = error_from_status(envelope.end.status) or CaptureError(
                ErrorCode.CONNECTION_LOST, "camerad ended the connection")
            self.fail(error.code, error.message)
            return
        call = self.calls.get(envelope.call_id)
        if call is None or call.ended:  # a call this client gave up: ignored
            close_fds(fds)
            return
        call.receive(envelope, fds)
        if call.ended:
            self.forget(call)
        call.changed()


# ---- Streams ------------------------------------------------------------------

FOURCC_NV12 = 0x3231564E
FOURCC_I420 = 0x32315559  # YU12
FOURCC_YUYV = 0x56595559
FOURCC_BGRA = 0x34325241  # AR24
FOURCC_MJPG = 0x47504A4D


def fourcc_string(fourcc: int) -> str:
    return "".join(chr((fourcc >> (8 * i)) & 0xFF) for i in range(4))


class Pool:
    """A stream's shared memory, mapped read-only, and where each slot lies."""

    def __init__(self, description: stream_pb2.FramePool, fds: List[int]) -> None:
        self.id = description.pool_id
        self.slot_size = description.slot_size
        self.slot_count = description.slot_count
        self.shared = description.shared
        self.maps: List[mmap.mmap] = []
        self.slots: List[Tuple[mmap.mmap, int]] = []
        try:
            if not self.shared:
                return
            if not fds or not 0 < self.slot_count <= 4096 or self.slot_size == 0 or (
                    description.slots and len(description.slots) != self.slot_count):
                raise ValueError(f"a pool of {self.slot_count} slots of {self.slot_size} bytes in {len(fds)} "
                                 f"descriptors ({len(description.slots)} placed)")
            for fd in fds:
                size = os.lseek(fd, 0, os.SEEK_END) or os.fstat(fd).st_size  # lseek for a dma-buf
                self.maps.append(mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ))
            for k in range(self.slot_count):
                index, offset = ((description.slots[k].fd_index, description.slots[k].offset) if description.slots
                                 else (description.fd_index, k * self.slot_size))
                if index >= len(self.maps) or offset >= len(self.maps[index]):
                    raise ValueError(f"slot {k} lies outside the pool's memory (descriptor {index}, offset {offset})")
                self.slots.append((self.maps[index], offset))
        finally:
            close_fds(fds)

    def close(self) -> None:
        """Unmaps what no array still uses (arrays keep theirs mapped until they go)."""
        for mapping in self.maps:
            try:
                mapping.close()
            except BufferError:
                pass


#: SampleFormat numbers and their names, and numpy's type for each.
SAMPLE_FORMATS = {device_pb2.SAMPLE_FORMAT_S16: "s16", device_pb2.SAMPLE_FORMAT_S32: "s32", device_pb2.SAMPLE_FORMAT_F32: "f32"}
SAMPLE_DTYPES = {"s16": "<i2", "s32": "<i4", "f32": "<f4"}
SAMPLE_BYTES = {"s16": 2, "s32": 4, "f32": 4}


class StreamFormat:
    """What a stream's frames are: from StreamStarted or FormatChanged."""

    def __init__(self, pool: stream_pb2.FramePool, device, frame_duration, note: str) -> None:
        self.fourcc = pool.fourcc
        self.pixel_format = fourcc_string(pool.fourcc)
        self.width = pool.width
        self.height = pool.height
        self.compressed = pool.compressed
        self.shared = pool.shared
        #: YUV values span 0-255 ("nv12-full", CoreVideo's '420f'); False: video range (Y 16-235).
        self.full_range = pool.full_range
        self.planes = [(p.offset, p.bytes_per_row, p.height) for p in pool.planes]
        #: The device as it runs (a camerad.v1 Device message), or None.
        self.device = device
        #: Seconds per frame as (numerator, denominator), or None.
        self.frame_duration = (frame_duration.numerator, frame_duration.denominator) if frame_duration else None
        self.note = note
        #: A microphone's stream: each frame is a period of `period_frames` frames of
        #: `channels` interleaved samples in `sample_format` ("s16", "s32", "f32"); rate 0 for video.
        audio = pool.audio if pool.HasField("audio") else None
        self.sample_rate = audio.sample_rate if audio else 0
        self.channels = audio.channels if audio else 0
        self.sample_format = SAMPLE_FORMATS.get(audio.sample_format) if audio else None
        self.period_frames = audio.period_frames if audio else 0

    @property
    def is_audio(self) -> bool:
        return self.sample_rate > 0

    def __repr__(self) -> str:
        if self.is_audio:
            return f"StreamFormat({self.sample_format} {self.channels}ch {self.sample_rate} Hz, {self.period_frames} frames a period)"
        return f"StreamFormat({self.pixel_format} {self.width}x{self.height})"


class RawFrame:
    """One frame as it came: where its bytes are, until released."""

    def __init__(self, ready: stream_pb2.FrameReady, format: StreamFormat, pool: Optional[Pool],
                 reports: List[Tuple[int, int, int]]) -> None:
        self.sequence = ready.sequence
        self.presentation_time_ns = ready.presentation_time_ns
        self.duration_ns = ready.duration_ns
        self.format = format
        self.pool = pool
        self.slot = ready.slot
        self.planes = [(p.offset, p.bytes_per_row, p.height) for p in ready.planes] or format.planes
        #: The drop reports that came since the stream's previous frame: (reason, count, last sequence).
        self.reports = reports
        if pool is None:
            self.buffer = memoryview(ready.data)
            self.size = len(ready.data)
        else:
            mapping, offset = pool.slots[ready.slot]
            room = len(mapping) - offset
            self.size = ready.bytes_used or room
            if self.size > room:
                raise ValueError(f"frame {ready.sequence}, which does not fit its slot")
            self.buffer = memoryview(mapping)[offset:offset + self.size]
        if any(offset >= self.size for offset, _, _ in self.planes):
            raise ValueError(f"frame {ready.sequence}, whose planes lie outside it")


class SharedRing:
    """A ring in a memfd camerad made (stream.proto's FrameRing and ReleaseRing): the
    count written at offset 0, the count read at 64, entries from 128."""

    HEADER = 128

    def __init__(self, fd: int, capacity: int, entry: int, largest: int, what: str) -> None:
        try:
            size = self.HEADER + capacity * entry
            if not 0 < capacity <= largest or os.fstat(fd).st_size < size:
                raise ValueError(f"a {what} of {capacity} entries in {os.fstat(fd).st_size} bytes")
            self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            close_fds([fd])
        self.capacity = capacity
        self.entry = entry
        self.counts = memoryview(self.map)[:self.HEADER].cast("Q")  # [0]: written, [8]: read
        #: Entries this side wrote or read.
        self.count = 0

    def place(self, index: int) -> int:
        return self.HEADER + (index % self.capacity) * self.entry

    def close(self) -> None:
        self.counts.release()
        self.map.close()


class ReleaseRing(SharedRing):
    """Where frames go back without a message: this client writes, camerad reads."""

    def __init__(self, fd: int, capacity: int) -> None:
        super().__init__(fd, capacity, 16, 4096, "release ring")
        self._lock = threading.Lock()  # one writer: frames may be released on any thread
        # camerad's tail as last read: read again only when it says the ring is full.
        self._tail_read = 0

    def push(self, pool_id: int, slot: int) -> bool:
        """Writes one release; False when the ring is full (send ReleaseFrames)."""
        with self._lock:
            if self.map.closed:
                return False
            if self.count - self._tail_read >= self.capacity:
                self._tail_read = self.counts[8]
                if self.count - self._tail_read >= self.capacity:
                    return False
            struct.pack_into("<QII", self.map, self.place(self.count), pool_id, slot, 0)
            self.count += 1
            self.counts[0] = self.count  # after the entry: x86 keeps the stores in order
            return True

    def close(self) -> None:
        with self._lock:
            super().close()


class FrameRing(SharedRing):
    """Where camerad announces frames, drops and news: camerad writes, this client reads."""

    FRAME, DROPPED, NEWS = 1, 2, 3

    def __init__(self, fd: int, capacity: int, signal: int) -> None:
        super().__init__(fd, capacity, 64, 65536, "frame ring")
        #: The eventfd camerad writes when it wrote records: wait on it edge-triggered, never read it.
        self.signal = signal

    def records(self):
        """(kind, u32 at 4, then five u64s) of each record written and not yet read, oldest first;
        the caller stores ``count + 1`` for each it took (``done``)."""
        written = self.counts[0]
        if written < self.count or written - self.count > self.capacity:
            raise ValueError(f"a frame ring whose head {written} is behind {self.count} or more than "
                             f"{self.capacity} ahead")
        for index in range(self.count, written):
            yield struct.unpack_from("<II5Q", self.map, self.place(index))

    def done(self, taken: int) -> None:
        self.count += taken
        self.counts[8] = self.count

    def close(self) -> None:
        close_fds([self.signal])
        super().close()


class StreamCall(Call):
    """The Stream call: pools mapped as they come, events queued in order.

    Events: ("frame", RawFrame), ("dropped", (reason, count, last_sequence)),
    ("format", StreamFormat), ("ended", (error, interruption reason)).
    """

    def __init__(self) -> None:
        super().__init__("Stream")
        self.started: Optional[StreamFormat] = None
        self.format: Optional[StreamFormat] = None
        self.pool: Optional[Pool] = None
        self.events: Deque[Tuple[str, object]] = collections.deque()
        self.pending_reports: List[Tuple[int, int, int]] = []
        self.interruption = 0
        #: Set when camerad sent something that does not add up; the client cancels the call.
        self.broken = False
        #: Where frames go back and come from without messages, when camerad gave them.
        self.release_ring: Optional[ReleaseRing] = None
        self.frame_ring: Optional[FrameRing] = None
        #: Messages that came for news records of the frame ring not yet read.
        self.news: Deque[Tuple[stream_pb2.StreamResponse, List[int]]] = collections.deque()
        self._reading = False
        #: Frames read from the frame ring.
        self.announced_through_ring = 0

    def receive(self, envelope: envelope_pb2.Envelope, fds: List[int]) -> None:
        kind = envelope.WhichOneof("kind")
        if kind == "end":
            close_fds(fds)
            # What the ring announced before the end, then messages that found no room there.
            self.read_ring(to_the_end=True)
            self.end(error_from_status(envelope.end.status) or CaptureError(ErrorCode.CANCELLED, "the stream ended"))
            return
        if kind != "message":
            close_fds(fds)
            return
        response = stream_pb2.StreamResponse()
        try:
            response.ParseFromString(envelope.message.payload)
        except Exception:
            close_fds(fds)
            return self.fail("a message that is not a StreamResponse")
        if self.frame_ring and response.WhichOneof("kind") != "started":
            self.news.append((response, fds))  # its place is a news record in the ring
            self.read_ring()
            return
        self.handle(response, fds)
        self.read_ring()  # records written before the start was read

    def read_ring(self, to_the_end: bool = False) -> None:
        """Takes what the frame ring announced: frames and drops as events, each news
        record letting the next waiting message through; stops at news whose message has
        not come, unless `to_the_end` (the call ended: it never will)."""
        ring = self.frame_ring
        if not ring or self.ended or self._reading:
            return
        self._reading = True
        try:
            self._read_ring(ring, to_the_end)
        finally:
            self._reading = False
            if self.ended:
                self._close_rings()

    def _read_ring(self, ring: "FrameRing", to_the_end: bool) -> None:
        taken = 0
        try:
            for kind, small, a, b, c, d, e in ring.records():
                if kind == FrameRing.FRAME:
                    ready = stream_pb2.FrameReady(slot=small, pool_id=a, sequence=b, presentation_time_ns=c,
                                                  duration_ns=d, bytes_used=e)
                    self.take_frame(ready)
                    self.announced_through_ring += 1
                elif kind == FrameRing.DROPPED:
                    self.take_drops(small, min(a, 0xFFFFFFFF), b)
                elif kind == FrameRing.NEWS:
                    if self.news:
                        self.handle(*self.news.popleft())
                    elif not to_the_end:
                        break
                else:
                    raise ValueError(f"a frame ring record of unknown kind {kind}")
                taken += 1
                if self.ended:
                    break
        except ValueError as problem:
            ring.done(taken)
            return self.fail(str(problem))
        ring.done(taken)
        while to_the_end and self.news:
            self.handle(*self.news.popleft())

    def handle(self, response: stream_pb2.StreamResponse, fds: List[int]) -> None:
        """One StreamResponse (its descriptors become the call's)."""
        which = response.WhichOneof("kind")
        try:
            if which in ("started", "format_changed"):
                body = getattr(response, which)
                if (which == "started") != (self.started is None):
                    close_fds(fds)
                    return self.fail("a second start" if which == "started" else "a format before its start")
                if which == "started":
                    fds = self.take_rings(body, fds)
                pool = Pool(body.pool, fds)
                format = StreamFormat(body.pool, body.device if body.HasField("device") else None,
                                      body.frame_duration if body.HasField("frame_duration") else None, body.note)
                if self.pool:
                    self.pool.close()
                self.pool = pool
                if which == "started":
                    self.started = format
                else:
                    self.events.append(("format", format))
                self.format = format
                return
            close_fds(fds)
            if which == "frame":
                if self.started is None:
                    return self.fail("a frame before its start")
                self.take_frame(response.frame)
            elif which == "dropped":
                dropped = response.dropped
                self.take_drops(dropped.reason, dropped.count, dropped.last_sequence)
            elif which == "interrupted":
                self.interruption = response.interrupted.reason
        except ValueError as problem:
            self.fail(str(problem))

    def take_rings(self, started: stream_pb2.StreamStarted, fds: List[int]) -> List[int]:
        """Maps the rings StreamStarted brought (their descriptors come after the pool's);
        the pool's descriptors are left."""
        rings = []
        if started.HasField("release_ring"):
            rings.append(started.release_ring.fd_index)
        if started.HasField("frame_ring"):
            rings += [started.frame_ring.fd_index, started.frame_ring.signal_fd_index]
        if sorted(rings) != list(range(len(fds) - len(rings), len(fds))):
            close_fds(fds)
            raise ValueError(f"rings in descriptors {rings} of {len(fds)}, not after the pool's")
        if started.HasField("release_ring"):
            self.release_ring = ReleaseRing(fds[started.release_ring.fd_index], started.release_ring.capacity)
        if started.HasField("frame_ring"):
            self.frame_ring = FrameRing(fds[started.frame_ring.fd_index], started.frame_ring.capacity,
                                        fds[started.frame_ring.signal_fd_index])
            if self.on_frame_ring:
                self.on_frame_ring(self.frame_ring.signal)
        return fds[:len(fds) - len(rings)]

    def take_frame(self, ready: stream_pb2.FrameReady) -> None:
        pool = None
        if not ready.data:
            if not self.pool or not self.pool.shared or ready.pool_id != self.pool.id or \
                    ready.slot >= self.pool.slot_count:
                raise ValueError(f"frame {ready.sequence} in slot {ready.slot} of pool {ready.pool_id}, "
                                 "which it never described")
            pool = self.pool
        frame = RawFrame(ready, self.format, pool, self.pending_reports)
        self.pending_reports = []
        self.events.append(("frame", frame))

    def take_drops(self, reason: int, count: int, last_sequence: int) -> None:
        self.pending_reports.append((reason, count, last_sequence))
        self.events.append(("dropped", (reason, count, last_sequence)))

    def fail(self, what: str) -> None:
        self.broken = True
        self.end(CaptureError(ErrorCode.INTERNAL, f"camerad sent the stream {what}"))

    def end(self, error: Optional[CaptureError]) -> None:
        if not self.ended:
            super().end(error)
            self.events.append(("ended", (error, self.interruption)))
            if not self._reading:
                self._close_rings()

    def _close_rings(self) -> None:
        """Unmaps the rings and closes the signal (which leaves every epoll set with it)."""
        for ring in (self.frame_ring, self.release_ring):
            if ring:
                ring.close()
        self.frame_ring = self.release_ring = None
        while self.news:
            close_fds(self.news.popleft()[1])
