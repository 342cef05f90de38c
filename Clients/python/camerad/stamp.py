"""The stamp camerad's virtual cameras draw into each frame (CameraMedia's FrameStamp).

88 bits — 32 of sequence, 48 of CLOCK_MONOTONIC microseconds, a CRC-8 — as 4 × 22
black and white blocks in a band at the top and again at the bottom, each a sixth
of the frame's height. A frame whose two bands disagree was torn.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

ROWS, COLUMNS = 4, 22


def _crc8(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def _middle_half(start: int, end: int) -> Tuple[int, int]:
    quarter = (end - start) // 4
    return (start + quarter, end - quarter) if start + quarter < end - quarter else (start, end)


def read_band(luma: np.ndarray, top: bool) -> Optional[Tuple[int, int]]:
    """(sequence, microseconds) from one band of a 2-D luma array, or None when it does not check out."""
    height, width = luma.shape
    band = height // 6
    band_top = 0 if top else height - band
    bits = []
    for index in range(ROWS * COLUMNS):
        row, column = divmod(index, COLUMNS)
        x0, x1 = _middle_half(column * width // COLUMNS, (column + 1) * width // COLUMNS)
        y0, y1 = _middle_half(band_top + row * band // ROWS, band_top + (row + 1) * band // ROWS)
        block = luma[y0:y1, x0:x1]
        bits.append(block.size > 0 and int(block.sum()) // block.size >= 128)
    data = bytes(int("".join("1" if bit else "0" for bit in bits[i:i + 8]), 2) for i in range(0, 88, 8))
    if _crc8(data[:10]) != data[10]:
        return None
    return int.from_bytes(data[:4], "big"), int.from_bytes(data[4:10], "big")


def luma(frame) -> Optional[np.ndarray]:
    """The luma of a camerad.Frame as a 2-D view (no copy), or None for formats without one here."""
    if frame.pixel_format in ("NV12", "YU12"):
        return frame.plane(0)[:, :frame.width]
    if frame.pixel_format == "YUYV":
        return frame.array()[:, :, 0]
    return None


def check(frame) -> str:
    """"intact", "torn", "mismatched" (names another frame) or "unreadable"."""
    plane = luma(frame)
    if plane is None:
        return "unreadable"
    top, bottom = read_band(plane, True), read_band(plane, False)
    if top is None and bottom is None:
        return "unreadable"
    if top != bottom:
        return "torn"
    expected = (frame.sequence & 0xFFFFFFFF, (max(0, frame.presentation_time_ns) // 1000) & ((1 << 48) - 1))
    return "intact" if top == expected else "mismatched"


# The signal of camerad's virtual microphones (CameraMedia's AudioStamp): a 1 kHz
# tone under marks that number each block of 960 samples (20 ms at 48 kHz).
# Block n starts with a marker (24 samples at +0.9, 24 at -0.9), then 40 bits of
# 20 samples each (+0.3 for 1, -0.3 for 0): n in 32 bits, most significant first,
# and a CRC-8 of n (as the frame stamp's, over n in 10 big-endian bytes).
AUDIO_RATE, BLOCK_FRAMES, MARKER_FRAMES, BIT_FRAMES, BIT_COUNT = 48_000, 960, 24, 20, 40
BIT_LEVEL = 0.3


def decode_audio(samples: np.ndarray, sample_rate: int = AUDIO_RATE) -> List[Tuple[int, int]]:
    """Every whole block in `samples` (one channel, floats -1 to 1, at `sample_rate`), in
    order, as (number, index of its first sample); block n began at frame 960 * n of the
    microphone (at 48 kHz). A block cut by the run's end or failing its CRC is left out."""
    scale = sample_rate / AUDIO_RATE
    half = max(1, round(MARKER_FRAMES * scale))
    needed = int(np.ceil((MARKER_FRAMES * 2 + BIT_FRAMES * BIT_COUNT) * scale)) + 2
    sums = np.concatenate(([0.0], np.cumsum(np.asarray(samples, dtype=np.float64))))
    count = len(samples)
    # The mean of `half` samples from each start: high then low marks a marker.
    means = (sums[half:] - sums[:-half]) / half
    candidates = np.flatnonzero((means[:count - 2 * half + 1] > 0.6) & (means[half:count - half + 1] < -0.6))
    blocks: List[Tuple[int, int]] = []
    next_start = 0
    position = 0
    while position < len(candidates):
        start = int(candidates[position])
        if start < next_start or start + needed >= count:
            position += 1
            continue
        # The marker's edge: where high then low differ most, among the starts that match in a row.
        end = position
        while end + 1 < len(candidates) and candidates[end + 1] == candidates[end] + 1:
            end += 1
        run = candidates[position:end + 1]
        run = run[run + needed < count]
        best = int(run[np.argmax(means[run] - means[run + half])]) if len(run) else start
        bits = 0
        span = max(1, round(BIT_FRAMES * 0.5 * scale))
        readable = True
        for bit in range(BIT_COUNT):
            at = round(best + (MARKER_FRAMES * 2 + bit * BIT_FRAMES + BIT_FRAMES * 0.25) * scale)
            level = (sums[at + span] - sums[at]) / span
            # A bit is +-0.3: nearer 0 (silence after a lone marker) is no bit, not a 0.
            readable = readable and abs(level) > BIT_LEVEL / 2
            bits = bits << 1 | (1 if level > 0 else 0)
        number = bits >> 8
        if readable and bits & 0xFF == _crc8(number.to_bytes(10, "big")):
            blocks.append((number, best))
            next_start = best + int(BLOCK_FRAMES * scale * 0.9)
        position = end + 1
    return blocks
