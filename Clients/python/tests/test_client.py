"""What the Python package adds beyond the conformance scenarios, against a real camerad."""
from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import camerad
import camerad.aio
from camerad import stamp
from camerad.v1 import camera_pb2, device_pb2, envelope_pb2, record_pb2, stream_pb2

PACKAGE = Path(__file__).resolve().parent.parent


@pytest.fixture
def client(daemon):
    with camerad.Client(daemon.socket, "client-tests") as client:
        yield client


def test_an_array_is_a_read_only_view_of_shared_memory_and_copy_is_its_own(client):
    settings = stream_pb2.OutputSettings(pixel_format=stream_pb2.OUTPUT_PIXEL_FORMAT_BGRA, width=320, height=240)
    with client.stream("virtual-0", settings) as stream:
        with stream.frame(timeout=60) as frame:
            view = frame.array()
            assert view.shape == (240, 320, 4) and view.dtype == np.uint8
            assert not view.flags.writeable
            with pytest.raises(ValueError):
                view[0, 0, 0] = 1
            # No copy: the array's memory is the frame's buffer in the pool's mapping.
            assert np.shares_memory(view, np.frombuffer(frame.buffer, np.uint8))
            kept = frame.copy()
            assert kept.flags.writeable and not np.shares_memory(kept, view)
            assert np.array_equal(kept, view)
        with pytest.raises(camerad.CaptureError):
            frame.array()  # released
        assert kept.shape == (240, 320, 4)


def test_planes_and_formats_read_as_their_layout(client):
    settings = stream_pb2.OutputSettings(pixel_format=stream_pb2.OUTPUT_PIXEL_FORMAT_NV12, width=320, height=240)
    with client.stream("virtual-0", settings) as stream, stream.frame(timeout=60) as frame:
        assert frame.array().shape == (360, 320)
        assert frame.plane(0).shape == (240, 320) and frame.plane(1).shape == (120, 320)
        assert stamp.check(frame) == "intact"
    with client.stream("virtual-0") as stream, stream.frame(timeout=60) as frame:
        assert frame.pixel_format == "YUYV" and frame.array().shape == (480, 640, 2)
        assert stamp.check(frame) == "intact"


def test_argb_is_bgra_the_other_way_round(client):
    """CoreVideo's 32ARGB (V4L2 BA24): alpha first, where BGRA has it last."""
    for name, fourcc, alpha in ((stream_pb2.OUTPUT_PIXEL_FORMAT_BGRA, "AR24", 3),
                                (stream_pb2.OUTPUT_PIXEL_FORMAT_ARGB, "BA24", 0)):
        settings = stream_pb2.OutputSettings(pixel_format=name, width=160, height=120)
        with client.stream("virtual-0", settings) as stream, stream.frame(timeout=60) as frame:
            pixels = frame.array()
            assert frame.pixel_format == fourcc and pixels.shape == (120, 160, 4)
            assert (pixels[:, :, alpha] == 255).all()
            assert not (pixels[:, :, 3 - alpha] == 255).all(), "the blue channel is not all 255"


def test_full_range_nv12_spans_0_to_255(client):
    for name, low, high in ((stream_pb2.OUTPUT_PIXEL_FORMAT_NV12, 16, 235),
                            (stream_pb2.OUTPUT_PIXEL_FORMAT_NV12_FULL_RANGE, 0, 255)):
        settings = stream_pb2.OutputSettings(pixel_format=name, width=160, height=120)
        with client.stream("virtual-0", settings) as stream, stream.frame(timeout=60) as frame:
            assert frame.full_range == (low == 0)
            luma = frame.plane(0)
            assert (int(luma.min()), int(luma.max())) == (low, high)
            assert stamp.check(frame) == "intact"


def test_the_default_camera_is_the_back_one_as_on_an_iphone(client):
    assert camerad.CaptureDevice.default(client=client).unique_id == "virtual-1"
    assert camerad.CaptureDevice.default(position="front", client=client).unique_id == "virtual-0"
    assert camerad.CaptureDevice.default(device_type="external", client=client) is None
    # Linked devices hang from one USB device; a virtual camera has none.
    assert camerad.CaptureDevice.matching("virtual-1", client).linked_unique_ids == []


def test_a_capture_session_streams_through_its_video_output(client):
    device = camerad.CaptureDevice.matching("virtual-1", client)
    session = camerad.CaptureSession()
    session.add_input(camerad.CaptureDeviceInput(device))
    output = camerad.VideoDataOutput(pixel_format="i420", width=160, height=120)
    session.add_output(output)
    with session:
        assert session.is_running
        for _ in range(5):
            with output.frame(timeout=60) as frame:
                assert (frame.pixel_format, frame.width, frame.height) == ("YU12", 160, 120)
                assert stamp.check(frame) == "intact"
    assert not session.is_running
    with pytest.raises(camerad.CaptureError) as stopped:
        output.frame()
    assert stopped.value.code == camerad.ErrorCode.INVALID_STATE


def test_inline_frames_carry_their_bytes(client):
    settings = stream_pb2.OutputSettings(pixel_format=stream_pb2.OUTPUT_PIXEL_FORMAT_NV12, width=160, height=120,
                                         delivery=stream_pb2.DELIVERY_INLINE)
    with client.stream("virtual-1", settings) as stream:
        assert not stream.format.shared
        for _ in range(3):
            with stream.frame(timeout=60) as frame:
                assert frame.size == 160 * 120 * 3 // 2 and stamp.check(frame) == "intact"


@pytest.mark.skipif(not camerad._protocol.RINGS, reason="frame and release rings need x86-64's store order")
def test_frames_come_and_go_through_shared_memory(client):
    # Two frames in flight and no ReleaseFrames sent: without the release ring read, frames would stop.
    # More frames than the ring's 64 entries: the client reads camerad's tail again when it seems full.
    settings = stream_pb2.OutputSettings(max_frames_in_flight=2)
    with client.stream("virtual-0", settings) as stream:
        previous = None
        for _ in range(70):
            with stream.frame(timeout=60) as frame:
                assert stamp.check(frame) == "intact"
                assert previous is None or frame.sequence - previous - 1 == sum(frame.dropped_before.values())
                previous = frame.sequence
        assert stream.announced_through_ring >= 70
        assert stream.released_through_ring >= 69 and stream.released_by_message == 0


@pytest.mark.skipif(not camerad._protocol.RINGS, reason="frame and release rings need x86-64's store order")
def test_the_frame_signal_wakes_the_client_for_every_frame_never_read(daemon, client):
    # The frame ring's signal is never read: from an unthrottled camera, a thousand frames (far more than any
    # socket or pipe would hold undrained) keep waking the client.
    camctl = os.environ.get("CAMCTL")
    if not camctl:
        pytest.skip("CAMCTL is not set")
    add = subprocess.run([camctl, "--socket", daemon.socket, "virtual", "add", "--index", "9", "--size", "160x120",
                          "--unthrottled", "--static-picture"], capture_output=True, text=True)
    assert add.returncode == 0, add.stderr
    try:
        with client.stream("virtual-9") as stream:
            for _ in range(1000):
                with stream.frame(timeout=30):
                    pass
            assert stream.announced_through_ring >= 1000
    finally:
        subprocess.run([camctl, "--socket", daemon.socket, "virtual", "remove", "virtual-9"], capture_output=True)


@pytest.mark.skipif(not camerad._protocol.RINGS, reason="frame and release rings need x86-64's store order")
def test_a_format_change_comes_in_its_place_among_the_ring_frames(daemon, client):
    settings = stream_pb2.OutputSettings(max_frames_in_flight=1)
    with client.stream("virtual-0", settings) as stream:
        for _ in range(5):
            with stream.frame(timeout=60) as frame:
                assert stamp.check(frame) == "intact"
        first = stream.format
        # A stream of the same output holding more: the pool grows, and this stream moves to it.
        # A frame of the new pool before its FormatChanged would lie in a pool this client does not know.
        with camerad.Client(daemon.socket, "hoarder") as other, \
                other.stream("virtual-0", stream_pb2.OutputSettings(max_frames_in_flight=8)):
            for _ in range(20):
                with stream.frame(timeout=60) as frame:
                    assert stamp.check(frame) == "intact"
        assert stream.format is not first and stream.announced_through_ring >= 25


def test_the_asyncio_client_streams_and_calls(daemon):
    async def run():
        async with await camerad.aio.Client.connect(daemon.socket, "asyncio") as client:
            devices = await client.list_devices()
            assert [d.unique_id for d in devices] == ["virtual-0", "virtual-1"]
            with pytest.raises(camerad.CaptureError) as missing:
                await client.get_device("nope")
            assert missing.value.code == camerad.ErrorCode.DEVICE_NOT_FOUND
            stream = await client.stream("virtual-0")
            sequences = []
            async with stream:
                async for frame in stream:
                    with frame:
                        assert stamp.check(frame) == "intact"
                        sequences.append(frame.sequence)
                    if len(sequences) == 20:
                        break
            assert sequences == sorted(sequences) and len(set(sequences)) == 20
            assert stream.announced_through_ring >= 20 or not camerad._protocol.RINGS
    asyncio.run(run())


def test_device_events_follow_the_lock(daemon, client):
    with camerad.Client(daemon.socket, "locker") as other:
        events = client.watch_devices(include_existing=True)
        kinds = []
        for event in events:
            kinds.append(camera_pb2.DeviceEvent.Kind.Name(event.kind))
            if event.kind == camera_pb2.DeviceEvent.KIND_SUBSCRIBED:
                other.lock_for_configuration("virtual-0")
                other.unlock_for_configuration("virtual-0")
            if event.kind == camera_pb2.DeviceEvent.KIND_UNLOCKED:
                break
        events.close()
    assert kinds == ["KIND_CONNECTED", "KIND_CONNECTED", "KIND_SUBSCRIBED", "KIND_LOCKED", "KIND_UNLOCKED"]


def run_module(daemon, *arguments):
    environment = dict(os.environ, PYTHONPATH=str(PACKAGE), CAMERAD_SOCKET=daemon.socket)
    return subprocess.run([sys.executable, "-m", "camerad", *arguments], capture_output=True, text=True,
                          env=environment, timeout=120)


def test_python_m_camerad_list_json_is_camctls(daemon):
    camctl = os.environ.get("CAMCTL")
    if not camctl:
        pytest.skip("CAMCTL is not set")
    ours = run_module(daemon, "list", "--json")
    theirs = subprocess.run([camctl, "--socket", daemon.socket, "list", "--json"], capture_output=True, text=True)
    assert ours.returncode == 0 and ours.stdout == theirs.stdout


def test_python_m_camerad_stream_json_has_camctls_statistics(daemon):
    camctl = os.environ.get("CAMCTL")
    if not camctl:
        pytest.skip("CAMCTL is not set")
    ours = run_module(daemon, "stream", "virtual-1", "--count", "30", "--check", "--json")
    theirs = subprocess.run([camctl, "--socket", daemon.socket, "stream", "virtual-1", "--count", "30", "--check",
                             "--json"], capture_output=True, text=True)
    assert ours.returncode == 0, ours.stderr
    mine, reference = json.loads(ours.stdout), json.loads(theirs.stdout)

    def keys(value, prefix=""):
        if isinstance(value, dict):
            return {prefix + k for k in value} | set().union(*(keys(v, prefix + k + ".") for k, v in value.items()))
        return set()
    assert keys(mine) == keys(reference)
    assert mine["frames"] == 30 and mine["format"] == reference["format"] == "yuvs 640x480"
    assert mine["check"]["intact"] == 30
    assert mine["accounting"]["unaccounted"] == 0 and mine["accounting"]["span"] == 30 + mine["accounting"]["dropped"]
    failed = run_module(daemon, "stream", "nope")
    assert failed.returncode == 1 and "(deviceNotFound)" in failed.stderr


def test_python_m_camerad_stream_skip_leaves_the_first_frames_out(daemon):
    """--skip 10: the 5 frames counted come after 10 others of the camera, which starts at 0 for this stream; the
    latency histogram holds those 5."""
    result = run_module(daemon, "stream", "virtual-1", "--skip", "10", "--count", "5", "--check", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["frames"] == 5 and report["check"]["intact"] == 5
    assert report["firstSequence"] >= 10
    histogram = report["latencyHistogram"]  # as camctl's: ascending 10 µs buckets holding every frame
    assert all(bucket % 10 == 0 and frames > 0 for bucket, frames in histogram)
    assert [bucket for bucket, _ in histogram] == sorted({bucket for bucket, _ in histogram})
    assert sum(frames for _, frames in histogram) == 5


def test_the_package_installs_with_pip(tmp_path):
    """`pip install ./Clients/python`, offline (setuptools and wheel from make deps), from a copy: the build's
    leftovers stay out of the tree."""
    import shutil
    source = tmp_path / "source"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                             "--target", str(tmp_path / "site"), str(source)], capture_output=True, text=True,
                            timeout=300, env=dict(os.environ, PIP_NO_INDEX="1"))
    assert result.returncode == 0, result.stderr
    installed = tmp_path / "site" / "camerad"
    assert (installed / "v1" / "stream_pb2.py").exists() and (installed / "py.typed").exists()


# ---- A broken camerad -----------------------------------------------------------

def framed(envelope: envelope_pb2.Envelope) -> bytes:
    payload = envelope.SerializeToString()
    return struct.pack(">I", len(payload)) + payload


def fake_camerad(tmp_path, answer):
    """A server that answers Hello, then sends `answer(call_id)` after the next call's first envelope."""
    path = str(tmp_path / "fake.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def read_envelope(connection):
        head = connection.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return None
        envelope = envelope_pb2.Envelope()
        envelope.ParseFromString(connection.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL))
        return envelope

    def serve():
        connection, _ = listener.accept()
        with connection:
            hello = read_envelope(connection)
            response = envelope_pb2.Envelope(call_id=hello.call_id)
            response.message.payload = camera_pb2.HelloResponse(protocol_version=2).SerializeToString()
            end = envelope_pb2.Envelope(call_id=hello.call_id)
            end.end.status.code = 0
            connection.sendall(framed(response) + framed(end))
            call = read_envelope(connection)
            if call:
                connection.sendall(answer(call.call_id))
            connection.shutdown(socket.SHUT_WR)
            while connection.recv(4096):
                pass
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return path, thread


def list_from(tmp_path, answer, timeout=10.0):
    path, thread = fake_camerad(tmp_path, answer)
    try:
        with camerad.Client(path, timeout=timeout) as client:
            return client.list_devices()
    finally:
        thread.join(30)


def good_answer(call_id: int) -> bytes:
    response = envelope_pb2.Envelope(call_id=call_id)
    device = camera_pb2.ListDevicesResponse().devices.add(unique_id="virtual-0", localized_name="Mutant")
    device.formats.add(fourcc=0x56595559, width=640, height=480)
    listing = camera_pb2.ListDevicesResponse()
    listing.devices.append(device)
    response.message.payload = listing.SerializeToString()
    end = envelope_pb2.Envelope(call_id=call_id)
    end.end.status.code = 0
    return framed(response) + framed(end)


@pytest.mark.parametrize("answer, code", [
    (lambda call_id: b"\x00\x00\x00\x64" + b"\x08\x02" * 5, camerad.ErrorCode.CONNECTION_LOST),  # truncated
    (lambda call_id: b"\xff\xff\xff\xff" + b"\x00" * 8, camerad.ErrorCode.CONNECTION_LOST),  # oversized
    (lambda call_id: b"\x00\x00\x00\x05" + b"\xff" * 5, camerad.ErrorCode.CONNECTION_LOST),  # not an envelope
    (lambda call_id: framed(envelope_pb2.Envelope(call_id=call_id, fd_count=2, message={"payload": b""})),
     camerad.ErrorCode.CONNECTION_LOST),  # descriptors claimed, none sent
])
def test_a_broken_answer_fails_the_call_with_a_code(tmp_path, answer, code):
    with pytest.raises(camerad.CaptureError) as failed:
        list_from(tmp_path, answer)
    assert failed.value.code == code


def test_mutated_answers_never_crash(tmp_path):
    random.seed(7)
    outcomes = {"read": 0, "failed": 0}
    for attempt in range(60):
        good = bytearray(good_answer(2))
        for _ in range(random.randint(1, 4)):
            good[random.randrange(len(good))] ^= random.randint(1, 255)
        (tmp_path / "fake.sock").unlink(missing_ok=True)
        try:
            list_from(tmp_path, lambda call_id, data=bytes(good): data, timeout=2.0)
            outcomes["read"] += 1
        except camerad.CaptureError as error:
            assert error.code in (camerad.ErrorCode.CONNECTION_LOST, camerad.ErrorCode.INTERNAL,
                                  camerad.ErrorCode.TIMED_OUT, camerad.ErrorCode.UNKNOWN) or error.code.value < 30
            outcomes["failed"] += 1
    assert outcomes["failed"] > 0


def test_the_readme_example_runs(daemon):
    """The first example in README.md, as it stands there."""
    text = (PACKAGE / "README.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    example += "\nassert a.shape == (480, 640, 2) and kept.shape == a.shape\nprint('ok')\n"
    result = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(PACKAGE), CAMERAD_SOCKET=daemon.socket))
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


def test_python_and_camctl_hear_one_microphone_at_once(daemon, tmp_path):
    """`python -m camerad listen` and `camctl listen` at once on one microphone, in two
    formats: each hears every period or its report, the stamp in order; the WAV file reads
    back in ffprobe."""
    camctl = os.environ.get("CAMCTL")
    if not camctl:
        pytest.skip("CAMCTL is not set")
    with camerad.Client(daemon.socket, "test") as client:
        added = client.call("AddVirtualCamera", camera_pb2.AddVirtualCameraRequest(media_type=device_pb2.MEDIA_TYPE_AUDIO),
                            camera_pb2.AddVirtualCameraResponse).device.unique_id
        try:
            environment = dict(os.environ, PYTHONPATH=str(PACKAGE), CAMERAD_SOCKET=daemon.socket)
            wav = tmp_path / "heard.wav"
            ours = subprocess.Popen([sys.executable, "-m", "camerad", "listen", added, "--rate", "16000", "--channels", "1",
                                     "--format", "s16", "--duration", "3", "--check", "--json", "--output", str(wav)],
                                    stdout=subprocess.PIPE, text=True, env=environment)
            theirs = subprocess.run([camctl, "--socket", daemon.socket, "listen", added, "--duration", "3", "--check",
                                     "--json"], capture_output=True, text=True, timeout=120)
            out, _ = ours.communicate(timeout=120)
            assert ours.returncode == 0 and theirs.returncode == 0, theirs.stderr
            for report in (json.loads(out), json.loads(theirs.stdout.splitlines()[-1])):
                accounting = report["accounting"]
                assert accounting["unaccounted"] == accounting["overcounted"] == accounting["outOfOrder"] == 0
                assert report["frames"] + accounting["dropped"] == accounting["span"]
                assert report["audioCheck"]["outOfOrder"] == report["audioCheck"]["misplaced"] == 0
                assert report["audioCheck"]["blocks"] >= report["frames"] // 2 - 2 * report["audioCheck"]["runs"]
            probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels",
                                    "-of", "default=nw=1", str(wav)], capture_output=True, text=True)
            assert sorted(probe.stdout.split()) == ["channels=1", "codec_name=pcm_s16le", "sample_rate=16000"]
        finally:
            client.call("RemoveVirtualCamera", camera_pb2.RemoveVirtualCameraRequest(unique_id=added),
                        camera_pb2.RemoveVirtualCameraResponse)


def test_record_mjpeg_of_a_camera_not_running_mjpg_is_refused(client, tmp_path):
    """codec="mjpeg" stores a camera's own JPEGs: virtual-0 runs YUYV, and camerad says what to set."""
    recording = client.record("virtual-0", tmp_path / "mjpeg.mov", codec="mjpeg")
    with pytest.raises(camerad.CaptureError) as refused:
        recording.wait(timeout=60)
    assert refused.value.code == camerad.ErrorCode.UNSUPPORTED_FORMAT and "--format MJPG:" in str(refused.value)
    with pytest.raises(camerad.CaptureError) as unknown:
        client.record("virtual-0", tmp_path / "vp9.mov", codec="vp9")
    assert unknown.value.code == camerad.ErrorCode.INVALID_ARGUMENT


def test_record_matroska_with_the_sound_as_asked(client, tmp_path):
    """A .mkv path is Matroska; the sound's AAC rate and channels are as asked, as ffprobe reads them."""
    added = client.call("AddVirtualCamera", camera_pb2.AddVirtualCameraRequest(media_type=device_pb2.MEDIA_TYPE_AUDIO),
                        camera_pb2.AddVirtualCameraResponse).device.unique_id
    try:
        path = tmp_path / "movie.mkv"
        recording = client.record("virtual-0", path, audio_unique_id=added, width=320, height=240, max_duration=1,
                                  audio_sample_rate=16000, audio_channels=1, audio_bit_rate=48000)
        finished = recording.wait(timeout=60)
        assert finished.ending == record_pb2.RECORDING_ENDING_MAXIMUM_DURATION_REACHED and finished.successfully_finished
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=format_name:stream=codec_name,sample_rate,channels",
                                "-of", "default=nw=1", str(path)], capture_output=True, text=True, check=True)
        assert probe.stdout.split() == ["codec_name=h264", "codec_name=aac", "sample_rate=16000", "channels=1",
                                        "format_name=matroska,webm"], probe.stdout
    finally:
        client.call("RemoveVirtualCamera", camera_pb2.RemoveVirtualCameraRequest(unique_id=added),
                    camera_pb2.RemoveVirtualCameraResponse)


def test_a_pre_roll_over_ten_seconds_is_refused(client, tmp_path):
    recording = client.record("virtual-0", tmp_path / "long.mp4", pre_roll=11)
    with pytest.raises(camerad.CaptureError) as refused:
        recording.wait(timeout=60)
    assert refused.value.code == camerad.ErrorCode.INVALID_ARGUMENT and "pre_roll_ns 11000000000 is out of range" in str(refused.value)
