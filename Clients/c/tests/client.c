/*
 * What the C library adds beyond the conformance scenarios, against a real
 * camerad: the pollable descriptor, pull mode, inline frames, device events,
 * format changes, releases, and callbacks that destroy their own stream.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <camerad/client.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "frame-stamp.h"
#include "support.h"

static bool intact(const camerad_frame *frame) {
    size_t row = frame->n_planes ? frame->planes[0].bytes_per_row : frame->width;
    return frame_stamp_check(frame->data, frame->fourcc, frame->width, frame->height, row, frame->sequence,
                             frame->presentation_time_ns) == STAMP_INTACT;
}

static void connecting_nowhere_says_the_daemon_is_unavailable(void **state) {
    camerad_error error;
    assert_null(camerad_client_connect("/nonexistent/camerad.sock", NULL, &error));
    assert_int_equal(error.code, CAMERAD_ERROR_DAEMON_UNAVAILABLE);
    assert_non_null(strstr(error.message, "/nonexistent/camerad.sock"));
}

static void hello_tells_who_is_who(void **state) {
    camerad_client *client = test_connect(&test_shared, "hello");
    const Camerad__V1__HelloResponse *hello = camerad_client_hello(client);
    assert_int_equal(hello->protocol_version, CAMERAD_PROTOCOL_VERSION);
    assert_int_equal(hello->server_pid, test_shared.pid);
    assert_int_equal(hello->client_pid, getpid());
    camerad_client_destroy(client);
}

/* The descriptor polls readable when frames arrive, and not once all is dispatched. */
static void the_descriptor_polls_readable_for_frames(void **state) {
    camerad_client *client = test_connect(&test_shared, "poll");
    camerad_stream *stream = camerad_stream_new(client, "virtual-0", NULL, 0, NULL, NULL, NULL);
    assert_non_null(stream);
    struct pollfd fd = {.fd = camerad_client_get_fd(client), .events = POLLIN};
    int frames = 0, wakes = 0, empty = 0;
    for (int i = 0; i < 600 && frames < 10; i++) {
        if (poll(&fd, 1, 100) <= 0) continue;
        wakes++;
        assert_int_equal(camerad_client_dispatch(client, NULL), CAMERAD_OK);
        int got = 0;
        for (camerad_frame *frame; (frame = camerad_stream_dequeue_frame(stream)); got++) {
            assert_true(intact(frame));
            assert_int_equal(camerad_stream_release_frame(stream, frame, NULL), CAMERAD_OK);
            frames++;
        }
        empty += got == 0;
    }
    assert_int_equal(frames >= 10, 1);
    /* A wake brings a frame: once dispatched, the descriptor is quiet until the next one. */
    assert_true(empty <= 3);
    camerad_stream_destroy(stream);
    /* Nothing left: the descriptor goes quiet. */
    camerad_client_dispatch(client, NULL);
    assert_int_equal(poll(&fd, 1, 0), 0);
    camerad_client_destroy(client);
}

/* The frame ring's signal is never read: from an unthrottled camera, a thousand frames (far more
 * than any socket or pipe would hold undrained) keep waking the client's descriptor. */
static void the_frame_signal_wakes_for_every_frame_never_read(void **state) {
    char *added = test_camctl(&test_shared, "virtual add --index 9 --size 160x120 --unthrottled --static-picture");
    if (!added) skip();
    free(added);
    camerad_client *client = test_connect(&test_shared, "many-wakes");
    camerad_stream *stream = camerad_stream_new(client, "virtual-9", NULL, 0, NULL, NULL, NULL);
    assert_non_null(stream);
    struct pollfd fd = {.fd = camerad_client_get_fd(client), .events = POLLIN};
    int frames = 0;
    time_t deadline = time(NULL) + 60;
    while (frames < 1000 && time(NULL) < deadline) {
        if (poll(&fd, 1, 1000) <= 0) continue;
        assert_int_equal(camerad_client_dispatch(client, NULL), CAMERAD_OK);
        for (camerad_frame *frame; (frame = camerad_stream_dequeue_frame(stream)); frames++) {
            assert_int_equal(camerad_stream_release_frame(stream, frame, NULL), CAMERAD_OK);
        }
    }
    assert_true(frames >= 1000);
    camerad_stream_stats stats;
    camerad_stream_get_stats(stream, &stats);
    assert_true(stats.announced_through_ring >= 1000);
    camerad_stream_destroy(stream);
    camerad_client_destroy(client);
    free(test_camctl(&test_shared, "virtual remove virtual-9"));
}

static void a_frame_is_released_once(void **state) {
    camerad_client *client = test_connect(&test_shared, "release");
    camerad_stream *stream = camerad_stream_new(client, "virtual-0", NULL, 0, NULL, NULL, NULL);
    camerad_frame *frame = test_next_frame(client, stream);
    assert_non_null(frame);
    assert_int_equal(camerad_stream_release_frame(stream, frame, NULL), CAMERAD_OK);
    camerad_error error;
    assert_int_equal(camerad_stream_release_frame(stream, frame, &error), CAMERAD_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(error.message, "exactly once"));
    /* The stream goes on. */
    frame = test_next_frame(client, stream);
    assert_non_null(frame);
    assert_true(intact(frame));
    camerad_stream_destroy(stream); /* with the frame still held: released with the stream */
    camerad_client_destroy(client);
}

/* Frames go back through the stream's release ring, which camerad reads as each frame
 * comes: with two frames in flight and no ReleaseFrames ever sent, frames keep coming,
 * more than the ring's 64 entries (the client reads camerad's tail again when it seems full). */
static void frames_go_back_through_the_release_ring(void **state) {
    camerad_client *client = test_connect(&test_shared, "ring");
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    settings.max_frames_in_flight = 2;
    camerad_stream *stream = camerad_stream_new(client, "virtual-0", &settings, 0, NULL, NULL, NULL);
    assert_non_null(stream);
    for (int i = 0; i < 70; i++) {
        camerad_frame *frame = test_next_frame(client, stream);
        assert_non_null(frame);
        assert_true(intact(frame));
        assert_int_equal(camerad_stream_release_frame(stream, frame, NULL), CAMERAD_OK);
    }
    camerad_stream_stats stats;
    camerad_stream_get_stats(stream, &stats);
    assert_int_equal(stats.released_through_ring, 70);
    assert_int_equal(stats.released_by_message, 0);
    /* And came through its frame ring: no message per frame either way. */
    assert_true(stats.announced_through_ring >= 70);
    camerad_stream_destroy(stream);
    camerad_client_destroy(client);
}

static void inline_frames_carry_their_bytes(void **state) {
    camerad_client *client = test_connect(&test_shared, "inline");
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    settings.delivery = CAMERAD__V1__DELIVERY__DELIVERY_INLINE;
    settings.pixel_format = CAMERAD__V1__OUTPUT_PIXEL_FORMAT__OUTPUT_PIXEL_FORMAT_I420;
    settings.width = 160;
    settings.height = 120;
    camerad_stream *stream = camerad_stream_new(client, "virtual-1", &settings, 0, NULL, NULL, NULL);
    assert_non_null(stream);
    assert_false(camerad_stream_get_format(stream)->shared);
    for (int i = 0; i < 5; i++) {
        camerad_frame *frame = test_next_frame(client, stream);
        assert_non_null(frame);
        assert_int_equal(frame->size, 160 * 120 * 3 / 2);
        assert_true(intact(frame));
        assert_int_equal(camerad_stream_release_frame(stream, frame, NULL), CAMERAD_OK);
    }
    camerad_stream_destroy(stream);
    camerad_client_destroy(client);
}

/* '420f': NV12 stretched to full range, said so by the format and each frame;
 * the pattern's black and white reach 0 and 255, where video range stops at 16 and 235. */
static void full_range_nv12_spans_0_to_255(void **state) {
    camerad_client *client = test_connect(&test_shared, "full-range");
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    settings.width = 160;
    settings.height = 120;
    for (int full = 0; full <= 1; full++) {
        settings.pixel_format = full ? CAMERAD__V1__OUTPUT_PIXEL_FORMAT__OUTPUT_PIXEL_FORMAT_NV12_FULL_RANGE
                                     : CAMERAD__V1__OUTPUT_PIXEL_FORMAT__OUTPUT_PIXEL_FORMAT_NV12;
        camerad_stream *stream = camerad_stream_new(client, "virtual-1", &settings, 0, NULL, NULL, NULL);
        assert_non_null(stream);
        assert_int_equal(camerad_stream_get_format(stream)->full_range, full);
        camerad_frame *frame = test_next_frame(client, stream);
        assert_non_null(frame);
        assert_int_equal(frame->full_range, full);
        uint8_t lowest = 255, highest = 0;
        for (size_t i = 0; i < 160 * 120; i++) {
            if (frame->data[i] < lowest) lowest = frame->data[i];
            if (frame->data[i] > highest) highest = frame->data[i];
        }
        assert_int_equal(lowest, full ? 0 : 16);
        assert_int_equal(highest, full ? 255 : 235);
        assert_int_equal(camerad_stream_release_frame(stream, frame, NULL), CAMERAD_OK);
        camerad_stream_destroy(stream);
    }
    camerad_client_destroy(client);
}

typedef struct events_seen {
    int connected, subscribed, locked, unlocked;
    bool ended;
} events_seen;

static void on_event(void *data, const Camerad__V1__DeviceEvent *event) {
    events_seen *seen = data;
    switch (event->kind) {
    case CAMERAD__V1__DEVICE_EVENT__KIND__KIND_CONNECTED: seen->connected++; break;
    case CAMERAD__V1__DEVICE_EVENT__KIND__KIND_SUBSCRIBED: seen->subscribed++; break;
    case CAMERAD__V1__DEVICE_EVENT__KIND__KIND_LOCKED:
        seen->locked++;
        assert_non_null(event->device->lock);
        break;
    case CAMERAD__V1__DEVICE_EVENT__KIND__KIND_UNLOCKED: seen->unlocked++; break;
    default: break;
    }
}

static void on_watch_ended(void *data, const camerad_error *status) { ((events_seen *)data)->ended = true; }

static bool subscribed(void *argument) { return ((events_seen *)argument)->subscribed > 0; }
static bool unlocked(void *argument) { return ((events_seen *)argument)->unlocked > 0; }

static void device_events_follow_the_lock(void **state) {
    camerad_client *client = test_connect(&test_shared, "watch");
    camerad_client *other = test_connect(&test_shared, "locker");
    events_seen seen = {0};
    static const struct camerad_watch_events events = {
        .version = CAMERAD_VERSION_WATCH_EVENTS, .event = on_event, .ended = on_watch_ended};
    camerad_watch *watch = camerad_watch_devices(client, true, &events, &seen, NULL);
    assert_non_null(watch);
    assert_true(test_iterate_until(client, subscribed, &seen));
    assert_int_equal(seen.connected, 2);
    assert_int_equal(camerad_lock_for_configuration(other, "virtual-0", 0, NULL, NULL), CAMERAD_OK);
    assert_int_equal(camerad_unlock_for_configuration(other, "virtual-0", NULL, NULL), CAMERAD_OK);
    assert_true(test_iterate_until(client, unlocked, &seen));
    assert_int_equal(seen.locked, 1);
    camerad_watch_destroy(watch);
    camerad_client_destroy(other);
    camerad_client_destroy(client);
}

typedef struct growing {
    camerad_stream *stream;
    int format_changes, frames, intact_after_change, not_intact;
    uint64_t pool_width;
} growing;

static void on_format(void *data, camerad_stream *stream, const camerad_stream_format *format) {
    growing *g = data;
    g->format_changes++;
    assert_int_equal(format->width, camerad_stream_get_format(stream)->width);
}

static void on_frames(void *data, camerad_stream *stream) {
    growing *g = data;
    for (camerad_frame *frame; (frame = camerad_stream_dequeue_frame(stream));) {
        g->frames++;
        if (!intact(frame)) g->not_intact++;
        if (g->format_changes && intact(frame)) g->intact_after_change++;
        camerad_stream_release_frame(stream, frame, NULL);
    }
}

static bool changed_and_streaming(void *argument) {
    growing *g = argument;
    return g->format_changes > 0 && g->intact_after_change >= 10;
}

/* More streams on a variant grow its pool: the first stream gets the larger pool and reads on. */
static void a_growing_pool_is_a_format_change(void **state) {
    camerad_client *client = test_connect(&test_shared, "grow");
    growing g = {0};
    static const struct camerad_stream_events events = {
        .version = CAMERAD_VERSION_STREAM_EVENTS, .process = on_frames, .format_changed = on_format};
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    settings.pixel_format = CAMERAD__V1__OUTPUT_PIXEL_FORMAT__OUTPUT_PIXEL_FORMAT_NV12;
    settings.width = 320;
    settings.height = 240;
    settings.max_frames_in_flight = 8;
    g.stream = camerad_stream_new(client, "virtual-1", &settings, 0, &events, &g, NULL);
    assert_non_null(g.stream);
    camerad_client *others[3];
    camerad_stream *more[3];
    for (int i = 0; i < 3; i++) {
        others[i] = test_connect(&test_shared, "grow-other");
        more[i] = camerad_stream_new(others[i], "virtual-1", &settings, 0, NULL, NULL, NULL);
        assert_non_null(more[i]);
    }
    assert_true(test_iterate_until(client, changed_and_streaming, &g));
    assert_int_equal(g.not_intact, 0);
    for (int i = 0; i < 3; i++) {
        camerad_stream_destroy(more[i]);
        camerad_client_destroy(others[i]);
    }
    camerad_stream_destroy(g.stream);
    camerad_client_destroy(client);
}

typedef struct self_destroying {
    camerad_stream *stream;
    int frames;
} self_destroying;

static void destroy_on_third(void *data, camerad_stream *stream) {
    self_destroying *s = data;
    camerad_frame *frame = camerad_stream_dequeue_frame(stream);
    if (!frame) return;
    if (++s->frames == 3) {
        camerad_stream_destroy(stream); /* with the frame held */
        s->stream = NULL;
        return;
    }
    camerad_stream_release_frame(stream, frame, NULL);
}

static bool destroyed(void *argument) { return ((self_destroying *)argument)->stream == NULL; }

static void a_callback_may_destroy_its_stream(void **state) {
    camerad_client *client = test_connect(&test_shared, "self-destroy");
    self_destroying s = {0};
    static const struct camerad_stream_events events = {.version = CAMERAD_VERSION_STREAM_EVENTS,
                                                        .process = destroy_on_third};
    s.stream = camerad_stream_new(client, "virtual-0", NULL, 0, &events, &s, NULL);
    assert_non_null(s.stream);
    assert_true(test_iterate_until(client, destroyed, &s));
    /* The connection goes on. */
    Camerad__V1__ListDevicesResponse *list = NULL;
    assert_int_equal(camerad_list_devices(client, NULL, &list, NULL), CAMERAD_OK);
    camerad_message_free(list);
    camerad_client_destroy(client);
}

static int64_t control_value(const Camerad__V1__Device *device, const char *name) {
    for (size_t i = 0; i < device->n_controls; i++) {
        if (strcmp(device->controls[i]->name, name) == 0) return device->controls[i]->value;
    }
    fail_msg("no control %s", name);
    return -1;
}

/* ConfigureDevice: refused without the lock, applied under it, by the v4l2-ctl name. */
static void configure_device_under_the_lock(void **state) {
    camerad_client *client = test_connect(&test_shared, "configure");
    Camerad__V1__ControlValue brightness = CAMERAD__V1__CONTROL_VALUE__INIT;
    brightness.name = "brightness";
    brightness.value = 200;
    Camerad__V1__ControlValue *controls[] = {&brightness};
    Camerad__V1__DeviceConfiguration configuration = CAMERAD__V1__DEVICE_CONFIGURATION__INIT;
    configuration.n_controls = 1;
    configuration.controls = controls;
    camerad_error error;
    assert_int_equal(camerad_configure_device(client, "virtual-1", &configuration, false, NULL, &error),
                     CAMERAD_ERROR_NOT_LOCKED);
    assert_int_equal(camerad_lock_for_configuration(client, "virtual-1", 0, NULL, NULL), CAMERAD_OK);
    Camerad__V1__Device *device = NULL;
    assert_int_equal(camerad_configure_device(client, "virtual-1", &configuration, false, &device, &error), CAMERAD_OK);
    assert_int_equal(control_value(device, "brightness"), 200);
    camerad_message_free(device);
    brightness.value = 128; /* as it was, for the other tests */
    assert_int_equal(camerad_configure_device(client, "virtual-1", &configuration, false, NULL, NULL), CAMERAD_OK);
    assert_int_equal(camerad_unlock_for_configuration(client, "virtual-1", NULL, NULL), CAMERAD_OK);
    camerad_client_destroy(client);
}

/* camerad-list --json prints what camctl list --json prints, byte for byte. */
static void camerad_list_prints_camctls_json(void **state) {
    const char *list = getenv("CAMERAD_LIST");
    if (!list || !*list || !getenv("CAMCTL") || !*getenv("CAMCTL")) skip();
    char command[512];
    snprintf(command, sizeof command, "'%s' --json", list);
    char *ours = test_output(&test_shared, command);
    char *theirs = test_camctl(&test_shared, "list --json");
    assert_non_null(ours);
    assert_non_null(theirs);
    assert_string_equal(ours, theirs);
    assert_non_null(strstr(ours, "\"uniqueID\" : \"virtual-1\""));
    free(ours);
    free(theirs);
}

/* camerad-stream --skip leaves its first frames out: the 5 it counts come after
 * 20 others of the camera, which starts at sequence 0 for this stream, and its
 * latency histogram holds those 5. */
static void camerad_stream_skips_the_first_frames(void **state) {
    const char *stream = getenv("CAMERAD_STREAM");
    if (!stream || !*stream) skip();
    char command[512];
    snprintf(command, sizeof command, "'%s' virtual-1 --skip 20 --count 5 --check --json", stream);
    char *output = test_output(&test_shared, command);
    assert_non_null(output);
    assert_non_null(strstr(output, "\"frames\":5,"));
    assert_non_null(strstr(output, "\"intact\":5,"));
    const char *first = strstr(output, "\"firstSequence\":");
    assert_non_null(first);
    assert_true(strtoull(first + strlen("\"firstSequence\":"), NULL, 10) >= 20);
    /* The latency histogram, as camctl's: ascending 10 µs buckets holding the 5 frames. */
    const char *histogram = strstr(output, "\"latencyHistogram\":[");
    assert_non_null(histogram);
    histogram += strlen("\"latencyHistogram\":[");
    long long previous = -1, frames = 0, bucket, count;
    int used;
    while (sscanf(histogram, "[%lld,%lld]%n", &bucket, &count, &used) == 2) {
        assert_true(bucket > previous && bucket % 10 == 0 && count > 0);
        previous = bucket;
        frames += count;
        histogram += used;
        if (*histogram == ',') histogram++;
    }
    assert_int_equal(*histogram, ']');
    assert_int_equal(frames, 5);
    free(output);
}

/* camerad-stream --audio hears a microphone: 20 periods in its own format, every
 * period number between the first and the last accounted for. */
static void camerad_stream_hears_a_microphone(void **state) {
    const char *stream = getenv("CAMERAD_STREAM");
    if (!stream || !*stream) skip();
    char *added = test_camctl(&test_shared, "virtual add --audio --index 11");
    assert_non_null(added);
    free(added);
    char command[512];
    snprintf(command, sizeof command, "'%s' virtual-microphone-11 --audio --count 20 --json", stream);
    char *output = test_output(&test_shared, command);
    free(test_camctl(&test_shared, "virtual remove virtual-microphone-11"));
    assert_non_null(output);
    assert_non_null(strstr(output, "\"frames\":20,"));
    assert_non_null(strstr(output, "\"format\":\"f32 2ch 48000 Hz, 480 frames a period\""));
    assert_non_null(strstr(output, "\"unaccounted\":0}"));
    assert_non_null(strstr(output, "\"bytes\":76800,"));
    free(output);
}

/* The example in README.md, as a program of its own: 100 frames and a clean exit. */
static void the_readme_example_streams(void **state) {
    const char *example = getenv("README_EXAMPLE");
    if (!example || !*example) skip();
    char command[512];
    snprintf(command, sizeof command, "'%s'", example);
    char *output = test_output(&test_shared, command); /* NULL unless it exits 0 */
    assert_non_null(output);
    assert_string_equal(output, "100 frames\n");
    free(output);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(connecting_nowhere_says_the_daemon_is_unavailable, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(hello_tells_who_is_who, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(the_descriptor_polls_readable_for_frames, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(a_frame_is_released_once, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(frames_go_back_through_the_release_ring, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(the_frame_signal_wakes_for_every_frame_never_read, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(inline_frames_carry_their_bytes, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(full_range_nv12_spans_0_to_255, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(device_events_follow_the_lock, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(a_growing_pool_is_a_format_change, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(a_callback_may_destroy_its_stream, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(the_readme_example_streams, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(configure_device_under_the_lock, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(camerad_list_prints_camctls_json, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(camerad_stream_skips_the_first_frames, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(camerad_stream_hears_a_microphone, test_count_fds, test_check_fds),
    };
    return cmocka_run_group_tests_name("client", tests, test_start_shared, test_stop_shared);
}
