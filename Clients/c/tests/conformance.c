/*
 * The conformance scenarios (Clients/CONFORMANCE.md), in C, against a real
 * camerad. Each test is named conformance_<scenario>; CaptureKit's and the
 * Python package's suites hold the same list.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <camerad/client.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "audio-stamp.h"
#include "frame-stamp.h"
#include "support.h"

/* ---- A stream that keeps what it sees ------------------------------------ */

typedef struct seen {
    camerad_stream *stream;
    uint64_t frames, wanted, intact, not_intact, out_of_order, unaccounted;
    uint64_t last_sequence;
    bool any;
    bool ended;
    camerad_error status;
    camerad_interruption_reason interruption;
    uint32_t fourcc, width, height;
} seen;

/* Checks each frame's stamp and its place in the numbering, then releases it. */
static void take(seen *s, camerad_frame *frame) {
    size_t row = frame->n_planes ? frame->planes[0].bytes_per_row : frame->width;
    stamp_verdict verdict = frame_stamp_check(frame->data, frame->fourcc, frame->width, frame->height, row,
                                              frame->sequence, frame->presentation_time_ns);
    if (verdict == STAMP_INTACT) {
        s->intact++;
    } else {
        s->not_intact++;
    }
    uint32_t dropped = 0;
    for (int i = 0; i < CAMERAD_DROP_REASON_COUNT; i++) dropped += frame->dropped_before[i];
    if (s->any && frame->sequence <= s->last_sequence) s->out_of_order++;
    if (s->any && frame->sequence > s->last_sequence && frame->sequence - s->last_sequence - 1 != dropped) {
        s->unaccounted++;
    }
    s->any = true;
    s->last_sequence = frame->sequence;
    s->fourcc = frame->fourcc;
    s->width = frame->width;
    s->height = frame->height;
    s->frames++;
}

static void on_process(void *data, camerad_stream *stream) {
    seen *s = data;
    camerad_frame *frame;
    while ((frame = camerad_stream_dequeue_frame(stream))) {
        take(s, frame);
        assert_int_equal(camerad_stream_release_frame(stream, frame, NULL), CAMERAD_OK);
    }
}

static void on_ended(void *data, camerad_stream *stream, const camerad_error *status,
                     camerad_interruption_reason reason) {
    seen *s = data;
    s->ended = true;
    s->status = *status;
    s->interruption = reason;
}

static const struct camerad_stream_events counting = {
    .version = CAMERAD_VERSION_STREAM_EVENTS, .process = on_process, .ended = on_ended};

static bool enough(void *argument) {
    seen *s = argument;
    return s->frames >= s->wanted || s->ended;
}

static bool both_enough(void *argument) {
    seen *s = argument;
    return enough(&s[0]) && enough(&s[1]);
}

static bool has_ended(void *argument) { return ((seen *)argument)->ended; }

/* ---- The scenarios -------------------------------------------------------- */

static void conformance_discover_and_filter(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    assert_non_null(client);
    Camerad__V1__ListDevicesResponse *all = NULL;
    assert_int_equal(camerad_list_devices(client, NULL, &all, NULL), CAMERAD_OK);
    assert_int_equal(all->n_devices, 2);
    assert_string_equal(all->devices[0]->unique_id, "virtual-0");
    assert_string_equal(all->devices[1]->unique_id, "virtual-1");

    Camerad__V1__DeviceFilter filter = CAMERAD__V1__DEVICE_FILTER__INIT;
    filter.position = CAMERAD__V1__POSITION__POSITION_BACK;
    Camerad__V1__ListDevicesResponse *back = NULL;
    assert_int_equal(camerad_list_devices(client, &filter, &back, NULL), CAMERAD_OK);
    size_t expected = 0;
    for (size_t i = 0; i < all->n_devices; i++) expected += all->devices[i]->position == filter.position;
    assert_true(expected > 0 && expected < all->n_devices);
    assert_int_equal(back->n_devices, expected);
    for (size_t i = 0; i < back->n_devices; i++) assert_int_equal(back->devices[i]->position, filter.position);

    Camerad__V1__DeviceType external = CAMERAD__V1__DEVICE_TYPE__DEVICE_TYPE_EXTERNAL;
    Camerad__V1__DeviceFilter by_type = CAMERAD__V1__DEVICE_FILTER__INIT;
    by_type.n_device_types = 1;
    by_type.device_types = &external;
    Camerad__V1__ListDevicesResponse *none = NULL;
    assert_int_equal(camerad_list_devices(client, &by_type, &none, NULL), CAMERAD_OK);
    assert_int_equal(none->n_devices, 0);

    camerad_message_free(all);
    camerad_message_free(back);
    camerad_message_free(none);
    camerad_client_destroy(client);
}

/* The numbers after each `"key" : ` in `text`, in order. */
static size_t numbers_after(const char *text, const char *key, long *out, size_t capacity) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\" : ", key);
    size_t count = 0;
    for (const char *at = strstr(text, pattern); at && count < capacity; at = strstr(at + 1, pattern)) {
        out[count++] = strtol(at + strlen(pattern), NULL, 10);
    }
    return count;
}

static void conformance_info_agrees_with_camctl(void **state) {
    if (!getenv("CAMCTL") || !*getenv("CAMCTL")) skip();
    camerad_client *client = test_connect(&test_shared, "conformance");
    Camerad__V1__Device *device = NULL;
    assert_int_equal(camerad_get_device(client, "virtual-0", &device, NULL), CAMERAD_OK);
    char *info = test_camctl(&test_shared, "info virtual-0 --json");
    assert_non_null(info);
    char name[300];
    snprintf(name, sizeof name, "\"localizedName\" : \"%s\"", device->localized_name);
    assert_non_null(strstr(info, name));
    long widths[64], heights[64], ids[256];
    assert_int_equal(numbers_after(info, "width", widths, 64), device->n_formats);
    assert_int_equal(numbers_after(info, "height", heights, 64), device->n_formats);
    for (size_t i = 0; i < device->n_formats; i++) {
        assert_int_equal(widths[i], device->formats[i]->width);
        assert_int_equal(heights[i], device->formats[i]->height);
    }
    assert_int_equal(numbers_after(info, "id", ids, 256), device->n_controls);
    for (size_t i = 0; i < device->n_controls; i++) assert_int_equal(ids[i], device->controls[i]->id);
    assert_true(device->capabilities != NULL);
    free(info);
    camerad_message_free(device);
    camerad_client_destroy(client);
}

static void conformance_stream_stamps_in_order(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    seen s = {.wanted = 100};
    camerad_error error;
    s.stream = camerad_stream_new(client, "virtual-0", NULL, 0, &counting, &s, &error);
    assert_non_null(s.stream);
    assert_true(test_iterate_until(client, enough, &s));
    assert_false(s.ended);
    assert_true(s.frames >= 100);
    assert_int_equal(s.intact, s.frames);
    assert_int_equal(s.out_of_order, 0);
    assert_int_equal(s.unaccounted, 0);
    camerad_stream_destroy(s.stream);
    camerad_client_destroy(client);
}

static void conformance_second_stream_other_variant(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    seen s[2] = {{.wanted = 30}, {.wanted = 30}};
    Camerad__V1__OutputSettings small = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    small.pixel_format = CAMERAD__V1__OUTPUT_PIXEL_FORMAT__OUTPUT_PIXEL_FORMAT_NV12;
    small.width = 320;
    small.height = 240;
    s[0].stream = camerad_stream_new(client, "virtual-1", NULL, 0, &counting, &s[0], NULL);
    s[1].stream = camerad_stream_new(client, "virtual-1", &small, 0, &counting, &s[1], NULL);
    assert_non_null(s[0].stream);
    assert_non_null(s[1].stream);
    const camerad_stream_format *format = camerad_stream_get_format(s[1].stream);
    assert_int_equal(format->width, 320);
    assert_int_equal(format->height, 240);
    assert_true(test_iterate_until(client, both_enough, s));
    for (int i = 0; i < 2; i++) {
        assert_false(s[i].ended);
        assert_int_equal(s[i].intact, s[i].frames);
        assert_int_equal(s[i].unaccounted, 0);
    }
    assert_int_equal(s[1].width, 320);
    assert_int_equal(s[1].fourcc, camerad_stream_get_format(s[1].stream)->fourcc);
    assert_int_not_equal(s[0].width, 320);
    camerad_stream_destroy(s[0].stream);
    camerad_stream_destroy(s[1].stream);
    camerad_client_destroy(client);
}

typedef struct witness {
    camerad_stream *stream;
    uint64_t past;
} witness;

/* Another stream has seen the device make frames past `past`: frames the holder cannot get. */
static bool device_moved_on(void *argument) {
    witness *w = argument;
    bool moved = false;
    for (camerad_frame *frame; (frame = camerad_stream_dequeue_frame(w->stream));) {
        moved |= frame->sequence > w->past + 3;
        camerad_stream_release_frame(w->stream, frame, NULL);
    }
    return moved;
}

static void conformance_drops_reported_when_holding(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    camerad_client *watcher = test_connect(&test_shared, "conformance-witness");
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    settings.max_frames_in_flight = 1;
    camerad_stream *stream = camerad_stream_new(client, "virtual-0", &settings, 0, NULL, NULL, NULL);
    assert_non_null(stream);
    camerad_frame *held = test_next_frame(client, stream);
    assert_non_null(held);
    uint64_t sequence = held->sequence;
    /* Hold it while the device makes more: each is dropped for this stream (FRAME_WAS_LATE). */
    witness w = {camerad_stream_new(watcher, "virtual-0", NULL, 0, NULL, NULL, NULL), sequence};
    assert_non_null(w.stream);
    assert_true(test_iterate_until(watcher, device_moved_on, &w));
    assert_int_equal(camerad_stream_release_frame(stream, held, NULL), CAMERAD_OK);
    camerad_frame *next = test_next_frame(client, stream);
    assert_non_null(next);
    assert_true(next->dropped_before[CAMERAD_DROP_FRAME_WAS_LATE] >= 3);
    uint32_t dropped = 0;
    for (int i = 0; i < CAMERAD_DROP_REASON_COUNT; i++) dropped += next->dropped_before[i];
    assert_int_equal(next->sequence - sequence - 1, dropped);
    camerad_stream_stats stats;
    camerad_stream_get_stats(stream, &stats);
    assert_int_equal(stats.dropped[CAMERAD_DROP_FRAME_WAS_LATE], next->dropped_before[CAMERAD_DROP_FRAME_WAS_LATE]);
    assert_int_equal(camerad_stream_release_frame(stream, next, NULL), CAMERAD_OK);
    camerad_stream_destroy(stream);
    camerad_stream_destroy(w.stream);
    camerad_client_destroy(watcher);
    camerad_client_destroy(client);
}

static void conformance_lock_refused_with_holder_pid(void **state) {
    camerad_client *holder = test_connect(&test_shared, "holder");
    camerad_client *other = test_connect(&test_shared, "other");
    uint32_t count = 0;
    assert_int_equal(camerad_lock_for_configuration(holder, "virtual-1", 0, &count, NULL), CAMERAD_OK);
    assert_int_equal(count, 1);
    camerad_error error;
    assert_int_equal(camerad_lock_for_configuration(other, "virtual-1", 0, NULL, &error), CAMERAD_ERROR_DEVICE_LOCKED);
    assert_int_equal(error.code, CAMERAD_ERROR_DEVICE_LOCKED);
    assert_string_equal(camerad_error_name(error.code), "deviceLocked");
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d ", camerad_client_hello(holder)->client_pid);
    assert_int_equal(camerad_client_hello(holder)->client_pid, getpid());
    assert_non_null(strstr(error.message, pid));
    /* The device says who holds it, too. */
    Camerad__V1__Device *device = NULL;
    assert_int_equal(camerad_get_device(other, "virtual-1", &device, NULL), CAMERAD_OK);
    assert_non_null(device->lock);
    assert_int_equal(device->lock->pid, getpid());
    assert_string_equal(device->lock->client_name, "holder");
    camerad_message_free(device);
    /* Unlocked, the other may take it. */
    assert_int_equal(camerad_unlock_for_configuration(holder, "virtual-1", &count, NULL), CAMERAD_OK);
    assert_int_equal(count, 0);
    assert_int_equal(camerad_lock_for_configuration(other, "virtual-1", 0, NULL, NULL), CAMERAD_OK);
    assert_int_equal(camerad_unlock_for_configuration(holder, "virtual-1", NULL, &error), CAMERAD_ERROR_NOT_LOCKED);
    camerad_client_destroy(holder);
    camerad_client_destroy(other);
}

static void conformance_photo_decodes_with_exif(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    Camerad__V1__PhotoSettings settings = CAMERAD__V1__PHOTO_SETTINGS__INIT;
    settings.max_width = 640;
    settings.max_height = 480;
    Camerad__V1__CapturePhotoResponse *photo = NULL;
    camerad_error error;
    assert_int_equal(camerad_capture_photo(client, "virtual-0", &settings, &photo, &error), CAMERAD_OK);
    const uint8_t *jpeg = photo->data.data;
    assert_true(photo->data.len > 100);
    assert_memory_equal(jpeg, "\xff\xd8", 2);
    /* An APP1 segment with "Exif\0\0" right after the start of image. */
    assert_memory_equal(jpeg + 2, "\xff\xe1", 2);
    assert_memory_equal(jpeg + 6, "Exif\0\0", 6);
    tjhandle decoder = tjInitDecompress();
    int width, height, subsampling, colorspace;
    assert_int_equal(tjDecompressHeader3(decoder, jpeg, photo->data.len, &width, &height, &subsampling, &colorspace), 0);
    assert_int_equal(width, (int)photo->width);
    assert_int_equal(height, (int)photo->height);
    assert_true(width <= 640 && height <= 480);
    uint8_t *gray = malloc((size_t)width * height);
    assert_int_equal(tjDecompress2(decoder, jpeg, photo->data.len, gray, width, width, height, TJPF_GRAY, 0), 0);
    frame_stamp stamp;
    assert_true(frame_stamp_read(gray, (uint32_t)width, (uint32_t)height, (size_t)width, 1, true, &stamp));
    assert_int_equal(stamp.sequence, (uint32_t)photo->sequence);
    free(gray);
    tjDestroy(decoder);
    camerad_message_free(photo);
    camerad_client_destroy(client);
}

/* A recording of virtual-0 in H.264 320x240, MP4, 1 s fragments; `video` holds its settings. */
static Camerad__V1__StartRecording start_320x240(Camerad__V1__VideoRecordingSettings *video) {
    video->width = 320;
    video->height = 240;
    Camerad__V1__StartRecording start = CAMERAD__V1__START_RECORDING__INIT;
    start.unique_id = "virtual-0";
    start.file_type = CAMERAD__V1__FILE_TYPE__FILE_TYPE_MP4;
    start.video = video;
    start.movie_fragment_interval_ns = 1000000000;
    return start;
}

/* Records virtual-0 (start_320x240) into `path`, opened here (camerad keeps a descriptor of its own),
   and waits for camerad's first answer. */
static camerad_recording *record_into(camerad_client *client, const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    Camerad__V1__VideoRecordingSettings video = CAMERAD__V1__VIDEO_RECORDING_SETTINGS__INIT;
    Camerad__V1__StartRecording start = start_320x240(&video);
    camerad_error error;
    camerad_recording *recording = camerad_recording_start(client, &start, fd, &error);
    assert_non_null(recording);
    close(fd);
    assert_int_equal(camerad_recording_wait(recording, false, &error), CAMERAD_OK);
    return recording;
}

/* Waits (a minute at most) until camerad says a second of the file under way is written, after
   `hand_overs` hand-overs. */
static void wait_for_a_second_written(camerad_client *client, camerad_recording *recording, unsigned hand_overs) {
    for (int i = 0; i < 600; i++) {
        unsigned done = 0;
        camerad_recording_get_handed_over(recording, &done);
        const Camerad__V1__RecordingFigures *figures = camerad_recording_get_figures(recording);
        if (done == hand_overs && figures && figures->duration_ns >= 1000000000) break;
        camerad_client_iterate(client, 100, NULL);
    }
}

/* Records virtual-0 (320x240, 1 s fragments) into a file this test opened, stops once camerad says a
   second is written; it finishes STOPPED, successfully, and ffprobe reads as many frames as it says. */
static void conformance_record_file_plays(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    char path[160];
    snprintf(path, sizeof path, "%s/conformance.mp4", test_shared.directory);
    camerad_recording *recording = record_into(client, path);
    camerad_error error;
    const Camerad__V1__RecordingStarted *started = camerad_recording_get_started(recording);
    assert_non_null(started);
    assert_int_equal(started->width, 320);
    wait_for_a_second_written(client, recording, 0);
    assert_int_equal(camerad_recording_stop(recording, &error), CAMERAD_OK);
    assert_int_equal(camerad_recording_wait(recording, true, &error), CAMERAD_OK);
    const Camerad__V1__RecordingFinished *finished = camerad_recording_get_finished(recording, &error);
    assert_non_null(finished);
    assert_int_equal(error.code, CAMERAD_OK);
    assert_int_equal(finished->ending, CAMERAD__V1__RECORDING_ENDING__RECORDING_ENDING_STOPPED);
    assert_true(finished->successfully_finished);
    assert_true(finished->figures->frames > 0 && finished->figures->duration_ns >= 1000000000);
    /* Synced after every fragment and at the end, by default. */
    assert_true(finished->figures->file_syncs >= 1);
    char command[300];
    snprintf(command, sizeof command,
             "ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=codec_name,width,nb_read_frames "
             "-of csv=p=0 '%s'", path);
    char *probe = test_output(&test_shared, command);
    assert_non_null(probe);
    char expected[64];
    snprintf(expected, sizeof expected, "h264,320,%llu", (unsigned long long)finished->figures->frames);
    assert_non_null(strstr(probe, expected));
    free(probe);
    camerad_recording_destroy(recording);
    unlink(path);
    camerad_client_destroy(client);
}

static bool frames_in(const char *path, uint64_t expected) {
    char command[300];
    snprintf(command, sizeof command,
             "ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 '%s'", path);
    char *probe = test_output(&test_shared, command);
    bool same = probe && strtoull(probe, NULL, 10) == expected;
    free(probe);
    return same;
}

/* Hands a recording over to a second file once a second is written, stops once the second file has a second;
   one FileHandedOver, then STOPPED; each file holds the frames its figures say. */
static void conformance_record_hand_over(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    char first[160], second[160];
    snprintf(first, sizeof first, "%s/first.mp4", test_shared.directory);
    snprintf(second, sizeof second, "%s/second.mp4", test_shared.directory);
    camerad_recording *recording = record_into(client, first);
    camerad_error error;
    wait_for_a_second_written(client, recording, 0);
    int fd = open(second, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(camerad_recording_next_file(recording, fd, &error), CAMERAD_OK);
    close(fd);
    wait_for_a_second_written(client, recording, 1);
    unsigned hand_overs = 0;
    const Camerad__V1__FileHandedOver *handed_over = camerad_recording_get_handed_over(recording, &hand_overs);
    assert_int_equal(hand_overs, 1);
    assert_non_null(handed_over);
    assert_int_equal(camerad_recording_stop(recording, &error), CAMERAD_OK);
    assert_int_equal(camerad_recording_wait(recording, true, &error), CAMERAD_OK);
    const Camerad__V1__RecordingFinished *finished = camerad_recording_get_finished(recording, &error);
    assert_non_null(finished);
    assert_int_equal(finished->ending, CAMERAD__V1__RECORDING_ENDING__RECORDING_ENDING_STOPPED);
    assert_true(handed_over->figures->frames > 0 && finished->figures->frames > 0);
    assert_true(frames_in(first, handed_over->figures->frames));
    assert_true(frames_in(second, finished->figures->frames));
    camerad_recording_destroy(recording);
    unlink(first);
    unlink(second);
    camerad_client_destroy(client);
}

/* A pipe is no movie file: refused with invalidArgument saying so, before anything is written; the
   connection goes on. */
static void conformance_record_pipe_refused(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    int ends[2];
    assert_int_equal(pipe2(ends, O_CLOEXEC), 0);
    Camerad__V1__StartRecording start = CAMERAD__V1__START_RECORDING__INIT;
    start.unique_id = "virtual-0";
    camerad_error error;
    camerad_recording *recording = camerad_recording_start(client, &start, ends[1], &error);
    assert_non_null(recording);
    close(ends[0]);
    close(ends[1]);
    assert_int_equal(camerad_recording_wait(recording, true, &error), CAMERAD_OK);
    assert_null(camerad_recording_get_started(recording));
    assert_null(camerad_recording_get_finished(recording, &error));
    assert_int_equal(error.code, CAMERAD_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(error.message, "a pipe"));
    camerad_recording_destroy(recording);
    Camerad__V1__ListDevicesResponse *list = NULL;
    assert_int_equal(camerad_list_devices(client, NULL, &list, NULL), CAMERAD_OK);
    camerad_message_free(list);
    camerad_client_destroy(client);
}

static void conformance_unknown_device_error(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    camerad_error error;
    Camerad__V1__Device *device = NULL;
    assert_int_equal(camerad_get_device(client, "no-such-camera", &device, &error), CAMERAD_ERROR_DEVICE_NOT_FOUND);
    assert_null(device);
    assert_int_equal(error.code, 20);
    assert_true(strlen(error.message) > 0 && strchr(error.message, '\n') == NULL);
    assert_null(camerad_stream_new(client, "no-such-camera", NULL, 0, NULL, NULL, &error));
    assert_int_equal(error.code, CAMERAD_ERROR_DEVICE_NOT_FOUND);
    assert_int_equal(camerad_lock_for_configuration(client, "no-such-camera", 0, NULL, &error),
                     CAMERAD_ERROR_DEVICE_NOT_FOUND);
    camerad_client_destroy(client);
}

static void conformance_bad_argument_error(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    settings.pixel_format = CAMERAD__V1__OUTPUT_PIXEL_FORMAT__OUTPUT_PIXEL_FORMAT_NV12;
    settings.width = 10000;
    settings.height = 10000;
    camerad_error error;
    assert_null(camerad_stream_new(client, "virtual-0", &settings, 0, NULL, NULL, &error));
    assert_int_equal(error.code, CAMERAD_ERROR_INVALID_ARGUMENT);
    assert_int_equal(error.status, CAMERAD__V1__STATUS_CODE__STATUS_CODE_INVALID_ARGUMENT);
    assert_non_null(strstr(error.message, "10000x10000"));
    /* The connection goes on. */
    Camerad__V1__ListDevicesResponse *list = NULL;
    assert_int_equal(camerad_list_devices(client, NULL, &list, NULL), CAMERAD_OK);
    camerad_message_free(list);
    camerad_client_destroy(client);
}

static void conformance_daemon_gone_interrupts_stream(void **state) {
    test_daemon own;
    assert_true(test_daemon_start(&own, 1));
    camerad_client *client = test_connect(&own, "conformance");
    seen s = {.wanted = 5};
    s.stream = camerad_stream_new(client, "virtual-0", NULL, 0, &counting, &s, NULL);
    assert_non_null(s.stream);
    assert_true(test_iterate_until(client, enough, &s));
    kill(own.pid, SIGTERM);
    assert_true(test_iterate_until(client, has_ended, &s));
    assert_int_equal(s.interruption, CAMERAD_INTERRUPTION_SHUTTING_DOWN);
    assert_int_equal(s.status.code, CAMERAD_ERROR_SHUTTING_DOWN);
    assert_true(camerad_stream_has_ended(s.stream));
    /* Once camerad has exited, calls fail at once. (While it shuts down it may still
       answer a call that does not stream.) */
    test_daemon_stop(&own);
    camerad_error error;
    int later = camerad_list_devices(client, NULL, NULL, &error);
    assert_true(later == CAMERAD_ERROR_CONNECTION_LOST || later == CAMERAD_ERROR_SHUTTING_DOWN);
    camerad_stream_destroy(s.stream);
    camerad_client_destroy(client);
    test_daemon_stop(&own);
}

/* ---- Microphones ------------------------------------------------------------ */

/* Adds a virtual microphone (camerad's own user may); its uniqueID, the caller's to free. */
static char *add_microphone(camerad_client *client) {
    Camerad__V1__AddVirtualCameraRequest request = CAMERAD__V1__ADD_VIRTUAL_CAMERA_REQUEST__INIT;
    request.media_type = CAMERAD__V1__MEDIA_TYPE__MEDIA_TYPE_AUDIO;
    ProtobufCMessage *response = NULL;
    camerad_error error;
    int result = camerad_client_call(client, "AddVirtualCamera", &request.base,
                                     &camerad__v1__add_virtual_camera_response__descriptor, &response, &error);
    if (result) fail_msg("AddVirtualCamera: %s", error.message);
    Camerad__V1__AddVirtualCameraResponse *added = (Camerad__V1__AddVirtualCameraResponse *)response;
    assert_int_equal(added->device->media_type, CAMERAD__V1__MEDIA_TYPE__MEDIA_TYPE_AUDIO);
    assert_int_equal(added->device->device_type, CAMERAD__V1__DEVICE_TYPE__DEVICE_TYPE_MICROPHONE);
    char *unique_id = strdup(added->device->unique_id);
    camerad_message_free(added);
    return unique_id;
}

static void remove_microphone(camerad_client *client, char *unique_id) {
    Camerad__V1__RemoveVirtualCameraRequest request = CAMERAD__V1__REMOVE_VIRTUAL_CAMERA_REQUEST__INIT;
    request.unique_id = unique_id;
    ProtobufCMessage *response = NULL;
    assert_int_equal(camerad_client_call(client, "RemoveVirtualCamera", &request.base,
                                         &camerad__v1__remove_virtual_camera_response__descriptor, &response, NULL),
                     CAMERAD_OK);
    camerad_message_free(response);
    free(unique_id);
}

typedef struct heard {
    uint64_t periods, wanted, unaccounted, out_of_order, wrong_size;
    uint64_t first_sequence, last_sequence;
    bool any, broken;
    /* The first channel of the unbroken run from the first period. */
    float *samples;
    size_t count, capacity;
} heard;

static void on_periods(void *data, camerad_stream *stream) {
    heard *h = data;
    const camerad_stream_format *format = camerad_stream_get_format(stream);
    camerad_frame *period;
    while ((period = camerad_stream_dequeue_frame(stream))) {
        uint32_t dropped = 0;
        for (int i = 0; i < CAMERAD_DROP_REASON_COUNT; i++) dropped += period->dropped_before[i];
        if (h->any && period->sequence <= h->last_sequence) h->out_of_order++;
        if (h->any && period->sequence > h->last_sequence && period->sequence - h->last_sequence - 1 != dropped) h->unaccounted++;
        if (h->any && period->sequence != h->last_sequence + 1) h->broken = true;
        if (!h->any) h->first_sequence = period->sequence;
        if (period->n_samples != format->period_frames) h->wrong_size++;
        if (!h->broken && format->sample_format == CAMERAD__V1__SAMPLE_FORMAT__SAMPLE_FORMAT_F32) {
            const float *values = (const float *)period->data;
            for (uint32_t frame = 0; frame < period->n_samples && h->count < h->capacity; frame++) {
                h->samples[h->count++] = values[frame * format->channels];
            }
        }
        h->any = true;
        h->last_sequence = period->sequence;
        h->periods++;
        assert_int_equal(camerad_stream_release_frame(stream, period, NULL), CAMERAD_OK);
    }
}

static const struct camerad_stream_events listening = {.version = CAMERAD_VERSION_STREAM_EVENTS, .process = on_periods};

static bool heard_enough(void *argument) {
    heard *h = argument;
    return h->periods >= h->wanted;
}

static void conformance_audio_periods_in_order(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    char *microphone = add_microphone(client);
    Camerad__V1__Device *device = NULL;
    assert_int_equal(camerad_get_device(client, microphone, &device, NULL), CAMERAD_OK);
    assert_int_equal(device->media_type, CAMERAD__V1__MEDIA_TYPE__MEDIA_TYPE_AUDIO);
    assert_int_equal(device->audio->native->sample_rate, 48000);
    camerad_message_free(device);

    heard h = {.wanted = 50, .capacity = 50 * 480};
    h.samples = calloc(h.capacity, sizeof *h.samples);
    camerad_error error;
    camerad_stream *stream = camerad_audio_stream_new(client, microphone, NULL, 0, &listening, &h, &error);
    if (!stream) fail_msg("camerad_audio_stream_new: %s", error.message);
    const camerad_stream_format *format = camerad_stream_get_format(stream);
    assert_int_equal(format->sample_rate, 48000);
    assert_int_equal(format->channels, 2);
    assert_int_equal(format->sample_format, CAMERAD__V1__SAMPLE_FORMAT__SAMPLE_FORMAT_F32);
    assert_int_equal(format->period_frames, 480);
    assert_true(test_iterate_until(client, heard_enough, &h));
    assert_int_equal(h.unaccounted, 0);
    assert_int_equal(h.out_of_order, 0);
    assert_int_equal(h.wrong_size, 0);

    /* Block n lies at frame 960 x n of the microphone's clock: the run starts at first_sequence x 480. */
    audio_stamp_block blocks[64];
    size_t found = audio_stamp_decode(h.samples, h.count, 48000, blocks, 64);
    assert_true(found >= h.count / 960 - 2);
    for (size_t i = 0; i < found; i++) {
        assert_int_equal((uint64_t)blocks[i].number * 960, h.first_sequence * 480 + blocks[i].offset);
        if (i) assert_int_equal(blocks[i].number, blocks[i - 1].number + 1);
    }
    camerad_stream_destroy(stream);
    free(h.samples);
    remove_microphone(client, microphone);
    camerad_client_destroy(client);
}

static void conformance_audio_format_refused(void **state) {
    camerad_client *client = test_connect(&test_shared, "conformance");
    char *microphone = add_microphone(client);
    Camerad__V1__AudioFormat format = CAMERAD__V1__AUDIO_FORMAT__INIT;
    format.sample_rate = 12345;
    camerad_error error;
    assert_null(camerad_audio_stream_new(client, microphone, &format, 0, NULL, NULL, &error));
    assert_int_equal(error.code, CAMERAD_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(error.message, "44100"));
    /* The connection goes on. */
    Camerad__V1__ListDevicesResponse *list = NULL;
    assert_int_equal(camerad_list_devices(client, NULL, &list, NULL), CAMERAD_OK);
    camerad_message_free(list);
    remove_microphone(client, microphone);
    camerad_client_destroy(client);
}

int main(void) {
    if (!getenv("CAMERAD") || !*getenv("CAMERAD")) {
        fprintf(stderr, "conformance: set CAMERAD to camerad's path (tests/run does)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(conformance_discover_and_filter, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_info_agrees_with_camctl, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_stream_stamps_in_order, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_second_stream_other_variant, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_drops_reported_when_holding, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_lock_refused_with_holder_pid, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_photo_decodes_with_exif, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_record_file_plays, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_record_hand_over, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_record_pipe_refused, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_unknown_device_error, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_bad_argument_error, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_daemon_gone_interrupts_stream, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_audio_periods_in_order, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(conformance_audio_format_refused, test_count_fds, test_check_fds),
    };
    return cmocka_run_group_tests_name("conformance", tests, test_start_shared, test_stop_shared);
}
