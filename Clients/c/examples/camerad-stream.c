/*
 * camerad-stream: N frames from a camera, or with --audio N periods from a
 * microphone (in its own format), and what became of every sequence number (as
 * `camctl stream --stats` and `camctl listen --stats`: frames, drops by reason,
 * the accounting, and with --check the frame stamps of camerad's virtual cameras).
 *
 *   camerad-stream DEVICE [--count N] [--skip N] [--pixel-format native|nv12|nv12-full|i420|yuyv|bgra]
 *                  [--size WxH] [--check] [--json] [--socket PATH]
 *   camerad-stream MICROPHONE --audio [--count N] [--skip N] [--json] [--socket PATH]
 *
 * --count 0 streams until SIGINT or SIGTERM, then prints the statistics.
 * --skip N leaves the first N frames, and the drops reported before them, out
 * of the statistics and the count (they carry the stream's start-up), as
 * v4l2-ctl --stream-skip does.
 *
 * It is written as an event-loop program: poll() on camerad_client_get_fd(),
 * camerad_client_dispatch(), and the stream's callbacks.
 */
#define _GNU_SOURCE
#include <camerad/client.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "frame-stamp.h"
#include "json.h"

#define MAX_REPORTS 16

typedef struct statistics {
    uint64_t frames, bytes, count;
    /* Frames to leave out (--skip), and how many were. */
    uint64_t skip, skipped;
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
    /* Receive time − capture time per frame, and capture time per sequence number between frames (ns). */
    int64_t *latencies, *intervals;
    size_t n_latencies, n_intervals, capacity;
    int64_t first_time, last_time;
} statistics;

static volatile sig_atomic_t interrupted;
static void on_signal(int number) { interrupted = 1; }

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* As camctl: the value at rank ceil(count × fraction) of the sorted values. */
static double percentile(int64_t *values, size_t count, double fraction) {
    if (!count) return 0;
    qsort(values, count, sizeof *values, compare);
    size_t rank = (size_t)((double)count * fraction);
    if ((double)rank < (double)count * fraction) rank++;
    rank = rank < 1 ? 1 : rank > count ? count : rank;
    return (double)values[rank - 1];
}

/* Every frame's latency in 10 µs buckets, as camctl prints it: [lower bound in µs, frames]
   pairs, ascending (histograms of many streams add up to an exact p99). Sorts the latencies. */
static void print_latency_histogram(int64_t *latencies, size_t count) {
    const int64_t width = 10000; /* ns */
    qsort(latencies, count, sizeof *latencies, compare);
    printf(",\"latencyHistogram\":[");
    for (size_t i = 0; i < count;) {
        bool first = i == 0;
        int64_t bucket = latencies[i] >= 0 ? latencies[i] / width : -((-latencies[i] + width - 1) / width);
        size_t frames = 0;
        for (; i < count && latencies[i] < (bucket + 1) * width; i++) frames++;
        printf("%s[%lld,%zu]", first ? "" : ",", (long long)(bucket * 10), frames);
    }
    printf("]");
}

static void on_dropped(void *data, camerad_stream *stream, camerad_drop_reason reason, uint32_t count, uint64_t last) {
    statistics *s = data;
    if (s->skipped < s->skip) return;
    s->drops[reason] += count;
    if (!s->has_first) {
        s->accounting.reported_outside += count;
    } else if (s->n_reports < MAX_REPORTS) {
        s->reports[s->n_reports].count = count;
        s->reports[s->n_reports++].last = last;
    }
}

/* The gap since the last frame against the reports that came in it. */
static void account(statistics *s, uint64_t sequence, int64_t time) {
    if (s->n_latencies == s->capacity) {
        s->capacity = s->capacity ? 2 * s->capacity : 1024;
        s->latencies = realloc(s->latencies, s->capacity * sizeof *s->latencies);
        s->intervals = realloc(s->intervals, s->capacity * sizeof *s->intervals);
    }
    s->latencies[s->n_latencies++] = monotonic_ns() - time;
    if (s->has_first && sequence > s->last_sequence) {
        s->intervals[s->n_intervals++] = (time - s->last_time) / (int64_t)(sequence - s->last_sequence);
    }
    if (!s->has_first) s->first_time = time;
    s->last_time = time;
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
    while ((!s->count || s->frames < s->count) && (frame = camerad_stream_dequeue_frame(stream))) {
        if (s->skipped < s->skip) {
            s->skipped++;
            camerad_stream_release_frame(stream, frame, NULL);
            continue;
        }
        if (!s->frames) {
            const camerad_stream_format *format = camerad_stream_get_format(stream);
            char name[5];
            if (format->sample_rate) {
                const char *sample = format->sample_format == CAMERAD__V1__SAMPLE_FORMAT__SAMPLE_FORMAT_S16   ? "s16"
                                     : format->sample_format == CAMERAD__V1__SAMPLE_FORMAT__SAMPLE_FORMAT_S32 ? "s32"
                                                                                                              : "f32";
                snprintf(s->format, sizeof s->format, "%s %uch %u Hz, %u frames a period", sample, format->channels,
                         format->sample_rate, format->period_frames);
            } else {
                snprintf(s->format, sizeof s->format, "%s %ux%u", corevideo_name(frame->fourcc, name), frame->width,
                         frame->height);
            }
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
        account(s, frame->sequence, frame->presentation_time_ns);
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
    double elapsed = s->frames > 1 ? (double)(s->last_time - s->first_time) / 1e9 : 0;
    double median = percentile(s->intervals, s->n_intervals, 0.5);
    printf(",\"deviceFramesPerSecond\":%.6f", median > 0 ? 1e9 / median : 0);
    printf(",\"drops\":{\"discontinuity\":%llu,\"frameWasLate\":%llu,\"outOfBuffers\":%llu}",
           (unsigned long long)s->drops[CAMERAD_DROP_DISCONTINUITY], (unsigned long long)s->drops[CAMERAD_DROP_FRAME_WAS_LATE],
           (unsigned long long)s->drops[CAMERAD_DROP_OUT_OF_BUFFERS]);
    printf(",\"elapsedSeconds\":%.9f", elapsed);
    if (s->has_first) printf(",\"firstSequence\":%llu", (unsigned long long)s->first_sequence);
    printf(",\"format\":");
    json_string(stdout, s->format);
    printf(",\"frames\":%llu", (unsigned long long)s->frames);
    printf(",\"framesPerSecond\":%.6f", elapsed > 0 ? (double)(s->frames - 1) / elapsed : 0);
    if (s->has_first) printf(",\"lastSequence\":%llu", (unsigned long long)s->last_sequence);
    print_latency_histogram(s->latencies, s->n_latencies);
    printf(",\"latencyMilliseconds\":{\"max\":%.6f,\"p50\":%.6f,\"p99\":%.6f}}\n",
           percentile(s->latencies, s->n_latencies, 1) / 1e6, percentile(s->latencies, s->n_latencies, 0.5) / 1e6,
           percentile(s->latencies, s->n_latencies, 0.99) / 1e6);
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
    /* In OutputPixelFormat's order: the index is the value. */
    const char *names[] = {"native", "nv12", "i420", "yuyv", "bgra", "nv12-full"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++) {
        if (strcmp(name, names[i]) == 0) return i;
    }
    return -1;
}

int main(int argc, char **argv) {
    const char *device = NULL, *socket_path = NULL;
    int json = 0, audio = 0;
    statistics s = {.count = 100};
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            s.count = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--skip") == 0 && i + 1 < argc) {
            s.skip = strtoull(argv[++i], NULL, 10);
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
        } else if (strcmp(argv[i], "--audio") == 0) {
            audio = 1;
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            socket_path = argv[++i];
        } else if (!device && argv[i][0] != '-') {
            device = argv[i];
        } else {
            goto usage;
        }
    }
    if (!device) goto usage;
    /* A microphone's periods come in its own format; the stamp check is the cameras'. */
    if (audio && (s.checking || settings.pixel_format || settings.width)) goto usage;

    camerad_error error;
    camerad_client *client = camerad_client_connect(socket_path, "camerad-stream", &error);
    camerad_stream *stream = !client ? NULL
                             : audio ? camerad_audio_stream_new(client, device, NULL, 0, &events, &s, &error)
                                     : camerad_stream_new(client, device, &settings,
                                                          CAMERAD__V1__SESSION_PRESET__SESSION_PRESET_UNSPECIFIED,
                                                          &events, &s, &error);
    if (!stream) {
        fprintf(stderr, "camerad-stream: %s (%s)\n", error.message, camerad_error_name(error.code));
        camerad_client_destroy(client);
        return 1;
    }
    struct sigaction action = {.sa_handler = on_signal};
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    struct pollfd fd = {.fd = camerad_client_get_fd(client), .events = POLLIN};
    while ((!s.count || s.frames < s.count) && !s.ended && !interrupted) {
        if (poll(&fd, 1, -1) < 0) continue; /* EINTR: the loop looks at `interrupted` */
        camerad_client_dispatch(client, NULL);
    }
    camerad_stream_destroy(stream);
    camerad_client_destroy(client);
    if (json) {
        print_json(&s);
    } else {
        print_text(&s);
    }
    free(s.latencies);
    free(s.intervals);
    if (s.frames < s.count && !interrupted) {
        fprintf(stderr, "camerad-stream: the stream ended after %llu frames: %s (%s)\n", (unsigned long long)s.frames,
                s.status.message, camerad_error_name(s.status.code));
        return 1;
    }
    return 0;

usage:
    fprintf(stderr, "usage: camerad-stream DEVICE [--count N] [--skip N] [--pixel-format native|nv12|nv12-full|i420|yuyv|bgra] "
                    "[--size WxH] [--check] [--json] [--socket PATH]\n"
                    "       camerad-stream MICROPHONE --audio [--count N] [--skip N] [--json] [--socket PATH]\n");
    return 2;
}
