"""The conformance scenarios (Clients/CONFORMANCE.md), in Python, against a real camerad."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import camerad
from camerad import stamp
from camerad.v1 import camera_pb2, device_pb2, photo_pb2, record_pb2, stream_pb2

from conftest import Daemon


@pytest.fixture
def client(daemon):
    with camerad.Client(daemon.socket, "conformance") as client:
        yield client


def test_discover_and_filter(client):
    devices = camerad.CaptureDevice.devices(client)
    assert [d.unique_id for d in devices] == ["virtual-0", "virtual-1"]
    back = camerad.DiscoverySession(["builtInWideAngleCamera", "external"], position="back", client=client).devices
    assert [d.unique_id for d in back] == ["virtual-1"]
    assert all(d.position == "back" for d in back)
    assert camerad.DiscoverySession(["external"], client=client).devices == []


def test_info_agrees_with_camctl(daemon, client):
    camctl = os.environ.get("CAMCTL")
    if not camctl:
        pytest.skip("CAMCTL is not set")
    device = camerad.CaptureDevice.matching("virtual-0", client)
    info = json.loads(subprocess.run([camctl, "--socket", daemon.socket, "info", "virtual-0", "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    assert info["localizedName"] == device.localized_name
    assert [(f["width"], f["height"]) for f in info["formats"]] == [(f.width, f.height) for f in device.formats]
    assert [c["id"] for c in info["controls"]] == [c.id for c in device.controls]


def test_stream_stamps_in_order(client):
    previous = None
    intact = 0
    with client.stream("virtual-0") as stream:
        for _ in range(100):
            with stream.frame(timeout=60) as frame:
                intact += stamp.check(frame) == "intact"
                if previous is not None:
                    assert frame.sequence > previous
                    assert frame.sequence - previous - 1 == sum(frame.dropped_before.values())
                previous = frame.sequence
    assert intact == 100


def test_second_stream_other_variant(client):
    small = stream_pb2.OutputSettings(pixel_format=stream_pb2.OUTPUT_PIXEL_FORMAT_NV12, width=320, height=240)
    with client.stream("virtual-1") as own, client.stream("virtual-1", small) as scaled:
        assert (scaled.format.width, scaled.format.height) == (320, 240)
        for _ in range(30):
            with own.frame(timeout=60) as a, scaled.frame(timeout=60) as b:
                assert stamp.check(a) == "intact" and stamp.check(b) == "intact"
                assert a.width == 640 and (b.width, b.height, b.pixel_format) == (320, 240, "NV12")


def test_drops_reported_when_holding(daemon, client):
    settings = stream_pb2.OutputSettings(max_frames_in_flight=1)
    with client.stream("virtual-0", settings) as stream, camerad.Client(daemon.socket, "witness") as other, \
            other.stream("virtual-0") as witness:
        held = stream.frame(timeout=60)
        # Another stream sees the device make frames this one, holding all it may, cannot get.
        while True:
            with witness.frame(timeout=60) as seen:
                if seen.sequence > held.sequence + 3:
                    break
        held.release()
        with stream.frame(timeout=60) as after:
            assert after.dropped_before.get("frameWasLate", 0) >= 3
            assert after.sequence - held.sequence - 1 == sum(after.dropped_before.values())
        assert stream.drops["frameWasLate"] >= 3


def test_lock_refused_with_holder_pid(daemon, client):
    with camerad.Client(daemon.socket, "holder") as holder:
        assert holder.lock_for_configuration("virtual-1") == 1
        device = camerad.CaptureDevice.matching("virtual-1", client)
        with pytest.raises(camerad.CaptureError) as refused:
            device.lock_for_configuration()
        assert refused.value.code == camerad.ErrorCode.DEVICE_LOCKED
        assert refused.value.code.capturekit_name == "deviceLocked"
        assert f"pid {holder.hello.client_pid} " in refused.value.message
        assert holder.hello.client_pid == os.getpid()
        device.refresh()
        assert device.configuration_lock_holder.pid == os.getpid()
        assert device.configuration_lock_holder.client_name == "holder"
        assert holder.unlock_for_configuration("virtual-1") == 0
    device.lock_for_configuration()
    device.unlock_for_configuration()


def test_photo_decodes_with_exif(client):
    session = camerad.CaptureSession()
    session.add_input(camerad.CaptureDevice.matching("virtual-0", client))
    output = camerad.PhotoOutput()
    session.add_output(output)
    photo = output.capture_photo(max_dimensions=(640, 480))
    jpeg = photo.file_data_representation()
    assert jpeg[:4] == b"\xff\xd8\xff\xe1" and jpeg[6:12] == b"Exif\0\0"
    gray = decode_jpeg_gray(jpeg)
    assert gray.shape == (photo.height, photo.width)
    assert photo.width <= 640 and photo.height <= 480
    assert stamp.read_band(gray, top=True)[0] == photo.sequence & 0xFFFFFFFF


def decode_jpeg_gray(jpeg: bytes) -> np.ndarray:
    """libturbojpeg (the one camerad links) through ctypes: the JPEG as gray."""
    import ctypes
    import ctypes.util
    library = ctypes.CDLL(ctypes.util.find_library("turbojpeg") or "libturbojpeg.so.0")
    library.tjInitDecompress.restype = ctypes.c_void_p
    handle = ctypes.c_void_p(library.tjInitDecompress())
    width, height, subsampling, colorspace = (ctypes.c_int() for _ in range(4))
    data = ctypes.create_string_buffer(jpeg, len(jpeg))
    assert library.tjDecompressHeader3(handle, data, ctypes.c_ulong(len(jpeg)), ctypes.byref(width),
                                       ctypes.byref(height), ctypes.byref(subsampling), ctypes.byref(colorspace)) == 0
    gray = np.zeros((height.value, width.value), np.uint8)
    TJPF_GRAY = 6
    assert library.tjDecompress2(handle, data, ctypes.c_ulong(len(jpeg)), gray.ctypes.data_as(ctypes.c_void_p),
                                 width, width, height, TJPF_GRAY, 0) == 0
    library.tjDestroy(handle)
    return gray


def test_record_file_plays(client, tmp_path):
    path = tmp_path / "conformance.mp4"
    recording = client.record("virtual-0", path, width=320, height=240, fragment_interval=1)
    started = recording.wait_started(timeout=60)
    assert started.width == 320
    client._wait(lambda: recording.figures is not None and recording.figures.duration_ns >= 1_000_000_000, 60)
    recording.stop()
    finished = recording.wait(timeout=60)
    assert finished.ending == record_pb2.RECORDING_ENDING_STOPPED and finished.successfully_finished
    assert finished.figures.frames > 0 and finished.figures.duration_ns >= 1_000_000_000
    # Synced after every fragment and at the end, by default.
    assert finished.figures.file_syncs >= 1
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                            "stream=codec_name,width,nb_read_frames", "-of", "csv=p=0", str(path)],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == f"h264,320,{finished.figures.frames}"


def test_record_hand_over(client, tmp_path):
    first, second = tmp_path / "first.mp4", tmp_path / "second.mp4"
    recording = client.record("virtual-0", first, width=320, height=240, fragment_interval=1)
    recording.wait_started(timeout=60)
    client._wait(lambda: recording.figures is not None and recording.figures.duration_ns >= 1_000_000_000, 60)
    recording.next_file(second)
    client._wait(lambda: len(recording.handed_over) == 1 and recording.figures is not None
                 and recording.figures.duration_ns >= 1_000_000_000, 60)
    recording.stop()
    finished = recording.wait(timeout=60)
    assert finished.ending == record_pb2.RECORDING_ENDING_STOPPED and len(recording.handed_over) == 1
    for path, frames in [(first, recording.handed_over[0].figures.frames), (second, finished.figures.frames)]:
        probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                "stream=nb_read_frames", "-of", "csv=p=0", str(path)], capture_output=True, text=True, check=True)
        assert frames > 0 and probe.stdout.strip() == str(frames)


def test_record_pipe_refused(client):
    read_end, write_end = os.pipe()
    try:
        recording = client.record("virtual-0", write_end)
        with pytest.raises(camerad.CaptureError) as refused:
            recording.wait(timeout=60)
        assert refused.value.code == camerad.ErrorCode.INVALID_ARGUMENT and "a pipe" in str(refused.value)
        assert recording.started is None
    finally:
        os.close(read_end)
        os.close(write_end)
    assert len(client.list_devices()) == 2


def test_unknown_device_error(client):
    with pytest.raises(camerad.CaptureError) as lookup:
        camerad.CaptureDevice.matching("no-such-camera", client)
    assert lookup.value.code == camerad.ErrorCode.DEVICE_NOT_FOUND == 20
    assert lookup.value.message and "\n" not in lookup.value.message
    with pytest.raises(camerad.CaptureError) as stream:
        client.stream("no-such-camera")
    assert stream.value.code == camerad.ErrorCode.DEVICE_NOT_FOUND


def test_bad_argument_error(client):
    settings = stream_pb2.OutputSettings(pixel_format=stream_pb2.OUTPUT_PIXEL_FORMAT_NV12, width=10000, height=10000)
    with pytest.raises(camerad.CaptureError) as refused:
        client.stream("virtual-0", settings)
    assert refused.value.code == camerad.ErrorCode.INVALID_ARGUMENT == 2
    assert "10000x10000" in refused.value.message
    assert len(client.list_devices()) == 2  # the connection goes on


def test_daemon_gone_interrupts_stream():
    own = Daemon(cameras=1)
    try:
        with camerad.Client(own.socket) as client, client.stream("virtual-0") as stream:
            stream.frame(timeout=60).release()
            assert own.stop() == 0
            with pytest.raises(camerad.CaptureError) as ended:
                while True:
                    stream.frame(timeout=60).release()
            assert ended.value.code == camerad.ErrorCode.SHUTTING_DOWN
            assert stream.interruption == stream_pb2.INTERRUPTION_REASON_SHUTTING_DOWN
            with pytest.raises(camerad.CaptureError):
                client.list_devices()
    finally:
        own.stop()


@pytest.fixture
def microphone(client):
    """A virtual microphone added for the test (camerad's own user may), removed after."""
    added = client.call("AddVirtualCamera", camera_pb2.AddVirtualCameraRequest(media_type=device_pb2.MEDIA_TYPE_AUDIO),
                        camera_pb2.AddVirtualCameraResponse)
    assert added.device.media_type == device_pb2.MEDIA_TYPE_AUDIO
    assert added.device.device_type == device_pb2.DEVICE_TYPE_MICROPHONE
    yield added.device.unique_id
    client.call("RemoveVirtualCamera", camera_pb2.RemoveVirtualCameraRequest(unique_id=added.device.unique_id),
                camera_pb2.RemoveVirtualCameraResponse)


def test_audio_periods_in_order(client, microphone):
    device = client.get_device(microphone)
    assert device.audio.native.sample_rate == 48000
    previous = None
    first = None
    samples = []
    broken = False
    with client.audio_stream(microphone) as stream:
        assert (stream.format.sample_rate, stream.format.channels, stream.format.sample_format,
                stream.format.period_frames) == (48000, 2, "f32", 480)
        for _ in range(50):
            with stream.frame(timeout=60) as period:
                assert period.n_samples == 480 and period.array().shape == (480, 2)
                if previous is not None:
                    assert period.sequence > previous
                    assert period.sequence - previous - 1 == sum(period.dropped_before.values())
                    broken |= period.sequence != previous + 1
                first = period.sequence if first is None else first
                if not broken:
                    samples.append(period.array()[:, 0].copy())
                previous = period.sequence
    run = np.concatenate(samples)
    blocks = stamp.decode_audio(run)
    assert len(blocks) >= len(run) // 960 - 2
    for index, (number, offset) in enumerate(blocks):
        # Block n lies at frame 960 * n of the microphone's clock; the run starts at first * 480.
        assert number * 960 == first * 480 + offset
        assert index == 0 or number == blocks[index - 1][0] + 1


def test_audio_format_refused(client, microphone):
    with pytest.raises(camerad.CaptureError) as refused:
        client.audio_stream(microphone, rate=12345)
    assert refused.value.code == camerad.ErrorCode.INVALID_ARGUMENT
    assert "44100" in str(refused.value)
    assert [d.unique_id for d in client.list_devices()][:2] == ["virtual-0", "virtual-1"]
