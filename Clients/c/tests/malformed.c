/*
 * A broken camerad: a fake server on a real socket answers Hello properly,
 * then sends truncated, oversized, garbled and randomly mutated messages. The
 * library must fail the call with a clear code, never crash, and give back
 * every byte and descriptor (AddressSanitizer and valgrind check the rest).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <camerad/client.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "support.h"

/* ---- The fake server ----------------------------------------------------- */

typedef struct fake {
    char directory[96], path[108];
    int listener;
    pthread_t thread;
    /* What it sends after reading the client's second call. */
    void (*respond)(struct fake *fake, int connection, uint64_t call_id);
    uint32_t seed;
    bool close_after;
} fake;

static bool read_exactly(int fd, void *buffer, size_t length) {
    for (size_t done = 0; done < length;) {
        ssize_t n = read(fd, (uint8_t *)buffer + done, length - done);
        if (n <= 0) return false;
        done += (size_t)n;
    }
    return true;
}

static Camerad__V1__Envelope *read_envelope(int fd) {
    uint8_t head[4];
    if (!read_exactly(fd, head, 4)) return NULL;
    uint32_t length = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
    uint8_t *body = malloc(length ? length : 1);
    Camerad__V1__Envelope *envelope = read_exactly(fd, body, length) ? camerad__v1__envelope__unpack(NULL, length, body) : NULL;
    free(body);
    return envelope;
}

/* `bytes` on the socket in one sendmsg, with `fds` as SCM_RIGHTS. */
static void send_raw(int connection, const uint8_t *bytes, size_t length, const int *fds, size_t n_fds) {
    union {
        char buffer[CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = {.iov_base = (void *)bytes, .iov_len = length};
    struct msghdr message = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n_fds) {
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&message);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
    }
    if (sendmsg(connection, &message, MSG_NOSIGNAL) < 0) { /* the client may have gone: fine */
    }
}

/* An envelope, framed, into `out` (at most `capacity`); its length. */
static size_t frame_envelope(const Camerad__V1__Envelope *envelope, uint8_t *out, size_t capacity) {
    size_t size = protobuf_c_message_get_packed_size(&envelope->base);
    assert_true(size + 4 <= capacity);
    out[0] = (uint8_t)(size >> 24);
    out[1] = (uint8_t)(size >> 16);
    out[2] = (uint8_t)(size >> 8);
    out[3] = (uint8_t)size;
    protobuf_c_message_pack(&envelope->base, out + 4);
    return size + 4;
}

static size_t frame_message(uint64_t call_id, uint32_t fd_count, const ProtobufCMessage *payload, uint8_t *out,
                            size_t capacity) {
    uint8_t packed[4096];
    size_t size = protobuf_c_message_get_packed_size(payload);
    assert_true(size <= sizeof packed);
    protobuf_c_message_pack(payload, packed);
    Camerad__V1__CallMessage message = CAMERAD__V1__CALL_MESSAGE__INIT;
    message.payload.data = packed;
    message.payload.len = size;
    Camerad__V1__Envelope envelope = CAMERAD__V1__ENVELOPE__INIT;
    envelope.call_id = call_id;
    envelope.fd_count = fd_count;
    envelope.kind_case = CAMERAD__V1__ENVELOPE__KIND_MESSAGE;
    envelope.message = &message;
    return frame_envelope(&envelope, out, capacity);
}

static size_t frame_end(uint64_t call_id, uint8_t *out, size_t capacity) {
    Camerad__V1__Status status = CAMERAD__V1__STATUS__INIT;
    Camerad__V1__CallEnd end = CAMERAD__V1__CALL_END__INIT;
    end.status = &status;
    Camerad__V1__Envelope envelope = CAMERAD__V1__ENVELOPE__INIT;
    envelope.call_id = call_id;
    envelope.kind_case = CAMERAD__V1__ENVELOPE__KIND_END;
    envelope.end = &end;
    return frame_envelope(&envelope, out, capacity);
}

static void *serve(void *argument) {
    fake *f = argument;
    int connection = accept(f->listener, NULL, NULL);
    if (connection < 0) return NULL;
    Camerad__V1__Envelope *hello = read_envelope(connection);
    if (hello) {
        Camerad__V1__HelloResponse response = CAMERAD__V1__HELLO_RESPONSE__INIT;
        response.protocol_version = CAMERAD_PROTOCOL_VERSION;
        response.server_version = "fake";
        uint8_t bytes[512];
        size_t length = frame_message(hello->call_id, 0, &response.base, bytes, sizeof bytes);
        length += frame_end(hello->call_id, bytes + length, sizeof bytes - length);
        send_raw(connection, bytes, length, NULL, 0);
        camerad_message_free(hello);
        Camerad__V1__Envelope *call = read_envelope(connection);
        if (call) {
            f->respond(f, connection, call->call_id);
            camerad_message_free(call);
        }
    }
    if (f->close_after) {
        close(connection);
        return NULL;
    }
    char sink[4096];
    while (read(connection, sink, sizeof sink) > 0) {
    }
    close(connection);
    return NULL;
}

static void fake_start(fake *f) {
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(f->directory, sizeof f->directory, "%s/camerad-fake-XXXXXX", tmp);
    assert_non_null(mkdtemp(f->directory));
    snprintf(f->path, sizeof f->path, "%s/s", f->directory);
    f->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof address.sun_path, "%s", f->path);
    assert_int_equal(bind(f->listener, (struct sockaddr *)&address, sizeof address), 0);
    assert_int_equal(listen(f->listener, 4), 0);
    assert_int_equal(pthread_create(&f->thread, NULL, serve, f), 0);
}

static void fake_stop(fake *f) {
    pthread_join(f->thread, NULL);
    close(f->listener);
    unlink(f->path);
    rmdir(f->directory);
}

/* Connects to a fake answering the second call with `respond`; runs ListDevices; its result. */
static int list_against(void (*respond)(fake *, int, uint64_t), uint32_t seed, bool close_after, int timeout_ms,
                        camerad_error *error) {
    fake f = {.respond = respond, .seed = seed, .close_after = close_after};
    fake_start(&f);
    camerad_client *client = camerad_client_connect(f.path, "malformed", error);
    assert_non_null(client);
    if (timeout_ms) camerad_client_set_timeout(client, timeout_ms);
    Camerad__V1__ListDevicesResponse *list = NULL;
    int result = camerad_list_devices(client, NULL, &list, error);
    camerad_message_free(list);
    camerad_client_destroy(client);
    fake_stop(&f);
    return result;
}

/* ---- The responses ------------------------------------------------------- */

static void truncated(fake *f, int connection, uint64_t call_id) {
    uint8_t bytes[14] = {0, 0, 0, 100, 8, (uint8_t)call_id};
    send_raw(connection, bytes, sizeof bytes, NULL, 0);
}

static void oversized(fake *f, int connection, uint64_t call_id) {
    uint8_t bytes[8] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
    send_raw(connection, bytes, sizeof bytes, NULL, 0);
}

static void not_an_envelope(fake *f, int connection, uint64_t call_id) {
    uint8_t bytes[9] = {0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff};
    send_raw(connection, bytes, sizeof bytes, NULL, 0);
}

static void claims_descriptors(fake *f, int connection, uint64_t call_id) {
    Camerad__V1__ListDevicesResponse response = CAMERAD__V1__LIST_DEVICES_RESPONSE__INIT;
    uint8_t bytes[256];
    size_t length = frame_message(call_id, 3, &response.base, bytes, sizeof bytes);
    send_raw(connection, bytes, length, NULL, 0);
}

/* A good answer that brings two descriptors nobody claims: the client closes them. */
static void stray_descriptors(fake *f, int connection, uint64_t call_id) {
    Camerad__V1__ListDevicesResponse response = CAMERAD__V1__LIST_DEVICES_RESPONSE__INIT;
    uint8_t bytes[256];
    size_t length = frame_message(call_id, 0, &response.base, bytes, sizeof bytes);
    length += frame_end(call_id, bytes + length, sizeof bytes - length);
    int fds[2] = {memfd_create("stray", MFD_CLOEXEC), memfd_create("stray", MFD_CLOEXEC)};
    send_raw(connection, bytes, length, fds, 2);
    close(fds[0]);
    close(fds[1]);
}

static void wrong_payload(fake *f, int connection, uint64_t call_id) {
    uint8_t garbage[] = {0xff, 0xff, 0xff};
    Camerad__V1__CallMessage message = CAMERAD__V1__CALL_MESSAGE__INIT;
    message.payload.data = garbage;
    message.payload.len = sizeof garbage;
    Camerad__V1__Envelope envelope = CAMERAD__V1__ENVELOPE__INIT;
    envelope.call_id = call_id;
    envelope.kind_case = CAMERAD__V1__ENVELOPE__KIND_MESSAGE;
    envelope.message = &message;
    uint8_t bytes[256];
    size_t length = frame_envelope(&envelope, bytes, sizeof bytes);
    length += frame_end(call_id, bytes + length, sizeof bytes - length);
    send_raw(connection, bytes, length, NULL, 0);
}

static void silent(fake *f, int connection, uint64_t call_id) {}

/* A good list of one device and its end, with 1 to 4 bytes changed at random. */
static void mutated(fake *f, int connection, uint64_t call_id) {
    Camerad__V1__Device device = CAMERAD__V1__DEVICE__INIT;
    device.unique_id = "virtual-0";
    device.localized_name = "Mutant";
    Camerad__V1__Format format = CAMERAD__V1__FORMAT__INIT;
    format.fourcc = 0x56595559;
    format.width = 640;
    format.height = 480;
    Camerad__V1__Format *formats[] = {&format};
    device.n_formats = 1;
    device.formats = formats;
    Camerad__V1__Device *devices[] = {&device};
    Camerad__V1__ListDevicesResponse response = CAMERAD__V1__LIST_DEVICES_RESPONSE__INIT;
    response.n_devices = 1;
    response.devices = devices;
    uint8_t bytes[1024];
    size_t length = frame_message(call_id, 0, &response.base, bytes, sizeof bytes);
    length += frame_end(call_id, bytes + length, sizeof bytes - length);
    uint32_t state = f->seed * 2654435761u + 1;
    int changes = 1 + (int)(f->seed % 4);
    for (int i = 0; i < changes; i++) {
        state = state * 1103515245u + 12345u;
        bytes[(state >> 8) % length] ^= (uint8_t)(1 + (state >> 20) % 255);
    }
    send_raw(connection, bytes, length, NULL, 0);
}

/* ---- The tests ------------------------------------------------------------ */


static void a_truncated_message_loses_the_connection(void **state) {
    camerad_error error;
    assert_int_equal(list_against(truncated, 0, true, 0, &error), CAMERAD_ERROR_CONNECTION_LOST);
}

static void an_oversized_length_loses_the_connection_at_once(void **state) {
    camerad_error error;
    assert_int_equal(list_against(oversized, 0, false, 0, &error), CAMERAD_ERROR_CONNECTION_LOST);
    assert_non_null(strstr(error.message, "more than the protocol's"));
}

static void bytes_that_are_not_an_envelope_lose_the_connection(void **state) {
    camerad_error error;
    assert_int_equal(list_against(not_an_envelope, 0, false, 0, &error), CAMERAD_ERROR_CONNECTION_LOST);
}

static void descriptors_claimed_but_not_sent_lose_the_connection(void **state) {
    camerad_error error;
    assert_int_equal(list_against(claims_descriptors, 0, false, 0, &error), CAMERAD_ERROR_CONNECTION_LOST);
    assert_non_null(strstr(error.message, "descriptors"));
}

static void unclaimed_descriptors_are_closed(void **state) {
    camerad_error error;
    assert_int_equal(list_against(stray_descriptors, 0, false, 0, &error), CAMERAD_OK);
}

static void an_answer_of_the_wrong_type_fails_the_call(void **state) {
    camerad_error error;
    assert_int_equal(list_against(wrong_payload, 0, false, 0, &error), CAMERAD_ERROR_INTERNAL);
    assert_non_null(strstr(error.message, "does not decode"));
}

static void no_answer_times_out(void **state) {
    camerad_error error;
    assert_int_equal(list_against(silent, 0, false, 300, &error), CAMERAD_ERROR_TIMED_OUT);
}

static void mutated_answers_never_crash(void **state) {
    int outcomes[3] = {0};
    for (uint32_t seed = 1; seed <= 200; seed++) {
        camerad_error error;
        int result = list_against(mutated, seed, true, 2000, &error);
        outcomes[result == CAMERAD_OK ? 0 : result == CAMERAD_ERROR_CONNECTION_LOST ? 1 : 2]++;
    }
    print_message("200 mutated answers: %d read, %d lost the connection, %d failed the call\n", outcomes[0],
                  outcomes[1], outcomes[2]);
    assert_true(outcomes[1] > 0);
}

/* ---- Streams from a broken server ---------------------------------------- */

/* A stream's start with a pool in a memfd, then frames — some naming slots and pools that do not exist. */
static void broken_stream(fake *f, int connection, uint64_t call_id) {
    Camerad__V1__Envelope *open = read_envelope(connection); /* the OpenStream message */
    camerad_message_free(open);
    int memfd = memfd_create("pool", MFD_CLOEXEC);
    assert_int_equal(ftruncate(memfd, 4 * 4096), 0);
    Camerad__V1__FramePool pool = CAMERAD__V1__FRAME_POOL__INIT;
    pool.pool_id = 7;
    pool.slot_size = 4096;
    pool.slot_count = 4;
    pool.fourcc = 0x56595559;
    pool.width = 32;
    pool.height = 32;
    pool.shared = 1;
    Camerad__V1__StreamStarted started = CAMERAD__V1__STREAM_STARTED__INIT;
    started.pool = &pool;
    Camerad__V1__StreamResponse response = CAMERAD__V1__STREAM_RESPONSE__INIT;
    response.kind_case = CAMERAD__V1__STREAM_RESPONSE__KIND_STARTED;
    response.started = &started;
    uint8_t bytes[4096];
    size_t length = frame_message(call_id, 1, &response.base, bytes, sizeof bytes);
    send_raw(connection, bytes, length, &memfd, 1);
    close(memfd);

    Camerad__V1__FrameReady frame = CAMERAD__V1__FRAME_READY__INIT;
    frame.pool_id = 7;
    frame.bytes_used = 2048;
    response.kind_case = CAMERAD__V1__STREAM_RESPONSE__KIND_FRAME;
    response.frame = &frame;
    length = 0;
    for (uint32_t i = 0; i < 3; i++) { /* good frames */
        frame.slot = i;
        frame.sequence = i;
        length += frame_message(call_id, 0, &response.base, bytes + length, sizeof bytes - length);
    }
    switch (f->seed % 4) {
    case 0: frame.slot = 99; break;                /* no such slot */
    case 1: frame.pool_id = 8; break;              /* no such pool */
    case 2: frame.bytes_used = 1 << 20; break;     /* more than the slot */
    case 3: frame.planes = NULL; frame.n_planes = 0; frame.slot = 3; frame.sequence = 3; break; /* good: then close */
    }
    length += frame_message(call_id, 0, &response.base, bytes + length, sizeof bytes - length);
    send_raw(connection, bytes, length, NULL, 0);
}

static bool stream_over(void *argument) { return camerad_stream_has_ended(argument); }

static void a_broken_stream_ends_with_a_reason(void **state) {
    for (uint32_t seed = 0; seed < 4; seed++) {
        fake f = {.respond = broken_stream, .seed = seed, .close_after = seed == 3};
        fake_start(&f);
        camerad_client *client = camerad_client_connect(f.path, "malformed", NULL);
        assert_non_null(client);
        camerad_error error;
        camerad_stream *stream = camerad_stream_new(client, "x", NULL, 0, NULL, NULL, &error);
        assert_non_null(stream);
        assert_true(test_iterate_until(client, stream_over, stream));
        int frames = 0;
        camerad_frame *held[8];
        for (camerad_frame *frame; (frame = camerad_stream_dequeue_frame(stream));) held[frames++] = frame;
        const camerad_error *status = camerad_stream_get_status(stream);
        if (seed == 3) {
            assert_int_equal(frames, 4);
            assert_int_equal(status->code, CAMERAD_ERROR_CONNECTION_LOST);
        } else {
            assert_int_equal(frames, 3);
            assert_int_equal(status->code, CAMERAD_ERROR_INTERNAL);
            assert_non_null(strstr(status->message, "camerad sent the stream"));
        }
        /* Frames stay readable after the end, until released. */
        for (int i = 0; i < frames; i++) {
            assert_int_equal(held[i]->data[0], 0);
            assert_int_equal(camerad_stream_release_frame(stream, held[i], NULL), CAMERAD_OK);
        }
        camerad_stream_destroy(stream);
        camerad_client_destroy(client);
        fake_stop(&f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_truncated_message_loses_the_connection, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(an_oversized_length_loses_the_connection_at_once, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(bytes_that_are_not_an_envelope_lose_the_connection, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(descriptors_claimed_but_not_sent_lose_the_connection, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(unclaimed_descriptors_are_closed, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(an_answer_of_the_wrong_type_fails_the_call, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(no_answer_times_out, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(mutated_answers_never_crash, test_count_fds, test_check_fds),
        cmocka_unit_test_setup_teardown(a_broken_stream_ends_with_a_reason, test_count_fds, test_check_fds),
    };
    return cmocka_run_group_tests_name("malformed", tests, NULL, NULL);
}
