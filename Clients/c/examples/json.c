#include "json.h"

#include <camerad/client.h>
#include <string.h>

void json_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        default:
            if (*c < 0x20) {
                fprintf(out, "\\u%04x", *c);
            } else {
                fputc(*c, out);
            }
        }
    }
    fputc('"', out);
}

const char *corevideo_name(uint32_t fourcc, char out[5]) {
    static const struct {
        const char *v4l2, *corevideo;
    } names[] = {{"NV12", "420v"}, {"YU12", "y420"}, {"YUYV", "yuvs"}, {"AR24", "BGRA"}, {"MJPG", "dmb1"}};
    camerad_fourcc_string(fourcc, out);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(out, names[i].v4l2) == 0) strcpy(out, names[i].corevideo);
    }
    return out;
}
