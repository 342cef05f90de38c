/* What the library's files share; nothing here is public. */
#ifndef CAMERAD_INTERNAL_H
#define CAMERAD_INTERNAL_H

#include "camerad/client.h"

#include <stdarg.h>

/* camerad sends at most 16 MiB per message (Protos/README.md). */
#define CAMERAD_MAX_INCOMING (16u << 20)
/* The most descriptors waiting for their message: two pools' worth (DescriptorQueue.clientLimit). */
#define CAMERAD_MAX_WAITING_FDS 66

typedef enum call_kind { CALL_UNARY, CALL_STREAM, CALL_WATCH, CALL_RECORD } call_kind;

/* One open call on the connection. */
typedef struct camerad_call {
    uint64_t id;
    call_kind kind;
    const char *method;
    /* camerad ended the call (or the connection ended): `status` says how. */
    bool ended;
    camerad_error status;
    /* A unary call's response payload, once it came. */
    uint8_t *response;
    size_t response_length;
    bool has_response;
    /* The stream or watch the call belongs to. */
    void *owner;
    struct camerad_call *next;
} camerad_call;

typedef struct received_fd {
    int fd;
    /* The stream offset its recvmsg read up to. */
    uint64_t arrived_by;
} received_fd;

struct camerad_client {
    int socket;
    int epoll;
    int wakeup; /* an eventfd: readable while events are queued */
    bool wakeup_signalled;
    bool want_output; /* the socket is registered for EPOLLOUT */
    bool closed;      /* the connection ended; `close_status` says how */
    camerad_error close_status;
    int timeout_ms;
    uint64_t next_call_id;
    camerad_call *calls;
    Camerad__V1__HelloResponse *hello;

    /* Bytes read and not yet a whole message; rbuf[0] is at stream offset `rbase`. */
    uint8_t *rbuf;
    size_t rlen, rcap;
    uint64_t rbase;
    received_fd fds[CAMERAD_MAX_WAITING_FDS];
    size_t n_fds;

    /* Bytes to send. */
    uint8_t *wbuf;
    size_t wlen, wcap;

    /* Streams and watches, for dispatch. */
    struct camerad_stream *streams;
    struct camerad_watch *watches;
    int dispatching;
};

/* A stream's shared memory: its descriptors mapped read-only, and where each slot lies. */
typedef struct frame_pool {
    int refs;
    uint64_t id;
    uint64_t slot_size;
    uint32_t slot_count;
    bool shared;
    size_t n_maps;
    struct mapping {
        uint8_t *address;
        size_t length;
    } *maps;
    /* Slot k starts at slots[k] and has slot_room[k] bytes of its mapping after it. */
    const uint8_t **slots;
    size_t *slot_room;
    /* Where each plane of a frame lies (a frame ring's records do not say). */
    camerad_plane planes[CAMERAD_MAX_PLANES];
    uint32_t n_planes;
    struct frame_pool *next;
} frame_pool;

/* A frame as the library keeps it; the public part first. */
typedef struct stream_frame {
    camerad_frame frame;
    frame_pool *pool; /* NULL for inline frames */
    uint32_t slot;
    Camerad__V1__StreamResponse *inline_message;
    struct stream_frame *next;
} stream_frame;

/* A format as dispatched: the message it came in owns the device and the note. */
typedef struct format_record {
    camerad_stream_format format;
    Camerad__V1__StreamResponse *message;
} format_record;

typedef enum stream_event_kind { EVENT_FRAME, EVENT_DROPPED, EVENT_FORMAT, EVENT_ENDED } stream_event_kind;

/* A message that came on the socket for a news record of the frame ring not yet read. */
typedef struct pending_news {
    Camerad__V1__StreamResponse *response;
    int *fds;
    size_t n_fds;
    struct pending_news *next;
} pending_news;

/* What arrived for a stream, in order, until dispatched. */
typedef struct stream_event {
    stream_event_kind kind;
    stream_frame *frame;
    camerad_drop_reason reason;
    uint32_t count;
    uint64_t last_sequence;
    format_record *format;
    camerad_error status;
    camerad_interruption_reason interruption;
    struct stream_event *next;
} stream_event;

struct camerad_stream {
    camerad_client *client;
    camerad_call *call; /* NULL once the call is over */
    const struct camerad_stream_events *events;
    void *data;
    bool started;
    bool ended;           /* the end is queued or dispatched */
    bool end_dispatched;  /* what camerad_stream_has_ended() says */
    camerad_error status;
    camerad_interruption_reason interruption;
    format_record *format;
    frame_pool *pools;
    stream_event *head, *tail;
    stream_frame *ready_head, *ready_tail;
    stream_frame *held;
    uint32_t pending_drops[CAMERAD_DROP_REASON_COUNT];
    /* Where frames go back without a message (StreamStarted.release_ring): NULL when
     * camerad gave none; `ring_head` counts the entries written, `ring_tail_read` is
     * camerad's tail as last read. */
    uint8_t *ring;
    size_t ring_length;
    uint32_t ring_capacity;
    uint64_t ring_head, ring_tail_read;
    /* Where frames are announced (StreamStarted.frame_ring): NULL when camerad gave
     * none; `frame_ring_read` counts the records read. Its eventfd, `frame_signal`,
     * is in the client's epoll, edge-triggered, never read (-1: none). */
    uint8_t *frame_ring;
    size_t frame_ring_length;
    uint32_t frame_ring_capacity;
    uint64_t frame_ring_read;
    int frame_signal;
    /* Messages that came for news records not yet read, in order. */
    pending_news *news_head, *news_tail;
    camerad_stream_stats stats;
    /* Inside one of its callbacks; destroyed there: freed once it returns. */
    int busy;
    bool destroyed;
    struct camerad_stream *next;
};

typedef struct watch_event {
    Camerad__V1__DeviceEvent *event; /* NULL: the end */
    camerad_error status;
    struct watch_event *next;
} watch_event;

struct camerad_watch {
    camerad_client *client;
    camerad_call *call;
    const struct camerad_watch_events *events;
    void *data;
    bool ended;
    watch_event *head, *tail;
    int busy;
    bool destroyed;
    struct camerad_watch *next;
};

/* error.c */
int camerad_set_error(camerad_error *error, camerad_error_code code, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
void camerad_error_from_status(camerad_error *error, const Camerad__V1__Status *status);
void camerad_error_copy(camerad_error *to, const camerad_error *from);

/* connection.c */
camerad_call *camerad_call_open(camerad_client *client, call_kind kind, const char *method, void *owner);
void camerad_call_close(camerad_client *client, camerad_call *call);
int camerad_send_start(camerad_client *client, camerad_call *call, const ProtobufCMessage *request);
int camerad_send_message(camerad_client *client, camerad_call *call, const ProtobufCMessage *request);
int camerad_send_cancel(camerad_client *client, camerad_call *call);
/* A message with one descriptor (a duplicate goes to camerad; `fd` stays the caller's). */
int camerad_send_message_with_fd(camerad_client *client, camerad_call *call, const ProtobufCMessage *request, int fd);
/* Reads and routes until `done(argument)` or the timeout; TIMED_OUT or OK. */
int camerad_wait(camerad_client *client, bool (*done)(void *), void *argument, camerad_error *error);
void camerad_signal_events(camerad_client *client);

/* stream.c and watch.c: what the connection routes to them. `fds` become theirs. */
void camerad_stream_receive(camerad_stream *stream, const Camerad__V1__Envelope *envelope, int *fds, size_t n_fds);
void camerad_stream_connection_ended(camerad_stream *stream, const camerad_error *status);
bool camerad_stream_dispatch_one(camerad_stream *stream);
/* Reads what the stream's frame ring announced since the last call (nothing without a ring). */
void camerad_stream_read_ring(camerad_stream *stream);
void camerad_stream_free(camerad_stream *stream);
void camerad_watch_receive(camerad_watch *watch, const Camerad__V1__Envelope *envelope);
void camerad_watch_connection_ended(camerad_watch *watch, const camerad_error *status);
bool camerad_watch_dispatch_one(camerad_watch *watch);
void camerad_watch_free(camerad_watch *watch);

/* record.c: a recording's responses and end, as they arrive. */
void camerad_recording_receive(camerad_recording *recording, const Camerad__V1__Envelope *envelope);
void camerad_recording_ended(camerad_recording *recording, const camerad_error *status);

void camerad_close_fds(int *fds, size_t count);

#endif
