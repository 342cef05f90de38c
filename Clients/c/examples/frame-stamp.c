#include "frame-stamp.h"

enum { ROWS = 4, COLUMNS = 22, BITS = ROWS * COLUMNS };

static uint8_t crc8(const uint8_t *bytes, size_t count) {
    uint8_t crc = 0;
    for (size_t i = 0; i < count; i++) {
        crc ^= bytes[i];
        for (int bit = 0; bit < 8; bit++) crc = (crc & 0x80) ? (uint8_t)((crc << 1) ^ 0x07) : (uint8_t)(crc << 1);
    }
    return crc;
}

/* The middle half of [start, end), as FrameStampDecoder reads a block. */
static void middle_half(uint32_t *start, uint32_t *end) {
    uint32_t quarter = (*end - *start) / 4;
    if (*start + quarter < *end - quarter) {
        *start += quarter;
        *end -= quarter;
    }
}

bool frame_stamp_read(const uint8_t *luma, uint32_t width, uint32_t height, size_t bytes_per_row, int pixel_stride,
                      bool top, frame_stamp *stamp) {
    uint8_t bytes[11] = {0};
    uint32_t band = height / 6;
    uint32_t band_top = top ? 0 : height - band;
    for (int index = 0; index < BITS; index++) {
        uint32_t row = (uint32_t)index / COLUMNS, column = (uint32_t)index % COLUMNS;
        uint32_t x0 = column * width / COLUMNS, x1 = (column + 1) * width / COLUMNS;
        uint32_t y0 = band_top + row * band / ROWS, y1 = band_top + (row + 1) * band / ROWS;
        middle_half(&x0, &x1);
        middle_half(&y0, &y1);
        uint64_t sum = 0, count = 0;
        for (uint32_t y = y0; y < y1; y++) {
            for (uint32_t x = x0; x < x1; x++, count++) sum += luma[y * bytes_per_row + (size_t)x * pixel_stride];
        }
        if (count && sum / count >= 128) bytes[index / 8] |= (uint8_t)(0x80 >> (index % 8));
    }
    if (crc8(bytes, 10) != bytes[10]) return false;
    stamp->sequence = (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 | bytes[3];
    stamp->timestamp_us = 0;
    for (int i = 4; i < 10; i++) stamp->timestamp_us = stamp->timestamp_us << 8 | bytes[i];
    return true;
}

#define FOURCC(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

stamp_verdict frame_stamp_check(const uint8_t *frame, uint32_t fourcc, uint32_t width, uint32_t height,
                                size_t bytes_per_row, uint64_t sequence, int64_t presentation_time_ns) {
    int stride;
    if (fourcc == FOURCC('N', 'V', '1', '2') || fourcc == FOURCC('Y', 'U', '1', '2')) {
        stride = 1;
    } else if (fourcc == FOURCC('Y', 'U', 'Y', 'V')) {
        stride = 2;
    } else {
        return STAMP_UNREADABLE;
    }
    frame_stamp top, bottom;
    bool has_top = frame_stamp_read(frame, width, height, bytes_per_row, stride, true, &top);
    bool has_bottom = frame_stamp_read(frame, width, height, bytes_per_row, stride, false, &bottom);
    if (!has_top && !has_bottom) return STAMP_UNREADABLE;
    if (has_top != has_bottom || top.sequence != bottom.sequence || top.timestamp_us != bottom.timestamp_us) {
        return STAMP_TORN;
    }
    uint64_t expected_us = (uint64_t)(presentation_time_ns > 0 ? presentation_time_ns : 0) / 1000 & ((1ull << 48) - 1);
    if (top.sequence != (uint32_t)sequence || top.timestamp_us != expected_us) return STAMP_MISMATCHED;
    return STAMP_INTACT;
}
