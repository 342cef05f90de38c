"""A real camerad for the tests: $CAMERAD (make test passes the build's), two virtual cameras."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class Daemon:
    def __init__(self, cameras: int = 2) -> None:
        binary = os.environ.get("CAMERAD")
        if not binary:
            pytest.skip("CAMERAD is not set: point it at a camerad binary (make test does)")
        self.directory = tempfile.mkdtemp(prefix="camerad-py-")
        self.socket = os.path.join(self.directory, "s")
        self.process = subprocess.Popen(
            [binary, "--socket", self.socket, "--virtual-cameras", str(cameras), "--no-v4l2", "--no-alsa", "--hotplug", "off",
             "--state-dir", os.path.join(self.directory, "state"), "--log-level", "error"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.socket)
                return
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.02)
            finally:
                probe.close()
        self.stop()
        raise RuntimeError("camerad did not start")

    def stop(self) -> int:
        status = 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            status = self.process.wait(60)
        shutil.rmtree(self.directory, ignore_errors=True)
        return status


@pytest.fixture(scope="session")
def daemon():
    running = Daemon()
    yield running
    running.stop()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def gives_back_descriptors():
    """Every test gives back every descriptor it took."""
    before = open_fds()
    yield
    import gc
    gc.collect()
    assert open_fds() == before, "the test left descriptors open"
