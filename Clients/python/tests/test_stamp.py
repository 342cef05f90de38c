"""The audio stamp decoder on made-up samples (no daemon needed)."""

import numpy as np

from camerad import stamp


def test_a_marker_before_silence_is_no_block():
    # Silence after a lone marker is not 40 zero bits (CRC-8 of 0 is 0: it would read as block 0).
    marker = np.concatenate([np.full(stamp.MARKER_FRAMES, 0.9), np.full(stamp.MARKER_FRAMES, -0.9)])
    samples = np.concatenate([np.zeros(100), marker, np.zeros(2000)]).astype(np.float32)
    assert stamp.decode_audio(samples) == []


def test_a_marker_and_zero_bits_is_block_0():
    marker = np.concatenate([np.full(stamp.MARKER_FRAMES, 0.9), np.full(stamp.MARKER_FRAMES, -0.9)])
    bits = np.full(stamp.BIT_FRAMES * stamp.BIT_COUNT, -0.3)
    samples = np.concatenate([np.zeros(100), marker, bits, np.zeros(1000)]).astype(np.float32)
    assert [number for number, _ in stamp.decode_audio(samples)] == [0]
