/*
 * camerad-stream: N frames from a camera, and what became of every sequence
 * number (as `camctl stream --stats`: frames, drops by reason, the accounting,
 * and with --check the frame stamps of camerad's virtual cameras).
 *
 *   camerad-stream DEVICE [--count N] [--pixel-format native|nv12|i420|yuyv|bgra]
 *                  [--size WxH] [--check] [--json] [--socket PATH]
 *
 * It is written as an event-loop program: poll() on camerad_client_get_fd(),
 * camerad_client_dispatch(), and the stream's callbacks.
 */
#include <camerad/client.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame-stamp.h"
#include "json.h"

#define MAX_REPORTS 16

typedef struct statistics {
    uint64_t frames, bytes, count;
    bool checking;
    char format[64];
    bool has_first;
    uint64_t first_sequence, last_sequence;
    uint64_t drops[CAMERAD_DROP_REASON_COUNT];
    struct {
        uint64_t span, dropped, unaccounted, overcounted, misplaced, out_of_order, reported_outside;
    } accounting;
    struct {
        uint64_t intact, torn, mismatched, unreadable;
    } check;
    /* Drop reports since the last frame: count and last sequence number. */
    struct {
        uint32_t count;
        uint64_t last;
    } reports[MAX_REPORTS];
    int n_reports;
    bool ended;
    camerad_error status;
} statistics;

static void on_dropped(void *data, camerad_stream *stream, camerad_drop_reason reason, uint32_t count, uint64_t last) {
    statistics *s = data;
    s->drops[reason] += count;
    if (!s->has_first) {
        s->accounting.reported_outside += count;
    } else if (s->n_reports < MAX_REPORTS) {
        s->reports[s->n_reports].count = count;
        s->reports[s->n_reports++].last = last;
    }
}

/* The gap since the last frame against the reports that came in it. */
static void account(statistics *s, uint64_t sequence) {
    if (s->has_first) {
        if (sequence <= s->last_sequence) {
            s->accounting.out_of_order++;
            s->n_reports = 0;
            return;
        }
        uint64_t gap = sequence - s->last_sequence - 1, reported = 0;
        for (int i = 0; i < s->n_reports; i++) {
            reported += s->reports[i].count;
            if (!(s->last_sequence < s->reports[i].last && s->reports[i].last < sequence)) s->accounting.misplaced++;
        }
        s->accounting.unaccounted += gap > reported ? gap - reported : 0;
        s->accounting.overcounted += reported > gap ? reported - gap : 0;
        s->accounting.dropped += reported;
    } else {
        s->has_first = true;
        s->first_sequence = sequence;
    }
    s->n_reports = 0;
    s->last_sequence = sequence;
    s->accounting.span = sequence - s->first_sequence + 1;
}

static void on_process(void *data, camerad_stream *stream) {
    statistics *s = data;
    camerad_frame *frame;
    while (s->frames < s->count && (frame = camerad_stream_dequeue_frame(stream))) {
        if (!s->frames) {
            char name[5];
            snprintf(s->format, sizeof s->format, "%s %ux%u", corevideo_name(frame->fourcc, name), frame->width,
                     frame->height);
        }
        s->frames++;
        s->bytes += frame->size;
        if (s->checking) {
            size_t row = frame->n_planes ? frame->planes[0].bytes_per_row : frame->width;
            switch (frame_stamp_check(frame->data, frame->fourcc, frame->width, frame->height, row, frame->sequence,
                                      frame->presentation_time_ns)) {
            case STAMP_INTACT: s->check.intact++; break;
            case STAMP_TORN: s->check.torn++; break;
            case STAMP_MISMATCHED: s->check.mismatched++; break;
            case STAMP_UNREADABLE: s->check.unreadable++; break;
            }
        }
        account(s, frame->sequence);
        camerad_stream_release_frame(stream, frame, NULL);
    }
}

static void on_ended(void *data, camerad_stream *stream, const camerad_error *status,
                     camerad_interruption_reason reason) {
    statistics *s = data;
    s->ended = true;
    s->status = *status;
}

static const struct camerad_stream_events events = {
    .version = CAMERAD_VERSION_STREAM_EVENTS,
    .process = on_process,
    .dropped = on_dropped,
    .ended = on_ended,
};

static void print_json(const statistics *s) {
    printf("{\"accounting\":{\"dropped\":%llu,\"misplaced\":%llu,\"outOfOrder\":%llu,\"overcounted\":%llu,"
           "\"reportedOutside\":%llu,\"span\":%llu,\"unaccounted\":%llu},\"bytes\":%llu",
           (unsigned long long)s->accounting.dropped, (unsigned long long)s->accounting.misplaced,
           (unsigned long long)s->accounting.out_of_order, (unsigned long long)s->accounting.overcounted,
           (unsigned long long)(s->accounting.reported_outside + (uint64_t)0),
           (unsigned long long)s->accounting.span, (unsigned long long)s->accounting.unaccounted,
           (unsigned long long)s->bytes);
    if (s->checking) {
        printf(",\"check\":{\"intact\":%llu,\"mismatched\":%llu,\"torn\":%llu,\"unreadable\":%llu}",
               (unsigned long long)s->check.intact, (unsigned long long)s->check.mismatched,
               (unsigned long long)s->check.torn, (unsigned long long)s->check.unreadable);
    }
    printf(",\"drops\":{\"discontinuity\":%llu,\"frameWasLate\":%llu,\"outOfBuffers\":%llu}",
           (unsigned long long)s->drops[CAMERAD_DROP_DISCONTINUITY], (unsigned long long)s->drops[CAMERAD_DROP_FRAME_WAS_LATE],
           (unsigned long long)s->drops[CAMERAD_DROP_OUT_OF_BUFFERS]);
    if (s->has_first) {
        printf(",\"firstSequence\":%llu", (unsigned long long)s->first_sequence);
    }
    printf(",\"format\":");
    json_string(stdout, s->format);
    printf(",\"frames\":%llu", (unsigned long long)s->frames);
    if (s->has_first) printf(",\"lastSequence\":%llu", (unsigned long long)s->last_sequence);
    printf("}\n");
}

static void print_text(const statistics *s) {
    printf("%llu frames of %s\n", (unsigned long long)s->frames, s->format);
    printf("drops: frameWasLate %llu, outOfBuffers %llu, discontinuity %llu\n",
           (unsigned long long)s->drops[CAMERAD_DROP_FRAME_WAS_LATE], (unsigned long long)s->drops[CAMERAD_DROP_OUT_OF_BUFFERS],
           (unsigned long long)s->drops[CAMERAD_DROP_DISCONTINUITY]);
    printf("accounting: %llu frames + %llu dropped of %llu numbers; %llu unaccounted, %llu overcounted, "
           "%llu misplaced, %llu out of order\n",
           (unsigned long long)s->frames, (unsigned long long)s->accounting.dropped, (unsigned long long)s->accounting.span,
           (unsigned long long)s->accounting.unaccounted, (unsigned long long)s->accounting.overcounted,
           (unsigned long long)s->accounting.misplaced, (unsigned long long)s->accounting.out_of_order);
    if (s->checking) {
        printf("check: %llu intact, %llu torn, %llu mismatched, %llu unreadable\n", (unsigned long long)s->check.intact,
               (unsigned long long)s->check.torn, (unsigned long long)s->check.mismatched,
               (unsigned long long)s->check.unreadable);
    }
}

static int pixel_format(const char *name) {
    const char *names[] = {"native", "nv12", "i420", "yuyv", "bgra"};
    for (int i = 0; i < 5; i++) {
        if (strcmp(name, names[i]) == 0) return i;
    }
    return -1;
}

int main(int argc, char **argv) {
    const char *device = NULL, *socket_path = NULL;
    int json = 0;
    statistics s = {.count = 100};
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            s.count = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--pixel-format") == 0 && i + 1 < argc) {
            int format = pixel_format(argv[++i]);
            if (format < 0) goto usage;
            settings.pixel_format = (Camerad__V1__OutputPixelFormat)format;
        } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%ux%u", &settings.width, &settings.height) != 2) goto usage;
        } else if (strcmp(argv[i], "--check") == 0) {
            s.checking = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            socket_path = argv[++i];
        } else if (!device && argv[i][0] != '-') {
            device = argv[i];
        } else {
            goto usage;
        }
    }
    if (!device) goto usage;

    camerad_error error;
    camerad_client *client = camerad_client_connect(socket_path, "camerad-stream", &error);
    camerad_stream *stream = client ? camerad_stream_new(client, device, &settings,
                                                         CAMERAD__V1__SESSION_PRESET__SESSION_PRESET_UNSPECIFIED,
                                                         &events, &s, &error)
                                    : NULL;
    if (!stream) {
        fprintf(stderr, "camerad-stream: %s (%s)\n", error.message, camerad_error_name(error.code));
        camerad_client_destroy(client);
        return 1;
    }
    struct pollfd fd = {.fd = camerad_client_get_fd(client), .events = POLLIN};
    while (s.frames < s.count && !s.ended) {
        if (poll(&fd, 1, -1) < 0) break;
        camerad_client_dispatch(client, NULL);
    }
    camerad_stream_destroy(stream);
    camerad_client_destroy(client);
    if (json) {
        print_json(&s);
    } else {
        print_text(&s);
    }
    if (s.frames < s.count) {
        fprintf(stderr, "camerad-stream: the stream ended after %llu frames: %s (%s)\n", (unsigned long long)s.frames,
                s.status.message, camerad_error_name(s.status.code));
        return 1;
    }
    return 0;

usage:
    fprintf(stderr, "usage: camerad-stream DEVICE [--count N] [--pixel-format native|nv12|i420|yuyv|bgra] "
                    "[--size WxH] [--check] [--json] [--socket PATH]\n");
    return 2;
}
