"""python -m camerad: list the devices, stream from a camera or listen to a microphone with camctl's statistics.

    python -m camerad list [--json]
    python -m camerad stream DEVICE [--count N] [--skip N] [--pixel-format nv12] [--size WxH] [--check] [--json]
    python -m camerad listen DEVICE [--duration S] [--rate R] [--channels C] [--format s16|s32|f32]
                             [--output FILE.wav] [--check] [--json]
"""
from __future__ import annotations

import argparse
import json
import signal
import struct
import sys
import time
from typing import Dict, List, Optional

import numpy as np

from . import stamp
from .capture import DEVICE_TYPES, POSITIONS, PIXEL_FORMATS
from .client import DROP_REASONS, Client
from .errors import CaptureError
from .v1 import device_pb2, stream_pb2

COREVIDEO_NAMES = {"NV12": "420v", "YU12": "y420", "YUYV": "yuvs", "AR24": "BGRA", "BA24": "32ARGB", "MJPG": "dmb1"}


def list_devices(client: Client, as_json: bool) -> None:
    devices = client.list_devices()
    if as_json:
        summaries = [{"deviceType": DEVICE_TYPES.get(d.device_type, "unknown"), "isConnected": d.is_connected,
                      "localizedName": d.localized_name,
                      "mediaType": "audio" if d.media_type == device_pb2.MEDIA_TYPE_AUDIO else "video",
                      "modelID": d.model_id,
                      "position": POSITIONS.get(d.position, "unspecified"), "uniqueID": d.unique_id}
                     for d in devices]
        # As camctl (Swift's JSONEncoder, pretty, sorted keys): `"key" : value`, "[\n\n]" when empty.
        print(json.dumps(summaries, indent=2, sort_keys=True, separators=(",", " : "), ensure_ascii=False)
              if summaries else "[\n\n]")
        return
    if not devices:
        print("no devices")
    for d in devices:
        print(f"{d.unique_id:<24} {d.localized_name} ({POSITIONS.get(d.position, 'unspecified')}, "
              f"{DEVICE_TYPES.get(d.device_type, 'unknown')})")


class Statistics:
    """What `camctl stream --stats` counts, with the same names in JSON."""

    def __init__(self, checking: bool) -> None:
        self.frames = self.bytes = self.samples = 0
        self.format = ""
        self.first_sequence: Optional[int] = None
        self.last_sequence: Optional[int] = None
        self.first_time: Optional[int] = None
        self.last_time: Optional[int] = None
        self.drops: Dict[str, int] = {name: 0 for name in DROP_REASONS.values()}
        self.accounting = dict(span=0, dropped=0, unaccounted=0, overcounted=0, misplaced=0, outOfOrder=0,
                               reportedOutside=0)
        self.latencies: List[int] = []
        self.intervals: List[float] = []
        self.check = dict(intact=0, torn=0, mismatched=0, unreadable=0) if checking else None

    def record(self, frame) -> None:
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        for name, count, _ in frame.drop_reports:
            self.drops[name] = self.drops.get(name, 0) + count
        if self.last_sequence is None:
            self.accounting["reportedOutside"] += sum(count for _, count, _ in frame.drop_reports)
        if not self.format and frame.format.is_audio:
            f = frame.format
            self.format = f"{f.sample_format} {f.channels}ch {f.sample_rate} Hz, {f.period_frames} frames a period"
        elif not self.format:
            name = "420f" if frame.full_range else COREVIDEO_NAMES.get(frame.pixel_format, frame.pixel_format)
            self.format = f"{name} {frame.width}x{frame.height}"
        self.frames += 1
        self.bytes += frame.size
        self.samples += frame.n_samples
        self.latencies.append(now - frame.presentation_time_ns)
        if self.check is not None and not frame.format.is_audio:
            self.check[stamp.check(frame)] += 1
        previous, sequence = self.last_sequence, frame.sequence
        if previous is not None:
            if sequence <= previous:
                self.accounting["outOfOrder"] += 1
                return
            gap = sequence - previous - 1
            reported = sum(count for _, count, _ in frame.drop_reports)
            self.accounting["unaccounted"] += max(0, gap - reported)
            self.accounting["overcounted"] += max(0, reported - gap)
            self.accounting["misplaced"] += sum(1 for _, _, last in frame.drop_reports
                                                if not previous < last < sequence)
            self.accounting["dropped"] += reported
            self.intervals.append((frame.presentation_time_ns - self.last_time) / (sequence - previous))
        if self.first_sequence is None:
            self.first_sequence, self.first_time = sequence, frame.presentation_time_ns
        self.last_sequence, self.last_time = sequence, frame.presentation_time_ns
        self.accounting["span"] = sequence - self.first_sequence + 1

    def latency(self, percentile: float) -> float:
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        index = min(len(ordered) - 1, max(0, -(-int(len(ordered) * percentile * 1e9) // int(1e9)) - 1))
        return ordered[index] / 1e6

    def latency_histogram(self) -> List[List[int]]:
        """Every frame's latency in 10 µs buckets, as camctl prints it: [lower bound in µs, frames] pairs,
        ascending (histograms of many streams add up to an exact p99)."""
        buckets: Dict[int, int] = {}
        for latency in self.latencies:
            bucket = latency // 10_000 * 10
            buckets[bucket] = buckets.get(bucket, 0) + 1
        return [[bucket, buckets[bucket]] for bucket in sorted(buckets)]

    def json(self) -> dict:
        elapsed = (self.last_time - self.first_time) / 1e9 if self.frames > 1 else 0.0
        median = sorted(self.intervals)[len(self.intervals) // 2] if self.intervals else 0.0
        result = {
            "frames": self.frames, "bytes": self.bytes, "format": self.format, "elapsedSeconds": elapsed,
            "framesPerSecond": (self.frames - 1) / elapsed if elapsed > 0 else 0.0,
            "deviceFramesPerSecond": 1e9 / median if median > 0 else 0.0,
            "drops": self.drops, "accounting": self.accounting,
            "latencyMilliseconds": {"p50": self.latency(0.5), "p99": self.latency(0.99), "max": self.latency(1.0)},
            "latencyHistogram": self.latency_histogram(),
        }
        if self.first_sequence is not None:
            result["firstSequence"], result["lastSequence"] = self.first_sequence, self.last_sequence
        if self.check is not None:
            result["check"] = self.check
        return result

    def text(self) -> str:
        a = self.accounting
        lines = [f"{self.frames} frames of {self.format}",
                 "drops: " + ", ".join(f"{name} {count}" for name, count in self.drops.items()),
                 f"accounting: {self.frames} frames + {a['dropped']} dropped of {a['span']} numbers; "
                 f"{a['unaccounted']} unaccounted, {a['overcounted']} overcounted, {a['misplaced']} misplaced, "
                 f"{a['outOfOrder']} out of order",
                 f"latency: p50 {self.latency(0.5):.2f} ms, p99 {self.latency(0.99):.2f} ms"]
        if self.check is not None:
            c = self.check
            lines.append(f"check: {c['intact']} intact, {c['torn']} torn, {c['mismatched']} mismatched, "
                         f"{c['unreadable']} unreadable")
        return "\n".join(lines)


def stream(client: Client, arguments: argparse.Namespace) -> int:
    settings = stream_pb2.OutputSettings(pixel_format=PIXEL_FORMATS[arguments.pixel_format])
    if arguments.size:
        settings.width, settings.height = (int(n) for n in arguments.size.lower().split("x"))
    statistics = Statistics(arguments.check)
    interrupted = False
    # SIGINT and SIGTERM end the stream and print the statistics (even where the shell ignores SIGINT).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    skipped = 0
    with client.stream(arguments.device, settings) as frames:
        try:
            for frame in frames:
                with frame:
                    if skipped < arguments.skip:  # with the drops reported before it
                        skipped += 1
                        continue
                    statistics.record(frame)
                if arguments.count and statistics.frames >= arguments.count:
                    break
        except KeyboardInterrupt:  # --count 0: until SIGINT
            interrupted = True
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second one does not cut the report short
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(json.dumps(statistics.json(), sort_keys=True, separators=(",", ":")) if arguments.json
          else statistics.text())
    if statistics.frames < arguments.count and not interrupted:
        error = frames.error
        print(f"camerad: the stream ended after {statistics.frames} frames"
              + (f": {error.message} ({error.code.capturekit_name})" if error else ""), file=sys.stderr)
        return 1
    return 0


class WAVFile:
    """A RIFF WAVE file being written: PCM, or IEEE float for f32; its sizes filled in at the end."""

    def __init__(self, path: str, rate: int, channels: int, sample_format: str) -> None:
        self.file = open(path, "wb")
        self.data_bytes = 0
        width = 2 if sample_format == "s16" else 4
        tag = 3 if sample_format == "f32" else 1
        self.file.write(b"RIFF" + struct.pack("<I", 0) + b"WAVEfmt " + struct.pack(
            "<IHHIIHH", 16, tag, channels, rate, rate * channels * width, channels * width, width * 8)
            + b"data" + struct.pack("<I", 0))

    def write(self, data) -> None:
        self.file.write(data)
        self.data_bytes += len(data)

    def close(self) -> None:
        self.file.seek(4)
        self.file.write(struct.pack("<I", 36 + self.data_bytes))
        self.file.seek(40)
        self.file.write(struct.pack("<I", self.data_bytes))
        self.file.close()


def listen(client: Client, arguments: argparse.Namespace) -> int:
    """A microphone's periods for --duration seconds (of their own timestamps), with camctl's statistics."""
    statistics = Statistics(False)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    wav: Optional[WAVFile] = None
    run: List = []
    blocks = dict(blocks=0, outOfOrder=0, missing=0, misplaced=0, runs=0)

    def decode(run_start: int) -> None:
        if not run:
            return
        samples = np.concatenate(run)
        found = stamp.decode_audio(samples, periods.format.sample_rate)
        blocks["runs"] += 1
        blocks["blocks"] += len(found)
        blocks["outOfOrder"] += sum(1 for a, b in zip(found, found[1:]) if b[0] <= a[0])
        blocks["missing"] += sum(max(0, b[0] - a[0] - 1) for a, b in zip(found, found[1:]))
        rate = periods.format.sample_rate
        blocks["misplaced"] += sum(1 for number, offset in found
                                   if not -2 <= run_start + offset - number * 960 * rate / 48000 <= 34)
        run.clear()

    run_start = 0
    with client.audio_stream(arguments.device, arguments.rate, arguments.channels, arguments.format,
                             arguments.period_frames) as periods:
        start: Optional[int] = None
        try:
            for period in periods:
                with period:
                    statistics.record(period)
                    if wav is None and arguments.output:
                        f = periods.format
                        wav = WAVFile(arguments.output, f.sample_rate, f.channels, f.sample_format)
                    if wav is not None:
                        wav.write(period.buffer)
                    if arguments.check:
                        if period.drop_reports or not run:
                            decode(run_start)
                            run_start = period.sequence * period.n_samples
                        run.append(period.array()[:, 0].astype(np.float32) / _full_scale(periods.format.sample_format))
                    start = period.presentation_time_ns if start is None else start
                    if (period.presentation_time_ns - start) / 1e9 >= arguments.duration:
                        break
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if wav is not None:
        wav.close()
    decode(run_start)
    result = statistics.json()
    result["samples"] = statistics.samples
    if arguments.check:
        result["audioCheck"] = blocks
    print(json.dumps(result, sort_keys=True, separators=(",", ":")) if arguments.json
          else statistics.text() + f"\n{statistics.samples} samples"
          + (f"\ncheck: {blocks['blocks']} stamp blocks, {blocks['outOfOrder']} out of order, "
             f"{blocks['misplaced']} misplaced, in {blocks['runs']} unbroken runs" if arguments.check else ""))
    return 0


def _full_scale(sample_format: str) -> float:
    return {"s16": 32768.0, "s32": 2147483648.0}.get(sample_format, 1.0)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m camerad", description="camerad's cameras, from Python.")
    parser.add_argument("--socket", help="camerad's socket (default: $CAMERAD_SOCKET, $XDG_RUNTIME_DIR/camerad.sock, "
                                         "/run/camerad/camerad.sock)")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the cameras camerad serves")
    listing.add_argument("--json", action="store_true", help="the same JSON as `camctl list --json`")
    streaming = commands.add_parser("stream", help="stream frames and print camctl's statistics")
    streaming.add_argument("device", help="a unique ID (camerad list shows them)")
    streaming.add_argument("--count", type=int, default=100, help="frames to read (default 100; 0: until SIGINT)")
    streaming.add_argument("--skip", type=int, default=0,
                           help="leave the first N frames, and drops reported before them, out of the statistics and "
                                "the count (they carry the start-up), as v4l2-ctl --stream-skip")
    streaming.add_argument("--pixel-format", choices=[k for k in PIXEL_FORMATS if k], default=None)
    streaming.add_argument("--size", help="WIDTHxHEIGHT")
    streaming.add_argument("--check", action="store_true", help="read the virtual cameras' frame stamps")
    streaming.add_argument("--json", action="store_true", help="one JSON object, as `camctl stream --json`")
    listening = commands.add_parser("listen", help="hear a microphone and print camctl's statistics")
    listening.add_argument("device", help="a microphone's unique ID (camerad list shows them)")
    listening.add_argument("--duration", type=float, default=1.0, help="seconds of samples (default 1)")
    listening.add_argument("--rate", type=int, default=0, help="samples per second (default: the microphone's)")
    listening.add_argument("--channels", type=int, default=0, help="channels (default: the microphone's)")
    listening.add_argument("--format", choices=["s16", "s32", "f32"], default=None, help="default: the microphone's")
    listening.add_argument("--period-frames", type=int, default=0, help="frames a period (default: 10 ms)")
    listening.add_argument("--output", help="write the samples to this WAV file")
    listening.add_argument("--check", action="store_true", help="decode the virtual microphones' audio stamp")
    listening.add_argument("--json", action="store_true", help="one JSON object, as `camctl listen --json`")
    arguments = parser.parse_args(argv)
    try:
        with Client(arguments.socket, "python -m camerad") as client:
            if arguments.command == "list":
                list_devices(client, arguments.json)
                return 0
            if arguments.command == "listen":
                return listen(client, arguments)
            return stream(client, arguments)
    except CaptureError as error:
        print(f"camerad: {error.message} ({error.code.capturekit_name})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
