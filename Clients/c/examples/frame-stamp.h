/*
 * The stamp camerad's virtual cameras draw into each frame (CameraMedia's
 * FrameStamp): 88 bits — 32 of sequence, 48 of CLOCK_MONOTONIC microseconds,
 * a CRC-8 — as 4 × 22 black and white blocks in a band at the top and again
 * at the bottom, each a sixth of the frame's height. A frame whose bands
 * disagree was torn.
 */
#ifndef CAMERAD_EXAMPLES_FRAME_STAMP_H
#define CAMERAD_EXAMPLES_FRAME_STAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct frame_stamp {
    uint32_t sequence;
    uint64_t timestamp_us;
} frame_stamp;

typedef enum stamp_verdict { STAMP_INTACT, STAMP_TORN, STAMP_MISMATCHED, STAMP_UNREADABLE } stamp_verdict;

/* Reads one band from luma `bytes_per_row` apart, `pixel_stride` bytes between pixels (YUYV: 2). */
bool frame_stamp_read(const uint8_t *luma, uint32_t width, uint32_t height, size_t bytes_per_row, int pixel_stride,
                      bool top, frame_stamp *stamp);

/* Both bands of a frame of `fourcc` (NV12, YU12, YUYV; others are unreadable) against its sequence and time. */
stamp_verdict frame_stamp_check(const uint8_t *frame, uint32_t fourcc, uint32_t width, uint32_t height,
                                size_t bytes_per_row, uint64_t sequence, int64_t presentation_time_ns);

#endif
