/*
 * The connection: framing (4-byte big-endian length + Envelope), descriptors
 * (SCM_RIGHTS, claimed in arrival order), calls, waiting and dispatching.
 * Protos/README.md is the specification this follows.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define METHOD_PREFIX "/camerad.v1.Camera/"

void camerad_close_fds(int *fds, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (fds[i] >= 0) close(fds[i]);
    }
}

static int64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* ---- Ending ------------------------------------------------------------- */

/* The call is over with `status`: a unary call's waiter sees it, a stream or watch queues its end. */
static void end_call(camerad_client *client, camerad_call *call, const camerad_error *status) {
    if (call->ended) return;
    call->ended = true;
    call->status = *status;
    if (call->kind == CALL_STREAM) {
        camerad_stream_connection_ended(call->owner, status);
        camerad_signal_events(client);
    } else if (call->kind == CALL_WATCH) {
        camerad_watch_connection_ended(call->owner, status);
        camerad_signal_events(client);
    } else if (call->kind == CALL_RECORD) {
        camerad_recording_ended(call->owner, status);
    }
}

/* The connection is over: every call ends with `status`; nothing more is read or sent. */
static void close_connection(camerad_client *client, const camerad_error *status) {
    if (client->closed) return;
    client->closed = true;
    client->close_status = *status;
    epoll_ctl(client->epoll, EPOLL_CTL_DEL, client->socket, NULL);
    shutdown(client->socket, SHUT_RDWR);
    for (size_t i = 0; i < client->n_fds; i++) close(client->fds[i].fd);
    client->n_fds = 0;
    client->rlen = 0;
    client->wlen = 0;
    for (camerad_call *call = client->calls, *next; call; call = next) {
        next = call->next;
        end_call(client, call, status);
    }
}

static void broken(camerad_client *client, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void broken(camerad_client *client, const char *format, ...) {
    camerad_error status = {.code = CAMERAD_ERROR_CONNECTION_LOST};
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(status.message, sizeof status.message, format, arguments);
    va_end(arguments);
    close_connection(client, &status);
}

/* ---- Calls -------------------------------------------------------------- */

camerad_call *camerad_call_open(camerad_client *client, call_kind kind, const char *method, void *owner) {
    camerad_call *call = calloc(1, sizeof *call);
    if (!call) return NULL;
    call->id = client->next_call_id++;
    call->kind = kind;
    call->method = method;
    call->owner = owner;
    call->next = client->calls;
    client->calls = call;
    if (client->closed) end_call(client, call, &client->close_status);
    return call;
}

void camerad_call_close(camerad_client *client, camerad_call *call) {
    for (camerad_call **link = &client->calls; *link; link = &(*link)->next) {
        if (*link == call) {
            *link = call->next;
            break;
        }
    }
    free(call->response);
    free(call);
}

static camerad_call *find_call(camerad_client *client, uint64_t id) {
    for (camerad_call *call = client->calls; call; call = call->next) {
        if (call->id == id) return call;
    }
    return NULL;
}

/* ---- Writing ------------------------------------------------------------ */

static void update_interest(camerad_client *client) {
    bool want = client->wlen > 0 && !client->closed;
    if (want == client->want_output || client->closed) return;
    struct epoll_event event = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.fd = client->socket};
    epoll_ctl(client->epoll, EPOLL_CTL_MOD, client->socket, &event);
    client->want_output = want;
}

/* Sends what the socket takes now; the rest waits for the next flush. */
static void flush(camerad_client *client) {
    size_t sent = 0;
    while (!client->closed && sent < client->wlen) {
        ssize_t n = send(client->socket, client->wbuf + sent, client->wlen - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            sent += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            broken(client, "the connection to camerad broke (%s); reconnect when camerad runs again",
                   n < 0 ? strerror(errno) : "closed");
            return;
        }
    }
    if (client->closed) return;
    memmove(client->wbuf, client->wbuf + sent, client->wlen - sent);
    client->wlen -= sent;
    update_interest(client);
}

static int send_envelope(camerad_client *client, const Camerad__V1__Envelope *envelope) {
    if (client->closed) return CAMERAD_ERROR_CONNECTION_LOST;
    size_t size = protobuf_c_message_get_packed_size(&envelope->base);
    if (client->wcap - client->wlen < size + 4) {
        size_t capacity = client->wcap ? client->wcap : 4096;
        while (capacity - client->wlen < size + 4) capacity *= 2;
        uint8_t *grown = realloc(client->wbuf, capacity);
        if (!grown) return CAMERAD_ERROR_RESOURCE_EXHAUSTED;
        client->wbuf = grown;
        client->wcap = capacity;
    }
    uint8_t *out = client->wbuf + client->wlen;
    out[0] = (uint8_t)(size >> 24);
    out[1] = (uint8_t)(size >> 16);
    out[2] = (uint8_t)(size >> 8);
    out[3] = (uint8_t)size;
    protobuf_c_message_pack(&envelope->base, out + 4);
    client->wlen += size + 4;
    flush(client);
    return CAMERAD_OK;
}

/* `message` packed into `bytes` (the caller frees bytes->data). */
static int pack(const ProtobufCMessage *message, ProtobufCBinaryData *bytes) {
    bytes->len = message ? protobuf_c_message_get_packed_size(message) : 0;
    bytes->data = malloc(bytes->len ? bytes->len : 1);
    if (!bytes->data) return CAMERAD_ERROR_RESOURCE_EXHAUSTED;
    if (message) protobuf_c_message_pack(message, bytes->data);
    return CAMERAD_OK;
}

int camerad_send_start(camerad_client *client, camerad_call *call, const ProtobufCMessage *request) {
    char method[128];
    snprintf(method, sizeof method, METHOD_PREFIX "%s", call->method);
    Camerad__V1__CallStart start = CAMERAD__V1__CALL_START__INIT;
    start.method = method;
    int result = pack(request, &start.request);
    if (result) return result;
    Camerad__V1__Envelope envelope = CAMERAD__V1__ENVELOPE__INIT;
    envelope.call_id = call->id;
    envelope.kind_case = CAMERAD__V1__ENVELOPE__KIND_START;
    envelope.start = &start;
    result = send_envelope(client, &envelope);
    free(start.request.data);
    return result;
}

int camerad_send_message(camerad_client *client, camerad_call *call, const ProtobufCMessage *request) {
    Camerad__V1__CallMessage message = CAMERAD__V1__CALL_MESSAGE__INIT;
    int result = pack(request, &message.payload);
    if (result) return result;
    Camerad__V1__Envelope envelope = CAMERAD__V1__ENVELOPE__INIT;
    envelope.call_id = call->id;
    envelope.kind_case = CAMERAD__V1__ENVELOPE__KIND_MESSAGE;
    envelope.message = &message;
    result = send_envelope(client, &envelope);
    free(message.payload.data);
    return result;
}

/* Waits up to the client's timeout for everything queued to be written: a message with a
   descriptor must start a sendmsg of its own. */
static int drain(camerad_client *client) {
    int64_t deadline = client->timeout_ms > 0 ? now_ms() + client->timeout_ms : 0;
    while (!client->closed && client->wlen > 0) {
        int timeout = deadline ? (int)(deadline - now_ms()) : -1;
        if (deadline && timeout <= 0) return CAMERAD_ERROR_TIMED_OUT;
        struct pollfd fd = {.fd = client->socket, .events = POLLOUT};
        if (poll(&fd, 1, timeout) < 0 && errno != EINTR) return CAMERAD_ERROR_CONNECTION_LOST;
        flush(client);
    }
    return client->closed ? CAMERAD_ERROR_CONNECTION_LOST : CAMERAD_OK;
}

int camerad_send_message_with_fd(camerad_client *client, camerad_call *call, const ProtobufCMessage *request, int fd) {
    int result = drain(client);
    if (result) return result;
    Camerad__V1__CallMessage message = CAMERAD__V1__CALL_MESSAGE__INIT;
    result = pack(request, &message.payload);
    if (result) return result;
    Camerad__V1__Envelope envelope = CAMERAD__V1__ENVELOPE__INIT;
    envelope.call_id = call->id;
    envelope.fd_count = 1;
    envelope.kind_case = CAMERAD__V1__ENVELOPE__KIND_MESSAGE;
    envelope.message = &message;
    size_t size = protobuf_c_message_get_packed_size(&envelope.base);
    uint8_t *frame = malloc(size + 4);
    if (!frame) {
        free(message.payload.data);
        return CAMERAD_ERROR_RESOURCE_EXHAUSTED;
    }
    frame[0] = (uint8_t)(size >> 24);
    frame[1] = (uint8_t)(size >> 16);
    frame[2] = (uint8_t)(size >> 8);
    frame[3] = (uint8_t)size;
    protobuf_c_message_pack(&envelope.base, frame + 4);
    free(message.payload.data);

    /* The descriptor rides with the frame's first byte. */
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct iovec vector = {.iov_base = frame, .iov_len = size + 4};
    struct msghdr header = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.space,
                            .msg_controllen = sizeof control.space};
    struct cmsghdr *rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(rights), &fd, sizeof fd);
    ssize_t sent;
    do {
        sent = sendmsg(client->socket, &header, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) {
        free(frame);
        broken(client, "sending a descriptor to camerad failed (%s)", strerror(errno));
        return CAMERAD_ERROR_CONNECTION_LOST;
    }
    /* What the socket did not take follows as plain bytes. */
    size_t rest = size + 4 - (size_t)sent;
    if (rest > 0) {
        if (client->wcap < rest) {
            uint8_t *grown = realloc(client->wbuf, rest);
            if (!grown) {
                free(frame);
                return CAMERAD_ERROR_RESOURCE_EXHAUSTED;
            }
            client->wbuf = grown;
            client->wcap = rest;
        }
        memcpy(client->wbuf, frame + sent, rest);
        client->wlen = rest;
        flush(client);
    }
    free(frame);
    return CAMERAD_OK;
}

int camerad_send_cancel(camerad_client *client, camerad_call *call) {
    Camerad__V1__CallCancel cancel = CAMERAD__V1__CALL_CANCEL__INIT;
    Camerad__V1__Envelope envelope = CAMERAD__V1__ENVELOPE__INIT;
    envelope.call_id = call->id;
    envelope.kind_case = CAMERAD__V1__ENVELOPE__KIND_CANCEL;
    envelope.cancel = &cancel;
    return send_envelope(client, &envelope);
}

/* ---- Reading ------------------------------------------------------------ */

/* One whole envelope with its descriptors: to its call. Takes the descriptors. */
static void route(camerad_client *client, const Camerad__V1__Envelope *envelope, int *fds, size_t n_fds) {
    if (envelope->call_id == 0) {
        camerad_close_fds(fds, n_fds);
        camerad_error status;
        camerad_error_from_status(&status, envelope->end ? envelope->end->status : NULL);
        if (status.code == CAMERAD_OK) {
            status.code = CAMERAD_ERROR_CONNECTION_LOST;
            snprintf(status.message, sizeof status.message, "camerad ended the connection");
        }
        close_connection(client, &status);
        return;
    }
    camerad_call *call = find_call(client, envelope->call_id);
    if (!call || call->ended) { /* a call this client gave up: ignored */
        camerad_close_fds(fds, n_fds);
        return;
    }
    switch (call->kind) {
    case CALL_STREAM:
        camerad_stream_receive(call->owner, envelope, fds, n_fds);
        camerad_signal_events(client);
        return;
    case CALL_WATCH:
        camerad_close_fds(fds, n_fds);
        camerad_watch_receive(call->owner, envelope);
        camerad_signal_events(client);
        return;
    case CALL_RECORD:
        camerad_close_fds(fds, n_fds);
        camerad_recording_receive(call->owner, envelope);
        return;
    case CALL_UNARY:
        camerad_close_fds(fds, n_fds);
        if (envelope->kind_case == CAMERAD__V1__ENVELOPE__KIND_MESSAGE && !call->has_response) {
            const ProtobufCBinaryData *payload = &envelope->message->payload;
            call->response = malloc(payload->len ? payload->len : 1);
            if (!call->response) {
                camerad_error status = {.code = CAMERAD_ERROR_RESOURCE_EXHAUSTED};
                snprintf(status.message, sizeof status.message, "out of memory for camerad's answer to %s",
                         call->method);
                end_call(client, call, &status);
                return;
            }
            if (payload->len) memcpy(call->response, payload->data, payload->len);
            call->response_length = payload->len;
            call->has_response = true;
        } else if (envelope->kind_case == CAMERAD__V1__ENVELOPE__KIND_END) {
            camerad_error status;
            camerad_error_from_status(&status, envelope->end->status);
            end_call(client, call, &status);
        }
        return;
    }
}

/* The 4-byte big-endian length that starts every message. */
static uint32_t message_length(const uint8_t *head) {
    return (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
}

/* Takes the whole messages at the front of the read buffer. */
static void parse(camerad_client *client) {
    size_t at = 0;
    while (!client->closed && client->rlen - at >= 4) {
        const uint8_t *head = client->rbuf + at;
        uint32_t length = message_length(head);
        if (length > CAMERAD_MAX_INCOMING) {
            broken(client, "camerad sent a message of %u bytes, more than the protocol's %u; "
                           "the connection was closed: check camerad and this library speak the same protocol",
                   length, CAMERAD_MAX_INCOMING);
            return;
        }
        if (client->rlen - at < 4 + (size_t)length) break;
        uint64_t end = client->rbase + at + 4 + length;
        Camerad__V1__Envelope *envelope = camerad__v1__envelope__unpack(NULL, length, head + 4);
        at += 4 + (size_t)length;
        if (!envelope || envelope->kind_case == CAMERAD__V1__ENVELOPE__KIND__NOT_SET ||
            (envelope->call_id == 0 && envelope->kind_case != CAMERAD__V1__ENVELOPE__KIND_END)) {
            camerad_message_free(envelope);
            broken(client, "camerad sent a message that is not an envelope; the connection was closed: "
                           "check camerad and this library speak the same protocol");
            return;
        }
        if (envelope->fd_count > client->n_fds) {
            unsigned claimed = envelope->fd_count;
            camerad_message_free(envelope);
            broken(client, "camerad's message claims %u descriptors but %zu arrived; the connection was closed",
                   claimed, client->n_fds);
            return;
        }
        int fds[CAMERAD_MAX_WAITING_FDS];
        size_t taken = envelope->fd_count;
        for (size_t i = 0; i < taken; i++) fds[i] = client->fds[i].fd;
        /* Then those that came no later than this message's last byte: no later message can claim them. */
        size_t drop = taken;
        while (drop < client->n_fds && client->fds[drop].arrived_by <= end) close(client->fds[drop++].fd);
        memmove(client->fds, client->fds + drop, (client->n_fds - drop) * sizeof client->fds[0]);
        client->n_fds -= drop;
        route(client, envelope, fds, taken);
        camerad_message_free(envelope);
    }
    if (client->closed) return;
    memmove(client->rbuf, client->rbuf + at, client->rlen - at);
    client->rlen -= at;
    client->rbase += at;
}

/* Reads what the socket has now. */
static void read_available(camerad_client *client) {
    while (!client->closed) {
        size_t want = 64 * 1024;
        if (client->rlen >= 4) {
            size_t length = message_length(client->rbuf);
            if (length <= CAMERAD_MAX_INCOMING && 4 + length > client->rlen + want) want = 4 + length - client->rlen;
        }
        if (client->rcap - client->rlen < want) {
            size_t capacity = client->rcap ? client->rcap : want;
            while (capacity - client->rlen < want) capacity *= 2;
            uint8_t *grown = realloc(client->rbuf, capacity);
            if (!grown) {
                broken(client, "out of memory reading from camerad");
                return;
            }
            client->rbuf = grown;
            client->rcap = capacity;
        }
        union {
            char buffer[CMSG_SPACE(sizeof(int) * CAMERAD_MAX_WAITING_FDS)];
            struct cmsghdr align;
        } control;
        struct iovec iov = {.iov_base = client->rbuf + client->rlen, .iov_len = client->rcap - client->rlen};
        struct msghdr message = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
        ssize_t n = recvmsg(client->socket, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        uint64_t arrived_by = client->rbase + client->rlen + (n > 0 ? (uint64_t)n : 0);
        bool overflow = (message.msg_flags & MSG_CTRUNC) != 0;
        for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&message) : NULL; c; c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            int received[CAMERAD_MAX_WAITING_FDS];
            memcpy(received, CMSG_DATA(c), count * sizeof(int));
            for (size_t i = 0; i < count; i++) {
                if (client->n_fds < CAMERAD_MAX_WAITING_FDS) {
                    client->fds[client->n_fds++] = (received_fd){.fd = received[i], .arrived_by = arrived_by};
                } else {
                    close(received[i]);
                    overflow = true;
                }
            }
        }
        if (overflow) {
            broken(client, "camerad sent more descriptors than a client takes (%d waiting); the connection was closed",
                   CAMERAD_MAX_WAITING_FDS);
            return;
        }
        if (n == 0 || n < 0) {
            broken(client, "the connection to camerad ended (%s); reconnect when camerad runs again",
                   n == 0 ? "camerad closed it" : strerror(errno));
            return;
        }
        client->rlen += (size_t)n;
        parse(client);
    }
}

/* ---- Waiting and dispatching -------------------------------------------- */

void camerad_signal_events(camerad_client *client) {
    if (client->wakeup_signalled) return;
    uint64_t one = 1;
    if (write(client->wakeup, &one, sizeof one) == sizeof one) client->wakeup_signalled = true;
}

int camerad_wait(camerad_client *client, bool (*done)(void *), void *argument, camerad_error *error) {
    int64_t deadline = client->timeout_ms > 0 ? now_ms() + client->timeout_ms : 0;
    while (!done(argument)) {
        if (client->closed) return CAMERAD_OK; /* every call has ended: done() says so next */
        short events = POLLIN | (client->wlen ? POLLOUT : 0);
        int timeout = -1;
        if (deadline) {
            int64_t left = deadline - now_ms();
            if (left <= 0) {
                return camerad_set_error(error, CAMERAD_ERROR_TIMED_OUT,
                                         "camerad did not answer within %d ms; check it is running, or raise "
                                         "the client's timeout (camerad_client_set_timeout)",
                                         client->timeout_ms);
            }
            timeout = left > 1000 ? 1000 : (int)left;
        }
        struct pollfd fd = {.fd = client->socket, .events = events};
        int ready = poll(&fd, 1, timeout);
        if (ready < 0 && errno != EINTR) {
            broken(client, "poll failed: %s", strerror(errno));
        } else if (ready > 0) {
            if (fd.revents & POLLOUT) flush(client);
            if (fd.revents & (POLLIN | POLLHUP | POLLERR)) read_available(client);
        }
    }
    return CAMERAD_OK;
}

int camerad_client_dispatch(camerad_client *client, camerad_error *error) {
    flush(client);
    /* What is ready: the socket is read only if it is (no recvmsg for nothing),
       and the frame signals' edges are taken, so the descriptor goes quiet (a
       signal is never read, and stays readable); then what their rings announced. */
    struct epoll_event ready[16];
    bool readable = false;
    int found;
    do {
        found = epoll_wait(client->epoll, ready, 16, 0);
        for (int i = 0; i < found; i++) readable |= ready[i].data.fd == client->socket;
    } while (found == 16);
    if (readable || found < 0) read_available(client);
    for (camerad_stream *stream = client->streams; stream; stream = stream->next) {
        if (!stream->destroyed) camerad_stream_read_ring(stream);
    }
    client->dispatching++;
    /* One event at a time, round the streams and watches, until none is left:
       a callback may destroy its stream or make blocking calls that queue more. */
    bool any = true;
    while (any) {
        any = false;
        for (camerad_stream *stream = client->streams; stream; stream = stream->next) {
            if (stream->destroyed) continue;
            stream->busy++;
            any |= camerad_stream_dispatch_one(stream);
            stream->busy--;
        }
        for (camerad_watch *watch = client->watches; watch; watch = watch->next) {
            if (watch->destroyed) continue;
            watch->busy++;
            any |= camerad_watch_dispatch_one(watch);
            watch->busy--;
        }
    }
    client->dispatching--;
    /* Everything queued has been dispatched: the descriptor goes quiet until more comes. */
    uint64_t count;
    if (read(client->wakeup, &count, sizeof count) < 0 && errno != EAGAIN) {
        return camerad_set_error(error, CAMERAD_ERROR_INTERNAL, "reading the client's eventfd failed: %s",
                                 strerror(errno));
    }
    client->wakeup_signalled = false;
    if (!client->dispatching) {
        for (camerad_stream **link = &client->streams; *link;) {
            camerad_stream *stream = *link;
            if (stream->destroyed) {
                *link = stream->next;
                camerad_stream_free(stream);
            } else {
                link = &stream->next;
            }
        }
        for (camerad_watch **link = &client->watches; *link;) {
            camerad_watch *watch = *link;
            if (watch->destroyed) {
                *link = watch->next;
                camerad_watch_free(watch);
            } else {
                link = &watch->next;
            }
        }
    }
    if (client->closed) {
        camerad_error_copy(error, &client->close_status);
        return client->close_status.code;
    }
    return CAMERAD_OK;
}

int camerad_client_iterate(camerad_client *client, int timeout_ms, camerad_error *error) {
    struct pollfd fd = {.fd = client->epoll, .events = POLLIN};
    if (poll(&fd, 1, timeout_ms) < 0 && errno != EINTR) {
        return camerad_set_error(error, CAMERAD_ERROR_INTERNAL, "poll failed: %s", strerror(errno));
    }
    return camerad_client_dispatch(client, error);
}

/* ---- Connecting --------------------------------------------------------- */

static int resolve_path(const char *socket_path, char *out, size_t size) {
    const char *path = socket_path;
    char runtime[sizeof(((struct sockaddr_un *)0)->sun_path) + 32];
    if (!path || !*path) path = getenv("CAMERAD_SOCKET");
    if (!path || !*path) {
        const char *directory = getenv("XDG_RUNTIME_DIR");
        if (directory && *directory) {
            snprintf(runtime, sizeof runtime, "%s/camerad.sock", directory);
            path = runtime;
        } else {
            path = "/run/camerad/camerad.sock";
        }
    }
    if (strlen(path) >= size) return -1;
    strcpy(out, path);
    return 0;
}

static bool call_ended(void *call) { return ((camerad_call *)call)->ended; }

int camerad_client_call(camerad_client *client, const char *method, const ProtobufCMessage *request,
                        const ProtobufCMessageDescriptor *response_type, ProtobufCMessage **response,
                        camerad_error *error) {
    if (response) *response = NULL;
    camerad_call *call = camerad_call_open(client, CALL_UNARY, method, NULL);
    if (!call) return camerad_set_error(error, CAMERAD_ERROR_RESOURCE_EXHAUSTED, "out of memory");
    if (!call->ended) camerad_send_start(client, call, request);
    int result = camerad_wait(client, call_ended, call, error);
    if (result) {
        if (!call->ended) camerad_send_cancel(client, call);
        camerad_call_close(client, call);
        return result;
    }
    if (call->status.code != CAMERAD_OK) {
        result = call->status.code;
        camerad_error_copy(error, &call->status);
    } else if (!call->has_response) {
        result = camerad_set_error(error, CAMERAD_ERROR_INTERNAL, "camerad ended %s without an answer", method);
    } else {
        ProtobufCMessage *decoded =
            protobuf_c_message_unpack(response_type, NULL, call->response_length, call->response);
        if (!decoded) {
            result = camerad_set_error(error, CAMERAD_ERROR_INTERNAL,
                                       "camerad's answer to %s does not decode as %s; check camerad and this "
                                       "library speak the same protocol",
                                       method, response_type->name);
        } else if (response) {
            *response = decoded;
        } else {
            protobuf_c_message_free_unpacked(decoded, NULL);
        }
    }
    camerad_call_close(client, call);
    /* What arrived meanwhile for streams and watches waits for dispatch. */
    return result;
}

static const char *program_name(void) {
    extern char *program_invocation_short_name;
    return program_invocation_short_name;
}

camerad_client *camerad_client_connect(const char *socket_path, const char *client_name, camerad_error *error) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (resolve_path(socket_path, address.sun_path, sizeof address.sun_path) < 0) {
        camerad_set_error(error, CAMERAD_ERROR_INVALID_ARGUMENT, "the socket path is longer than %zu bytes",
                          sizeof address.sun_path - 1);
        return NULL;
    }
    camerad_client *client = calloc(1, sizeof *client);
    if (!client) {
        camerad_set_error(error, CAMERAD_ERROR_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    client->socket = client->epoll = client->wakeup = -1;
    client->timeout_ms = 30000;
    client->next_call_id = 1;
    client->socket = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    client->epoll = epoll_create1(EPOLL_CLOEXEC);
    client->wakeup = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (client->socket < 0 || client->epoll < 0 || client->wakeup < 0) {
        camerad_set_error(error, CAMERAD_ERROR_RESOURCE_EXHAUSTED, "cannot make a socket: %s", strerror(errno));
        camerad_client_destroy(client);
        return NULL;
    }
    if (connect(client->socket, (struct sockaddr *)&address, sizeof address) < 0) {
        camerad_set_error(error, CAMERAD_ERROR_DAEMON_UNAVAILABLE,
                          "cannot reach camerad at %s (%s); start it, or point CAMERAD_SOCKET at its socket",
                          address.sun_path, strerror(errno));
        camerad_client_destroy(client);
        return NULL;
    }
    struct epoll_event socket_event = {.events = EPOLLIN, .data.fd = client->socket};
    struct epoll_event wakeup_event = {.events = EPOLLIN, .data.fd = client->wakeup};
    epoll_ctl(client->epoll, EPOLL_CTL_ADD, client->socket, &socket_event);
    epoll_ctl(client->epoll, EPOLL_CTL_ADD, client->wakeup, &wakeup_event);

    Camerad__V1__HelloRequest hello = CAMERAD__V1__HELLO_REQUEST__INIT;
    hello.protocol_version = CAMERAD_PROTOCOL_VERSION;
    hello.client_name = (char *)(client_name ? client_name : program_name());
    ProtobufCMessage *response = NULL;
    if (camerad_client_call(client, "Hello", &hello.base, &camerad__v1__hello_response__descriptor, &response,
                            error)) {
        camerad_client_destroy(client);
        return NULL;
    }
    client->hello = (Camerad__V1__HelloResponse *)response;
    return client;
}

void camerad_client_destroy(camerad_client *client) {
    if (!client) return;
    camerad_error status = {.code = CAMERAD_ERROR_CONNECTION_LOST};
    snprintf(status.message, sizeof status.message, "the client closed its connection");
    if (!client->closed && client->socket >= 0) close_connection(client, &status);
    while (client->streams) {
        camerad_stream *stream = client->streams;
        client->streams = stream->next;
        camerad_stream_free(stream);
    }
    while (client->watches) {
        camerad_watch *watch = client->watches;
        client->watches = watch->next;
        camerad_watch_free(watch);
    }
    while (client->calls) camerad_call_close(client, client->calls);
    for (size_t i = 0; i < client->n_fds; i++) close(client->fds[i].fd);
    if (client->socket >= 0) close(client->socket);
    if (client->epoll >= 0) close(client->epoll);
    if (client->wakeup >= 0) close(client->wakeup);
    camerad_message_free(client->hello);
    free(client->rbuf);
    free(client->wbuf);
    free(client);
}

const Camerad__V1__HelloResponse *camerad_client_hello(const camerad_client *client) { return client->hello; }

void camerad_client_set_timeout(camerad_client *client, int timeout_ms) {
    client->timeout_ms = timeout_ms < 0 ? 0 : timeout_ms;
}

int camerad_client_get_fd(const camerad_client *client) { return client->epoll; }
