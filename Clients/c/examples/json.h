/* What the examples share: JSON strings as camctl writes them, and CaptureKit's format names. */
#ifndef CAMERAD_EXAMPLES_JSON_H
#define CAMERAD_EXAMPLES_JSON_H

#include <stdint.h>
#include <stdio.h>

/* `text` as a JSON string, escaped as Swift's JSONEncoder does (slashes unescaped). */
void json_string(FILE *out, const char *text);

/* CaptureKit's name of a V4L2 fourcc: its CoreVideo code ("420v", "yuvs", "BGRA"), else the fourcc. */
const char *corevideo_name(uint32_t fourcc, char out[5]);

#endif
