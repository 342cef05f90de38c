#include "audio-stamp.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

enum { BLOCK_FRAMES = 960, MARKER_FRAMES = 24, BIT_FRAMES = 20, BIT_COUNT = 40 };
static const double BIT_LEVEL = 0.3;

static uint8_t crc8_of(uint32_t number) {
    uint8_t bytes[10] = {0, 0, 0, 0, 0, 0, (uint8_t)(number >> 24), (uint8_t)(number >> 16), (uint8_t)(number >> 8),
                         (uint8_t)number};
    uint8_t crc = 0;
    for (int i = 0; i < 10; i++) {
        crc ^= bytes[i];
        for (int bit = 0; bit < 8; bit++) crc = (crc & 0x80) ? (uint8_t)((crc << 1) ^ 0x07) : (uint8_t)(crc << 1);
    }
    return crc;
}

/* The mean of `count` samples from `start`, from running sums. */
static double mean(const double *sums, size_t start, size_t count) { return (sums[start + count] - sums[start]) / (double)count; }

size_t audio_stamp_decode(const float *samples, size_t count, uint32_t sample_rate, audio_stamp_block *blocks,
                          size_t capacity) {
    double scale = sample_rate / 48000.0;
    size_t half = (size_t)fmax(1, round(MARKER_FRAMES * scale));
    size_t needed = (size_t)ceil((MARKER_FRAMES * 2 + BIT_FRAMES * BIT_COUNT) * scale) + 2;
    double *sums = malloc((count + 1) * sizeof *sums);
    if (!sums) return 0;
    sums[0] = 0;
    for (size_t i = 0; i < count; i++) sums[i + 1] = sums[i] + samples[i];
    const double threshold = 0.6;
    size_t found = 0;
    size_t index = 0;
    while (index + needed < count && found < capacity) {
        if (!(mean(sums, index, half) > threshold && mean(sums, index + half, half) < -threshold)) {
            index++;
            continue;
        }
        /* The marker's edge: where high then low differ most, among the starts that match. */
        size_t best = index, start = index;
        double best_contrast = -INFINITY;
        while (start + needed < count && mean(sums, start, half) > threshold && mean(sums, start + half, half) < -threshold) {
            double contrast = mean(sums, start, half) - mean(sums, start + half, half);
            if (contrast > best_contrast) {
                best_contrast = contrast;
                best = start;
            }
            start++;
        }
        uint64_t bits = 0;
        bool readable = true;
        for (int bit = 0; bit < BIT_COUNT; bit++) {
            double from = best + (MARKER_FRAMES * 2 + bit * BIT_FRAMES + BIT_FRAMES * 0.25) * scale;
            size_t span = (size_t)fmax(1, round(BIT_FRAMES * 0.5 * scale));
            double level = mean(sums, (size_t)round(from), span);
            /* A bit is +-0.3: nearer 0 (silence after a lone marker) is no bit, not a 0. */
            readable = readable && fabs(level) > BIT_LEVEL / 2;
            bits = bits << 1 | (level > 0 ? 1 : 0);
        }
        uint32_t number = (uint32_t)(bits >> 8);
        if (readable && (uint8_t)bits == crc8_of(number)) {
            blocks[found++] = (audio_stamp_block){number, best};
            index = best + (size_t)(BLOCK_FRAMES * scale * 0.9);
        } else {
            index = start;
        }
    }
    free(sums);
    return found;
}
