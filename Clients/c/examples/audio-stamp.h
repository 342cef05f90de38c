/*
 * The signal camerad's virtual microphones make (CameraMedia's AudioStamp): a
 * 1 kHz tone under marks that number each block of 960 samples (20 ms at
 * 48 kHz). Block n starts with a marker (24 samples at +0.9, 24 at -0.9), then
 * 40 bits of 20 samples each (+0.3 for 1, -0.3 for 0): n in 32 bits, most
 * significant first, and a CRC-8 of n (as the frame stamp's, over n in 10
 * big-endian bytes). A listener decodes it to place every sample exactly.
 */
#ifndef CAMERAD_EXAMPLES_AUDIO_STAMP_H
#define CAMERAD_EXAMPLES_AUDIO_STAMP_H

#include <stddef.h>
#include <stdint.h>

typedef struct audio_stamp_block {
    /* It began 960 x number frames after the microphone started (at 48 kHz). */
    uint32_t number;
    /* The index, in the samples decoded, of its first sample. */
    size_t offset;
} audio_stamp_block;

/* Every whole block in `samples` (one channel at `sample_rate`), in order, at most
   `capacity`; returns how many. A block cut by the run's end or failing its CRC is left out. */
size_t audio_stamp_decode(const float *samples, size_t count, uint32_t sample_rate, audio_stamp_block *blocks,
                          size_t capacity);

#endif
