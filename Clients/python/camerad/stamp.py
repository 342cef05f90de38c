"""The stamp camerad's virtual cameras draw into each frame (CameraMedia's FrameStamp).

88 bits — 32 of sequence, 48 of CLOCK_MONOTONIC microseconds, a CRC-8 — as 4 × 22
black and white blocks in a band at the top and again at the bottom, each a sixth
of the frame's height. A frame whose two bands disagree was torn.
"""
from __future__ import annotations

from typing import Optional, Tuple

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
