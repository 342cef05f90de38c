"""camerad's Python client: AVFoundation's capture model on Linux, from Python.

    import camerad

    camera = camerad.CaptureDevice.default(position="back")
    with camerad.Client() as client, client.stream(camera.unique_id) as stream:
        with stream.frame() as f:
            a = f.array()          # a numpy view straight onto camerad's shared memory

CaptureKit's shape (CaptureSession, VideoDataOutput, lock_for_configuration) is in
``camerad.capture`` and exported here; ``camerad.aio`` is the asyncio API.
"""
from .capture import (CaptureDevice, CaptureDeviceInput, CaptureSession, ConfigurationLockHolder, DiscoverySession,
                      Format, Photo, PhotoOutput, VideoDataOutput, disconnect, set_socket, shared_client)
from .client import Client, Frame, Recording, Stream, socket_path
from .errors import CaptureError, ErrorCode

__version__ = "0.1.0"

__all__ = [
    "CaptureDevice", "CaptureDeviceInput", "CaptureError", "CaptureSession", "Client", "ConfigurationLockHolder",
    "DiscoverySession", "ErrorCode", "Format", "Frame", "Photo", "PhotoOutput", "Recording", "Stream", "VideoDataOutput",
    "disconnect", "set_socket", "shared_client", "socket_path",
]
