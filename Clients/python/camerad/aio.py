"""The asyncio client: the blocking client's calls and streams, awaited.

    async with await camerad.aio.Client.connect() as client:
        stream = await client.stream("virtual-0")
        async for frame in stream:
            with frame:
                a = frame.array()

It reads the socket from the event loop (``loop.add_reader``); use a client from
its own loop only.
"""
from __future__ import annotations

import asyncio
import os
import select
import socket as sockets
import sys
from typing import AsyncIterator, List, Optional

from . import _protocol as wire
from .client import Frame, StreamCore, receive, socket_path
from .errors import CaptureError, ErrorCode
from .v1 import camera_pb2, device_pb2, photo_pb2, stream_pb2


class Client:
    """One connection to camerad, driven by the running event loop."""

    def __init__(self, sock: sockets.socket, timeout: float) -> None:
        self._socket = sock
        self._loop = asyncio.get_running_loop()
        self._connection = wire.Connection()
        self._outgoing = bytearray()
        self.timeout = timeout
        self.hello: Optional[camera_pb2.HelloResponse] = None
        self._loop.add_reader(sock.fileno(), self._readable)
        # Frame rings' signals, edge-triggered (never read, they stay readable) in an epoll of
        # their own, which the loop watches: readable while an edge waits to be taken.
        self._signals = select.epoll()
        self._loop.add_reader(self._signals.fileno(), self._signalled)
        self._connection.on_frame_ring = lambda fd: self._signals.register(fd, select.EPOLLIN | select.EPOLLET)

    @classmethod
    async def connect(cls, socket: Optional[str] = None, client_name: Optional[str] = None,
                      timeout: float = 30.0) -> "Client":
        path = socket_path(socket)
        sock = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(sock, path)
        except OSError as error:
            sock.close()
            raise CaptureError(ErrorCode.DAEMON_UNAVAILABLE, f"cannot reach camerad at {path} ({error.strerror}); "
                               "start it, or point CAMERAD_SOCKET at its socket") from None
        client = cls(sock, timeout)
        request = camera_pb2.HelloRequest(protocol_version=wire.PROTOCOL_VERSION,
                                          client_name=client_name or os.path.basename(sys.argv[0]) or "python")
        try:
            client.hello = await client.call("Hello", request, camera_pb2.HelloResponse)
        except CaptureError:
            await client.close()
            raise
        return client

    # ---- The socket ----

    def _readable(self) -> None:
        receive(self._socket, self._connection)
        if self._connection.closed:
            self._loop.remove_reader(self._socket.fileno())

    def _signalled(self) -> None:
        self._signals.poll(0)
        self._connection.read_rings()

    def _send(self, data: bytes) -> None:
        if self._connection.closed:
            raise self._connection.closed
        self._outgoing += data
        self._flush()

    def _flush(self) -> None:
        try:
            while self._outgoing:
                sent = self._socket.send(self._outgoing)
                del self._outgoing[:sent]
        except BlockingIOError:
            pass
        except OSError as error:
            self._connection.fail(ErrorCode.CONNECTION_LOST, f"the connection to camerad broke ({error.strerror}); "
                                  "reconnect when camerad runs again")
        if self._outgoing and not self._connection.closed:
            self._loop.add_writer(self._socket.fileno(), self._flush)
        else:
            self._loop.remove_writer(self._socket.fileno())

    async def _wait(self, call: wire.Call, done, timeout: Optional[float]) -> bool:
        """Waits until `done()` (the call's news wakes it); False on the timeout."""
        changed = asyncio.Event()
        call.on_change = changed.set
        try:
            async def until() -> None:
                while not done() and not self._connection.closed:
                    await changed.wait()
                    changed.clear()
            await asyncio.wait_for(until(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    def _open_call(self, call: wire.Call) -> wire.Call:
        return self._connection.open(call)

    def _forget(self, call: wire.Call) -> None:
        self._connection.forget(call)

    async def close(self) -> None:
        if self._socket.fileno() >= 0:
            self._loop.remove_reader(self._socket.fileno())
            self._loop.remove_writer(self._socket.fileno())
        self._connection.fail(ErrorCode.CONNECTION_LOST, "the client closed its connection")
        self._socket.close()
        if not self._signals.closed:
            self._loop.remove_reader(self._signals.fileno())
            self._signals.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exception) -> None:
        await self.close()

    # ---- Calls ----

    async def call(self, method: str, request, response_type, timeout: Optional[float] = None):
        call = self._open_call(wire.UnaryCall(method))
        if not call.ended:
            self._send(wire.start_bytes(call.id, method, request.SerializeToString()))
        limit = self.timeout if timeout is None else timeout
        if not await self._wait(call, lambda: call.ended, limit):
            self._forget(call)
            self._send(wire.cancel_bytes(call.id))
            raise CaptureError(ErrorCode.TIMED_OUT, f"camerad did not answer {method} within {limit} s")
        return call.result(response_type)

    async def list_devices(self, filter: Optional[camera_pb2.DeviceFilter] = None) -> List[device_pb2.Device]:
        request = camera_pb2.ListDevicesRequest(filter=filter) if filter else camera_pb2.ListDevicesRequest()
        return list((await self.call("ListDevices", request, camera_pb2.ListDevicesResponse)).devices)

    async def get_device(self, unique_id: str) -> device_pb2.Device:
        return (await self.call("GetDevice", camera_pb2.GetDeviceRequest(unique_id=unique_id),
                                camera_pb2.GetDeviceResponse)).device

    async def lock_for_configuration(self, unique_id: str, wait: float = 0.0) -> int:
        request = camera_pb2.LockForConfigurationRequest(unique_id=unique_id, wait_ms=int(wait * 1000))
        return (await self.call("LockForConfiguration", request, camera_pb2.LockForConfigurationResponse,
                                timeout=self.timeout + wait)).lock_count

    async def unlock_for_configuration(self, unique_id: str) -> int:
        request = camera_pb2.UnlockForConfigurationRequest(unique_id=unique_id)
        return (await self.call("UnlockForConfiguration", request,
                                camera_pb2.UnlockForConfigurationResponse)).lock_count

    async def capture_photo(self, unique_id: str, settings: Optional[photo_pb2.PhotoSettings] = None
                            ) -> photo_pb2.CapturePhotoResponse:
        request = photo_pb2.CapturePhotoRequest(unique_id=unique_id, settings=settings or photo_pb2.PhotoSettings())
        return await self.call("CapturePhoto", request, photo_pb2.CapturePhotoResponse)

    async def stream(self, unique_id: str, settings: Optional[stream_pb2.OutputSettings] = None,
                     preset: int = 0) -> "Stream":
        """A started stream; CaptureError when camerad refuses it."""
        stream = Stream(self, unique_id)
        await stream._open(settings or stream_pb2.OutputSettings(), preset)
        return stream


class Stream(StreamCore):
    """The asyncio twin of camerad.Stream: ``await frame()``, ``async for``."""

    async def _open(self, settings: stream_pb2.OutputSettings, preset: int) -> None:
        call = self._call
        if not call.ended:
            self.client._send(self._open_bytes(settings, preset))
        if not await self.client._wait(call, lambda: call.started is not None or call.ended, self.client.timeout):
            self.close()
            raise CaptureError(ErrorCode.TIMED_OUT, f"camerad did not start the stream within {self.client.timeout} s")
        self._started()

    async def frame(self, timeout: Optional[float] = None) -> Frame:
        """The next frame; CaptureError when the stream ended (``code`` says why) or TIMED_OUT."""
        call = self._call
        while True:
            if self.ended:
                raise self._ended_error()
            if not call.events and not await self.client._wait(call, lambda: bool(call.events), timeout):
                raise CaptureError(ErrorCode.TIMED_OUT, f"no frame came within {timeout} s")
            frame = self._take(call.events.popleft())
            if frame:
                return frame

    async def __aiter__(self) -> AsyncIterator[Frame]:
        while True:
            try:
                yield await self.frame()
            except CaptureError:
                if self.ended:
                    return
                raise

    async def __aenter__(self) -> "Stream":
        return self

    async def __aexit__(self, *exception) -> None:
        self.close()
