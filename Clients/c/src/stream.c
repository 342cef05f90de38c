/*
 * Streams: the Stream call, its pools mapped read-only, frames queued in
 * order with the drops between them, dispatched as events and pulled by
 * camerad_stream_dequeue_frame().
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* No pool has more slots than this (a pool holds what its streams may, at most 16 × 8 + 1, doubled). */
#define MAX_SLOTS 4096

/* ---- Pools -------------------------------------------------------------- */

static void copy_planes(camerad_plane *out, uint32_t *n_out, Camerad__V1__PlaneInfo **planes, size_t n_planes);

static void pool_unref(frame_pool *pool) {
    if (!pool || --pool->refs > 0) return;
    for (size_t i = 0; i < pool->n_maps; i++) munmap(pool->maps[i].address, pool->maps[i].length);
    free(pool->maps);
    free(pool->slots);
    free(pool->slot_room);
    free(pool);
}

/* The descriptor's size: lseek works for a dma-buf, where fstat says 0; fstat for the rest. */
static size_t descriptor_size(int fd) {
    off_t end = lseek(fd, 0, SEEK_END);
    if (end > 0) return (size_t)end;
    struct stat status;
    return fstat(fd, &status) == 0 && status.st_size > 0 ? (size_t)status.st_size : 0;
}

/* The release ring's layout (stream.proto's ReleaseRing). */
#define RING_HEADER 128
#define RING_ENTRY 16
#define RING_TAIL 64

/* Maps the release ring camerad gave the stream (closing `fd`); false with `why` set when it does not add up. */
static bool ring_map(camerad_stream *stream, int fd, uint32_t capacity, char *why, size_t why_size) {
    size_t length = RING_HEADER + (size_t)capacity * RING_ENTRY;
    size_t size = descriptor_size(fd);
    void *address = capacity && capacity <= 4096 && size >= length
                        ? mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (address == MAP_FAILED) {
        snprintf(why, why_size, "a release ring of %u entries in %zu bytes it cannot map", capacity, size);
        return false;
    }
    stream->ring = address;
    stream->ring_length = length;
    stream->ring_capacity = capacity;
    return true;
}

/* Writes one release into the ring; false when there is none or it is full (send ReleaseFrames). */
static bool ring_push(camerad_stream *stream, uint64_t pool_id, uint32_t slot) {
    if (!stream->ring) return false;
    /* camerad's tail is read again only when the one read last says the ring is full: its cache line stays with camerad. */
    if (stream->ring_head - stream->ring_tail_read >= stream->ring_capacity) {
        stream->ring_tail_read = __atomic_load_n((const uint64_t *)(stream->ring + RING_TAIL), __ATOMIC_ACQUIRE);
        if (stream->ring_head - stream->ring_tail_read >= stream->ring_capacity) return false;
    }
    uint8_t *entry = stream->ring + RING_HEADER + (stream->ring_head % stream->ring_capacity) * RING_ENTRY;
    uint32_t zero = 0;
    memcpy(entry, &pool_id, 8);
    memcpy(entry + 8, &slot, 4);
    memcpy(entry + 12, &zero, 4);
    stream->ring_head++;
    __atomic_store_n((uint64_t *)stream->ring, stream->ring_head, __ATOMIC_RELEASE);
    return true;
}

/* Maps `fds` (closing them) as `description` says; NULL with `why` set when it does not add up. */
static frame_pool *pool_map(const Camerad__V1__FramePool *description, int *fds, size_t n_fds, char *why,
                            size_t why_size) {
    frame_pool *pool = calloc(1, sizeof *pool);
    if (!pool) {
        snprintf(why, why_size, "out of memory");
        camerad_close_fds(fds, n_fds);
        return NULL;
    }
    pool->refs = 1;
    copy_planes(pool->planes, &pool->n_planes, description->planes, description->n_planes);
    pool->id = description->pool_id;
    pool->slot_size = description->slot_size;
    pool->slot_count = description->slot_count;
    pool->shared = description->shared;
    if (!pool->shared) {
        camerad_close_fds(fds, n_fds);
        return pool;
    }
    if (pool->slot_count == 0 || pool->slot_count > MAX_SLOTS || pool->slot_size == 0 || n_fds == 0 ||
        (description->n_slots && description->n_slots != pool->slot_count)) {
        snprintf(why, why_size, "a pool of %u slots of %llu bytes in %zu descriptors (%zu placed)", pool->slot_count,
                 (unsigned long long)pool->slot_size, n_fds, description->n_slots);
        camerad_close_fds(fds, n_fds);
        pool_unref(pool);
        return NULL;
    }
    pool->maps = calloc(n_fds, sizeof *pool->maps);
    pool->slots = calloc(pool->slot_count, sizeof *pool->slots);
    pool->slot_room = calloc(pool->slot_count, sizeof *pool->slot_room);
    if (!pool->maps || !pool->slots || !pool->slot_room) {
        snprintf(why, why_size, "out of memory");
        camerad_close_fds(fds, n_fds);
        pool_unref(pool);
        return NULL;
    }
    for (size_t i = 0; i < n_fds; i++) {
        size_t length = descriptor_size(fds[i]);
        void *address = length ? mmap(NULL, length, PROT_READ, MAP_SHARED, fds[i], 0) : MAP_FAILED;
        close(fds[i]);
        fds[i] = -1;
        if (address == MAP_FAILED) {
            snprintf(why, why_size, "descriptor %zu of the pool cannot be mapped (%zu bytes): %s", i, length,
                     strerror(errno));
            camerad_close_fds(fds + i + 1, n_fds - i - 1);
            pool_unref(pool);
            return NULL;
        }
        pool->maps[pool->n_maps++] = (struct mapping){address, length};
    }
    for (uint32_t k = 0; k < pool->slot_count; k++) {
        uint32_t index = description->n_slots ? description->slots[k]->fd_index : description->fd_index;
        uint64_t offset = description->n_slots ? description->slots[k]->offset : (uint64_t)k * pool->slot_size;
        if (index >= pool->n_maps || offset >= pool->maps[index].length) {
            snprintf(why, why_size, "slot %u lies outside the pool's memory (descriptor %u, offset %llu)", k, index,
                     (unsigned long long)offset);
            pool_unref(pool);
            return NULL;
        }
        pool->slots[k] = pool->maps[index].address + offset;
        pool->slot_room[k] = pool->maps[index].length - offset;
    }
    return pool;
}

/* The frame ring's layout (stream.proto's FrameRing). */
#define FRAME_RING_HEADER 128
#define FRAME_RING_TAIL 64
#define FRAME_RING_RECORD 64
enum { RECORD_FRAME = 1, RECORD_DROPPED = 2, RECORD_NEWS = 3 };

/* Maps the frame ring camerad gave the stream (closing `fd`) and waits on its
 * signal in the client's epoll, edge-triggered (keeping `signal`); false with `why` set. */
static bool frame_ring_map(camerad_stream *stream, int fd, int signal, uint32_t capacity, char *why, size_t why_size) {
    size_t length = FRAME_RING_HEADER + (size_t)capacity * FRAME_RING_RECORD;
    size_t size = descriptor_size(fd);
    void *address = capacity && capacity <= 65536 && size >= length
                        ? mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                        : MAP_FAILED;
    close(fd);
    struct epoll_event event = {.events = EPOLLIN | EPOLLET, .data.fd = signal};
    if (address == MAP_FAILED || epoll_ctl(stream->client->epoll, EPOLL_CTL_ADD, signal, &event) != 0) {
        snprintf(why, why_size, "a frame ring of %u records in %zu bytes it cannot map or wait on", capacity, size);
        if (address != MAP_FAILED) munmap(address, length);
        close(signal);
        return false;
    }
    stream->frame_ring = address;
    stream->frame_ring_length = length;
    stream->frame_ring_capacity = capacity;
    stream->frame_signal = signal;
    return true;
}

/* ---- Formats ------------------------------------------------------------ */

static void copy_planes(camerad_plane *out, uint32_t *n_out, Camerad__V1__PlaneInfo **planes, size_t n_planes) {
    *n_out = n_planes < CAMERAD_MAX_PLANES ? (uint32_t)n_planes : CAMERAD_MAX_PLANES;
    for (uint32_t i = 0; i < *n_out; i++) {
        out[i] = (camerad_plane){planes[i]->offset, planes[i]->bytes_per_row, planes[i]->height};
    }
}

/* Takes `message` (a StreamStarted or FormatChanged) into a record. */
static format_record *format_from(Camerad__V1__StreamResponse *message, const Camerad__V1__FramePool *pool,
                                  const Camerad__V1__Device *device, const Camerad__V1__Fraction *duration,
                                  const char *note) {
    format_record *record = calloc(1, sizeof *record);
    if (!record) return NULL;
    record->message = message;
    camerad_stream_format *format = &record->format;
    format->fourcc = pool->fourcc;
    format->width = pool->width;
    format->height = pool->height;
    format->compressed = pool->compressed;
    format->shared = pool->shared;
    format->full_range = pool->full_range;
    copy_planes(format->planes, &format->n_planes, pool->planes, pool->n_planes);
    if (duration) {
        format->frame_duration_numerator = duration->numerator;
        format->frame_duration_denominator = duration->denominator;
    }
    format->device = device;
    format->note = note ? note : "";
    if (pool->audio) {
        format->sample_rate = pool->audio->sample_rate;
        format->channels = pool->audio->channels;
        format->sample_format = pool->audio->sample_format;
        format->period_frames = pool->audio->period_frames;
        uint32_t sample_bytes = pool->audio->sample_format == CAMERAD__V1__SAMPLE_FORMAT__SAMPLE_FORMAT_S16 ? 2 : 4;
        format->bytes_per_frame = pool->audio->channels * sample_bytes;
    }
    return record;
}

static void format_free(format_record *record) {
    if (!record) return;
    camerad_message_free(record->message);
    free(record);
}

/* ---- Events ------------------------------------------------------------- */

static void frame_free(stream_frame *frame) {
    pool_unref(frame->pool);
    camerad_message_free(frame->inline_message);
    free(frame);
}

static void event_free(stream_event *event) {
    if (event->frame) frame_free(event->frame);
    format_free(event->format);
    free(event);
}

static stream_event *queue(camerad_stream *stream, stream_event_kind kind) {
    stream_event *event = calloc(1, sizeof *event);
    if (!event) return NULL;
    event->kind = kind;
    if (stream->tail) {
        stream->tail->next = event;
    } else {
        stream->head = event;
    }
    stream->tail = event;
    return event;
}

/* The stream is over for `status`: its end is queued; nothing more of its call is read. */
static void finish(camerad_stream *stream, const camerad_error *status) {
    if (stream->ended) return;
    stream->ended = true;
    stream->status = *status;
    if (stream->call) stream->call->ended = true;
    stream_event *event = queue(stream, EVENT_ENDED);
    if (event) {
        event->status = *status;
        event->interruption = stream->interruption;
    }
}

/* camerad sent this stream something that does not add up: give up on the call. */
static void fail(camerad_stream *stream, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void fail(camerad_stream *stream, const char *format, ...) {
    if (stream->ended) return;
    camerad_error status = {.code = CAMERAD_ERROR_INTERNAL};
    int used = snprintf(status.message, sizeof status.message, "camerad sent the stream ");
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(status.message + used, sizeof status.message - (size_t)used, format, arguments);
    va_end(arguments);
    if (stream->call && !stream->call->ended) camerad_send_cancel(stream->client, stream->call);
    finish(stream, &status);
}

void camerad_stream_connection_ended(camerad_stream *stream, const camerad_error *status) { finish(stream, status); }

static frame_pool *find_pool(camerad_stream *stream, uint64_t id) {
    for (frame_pool *pool = stream->pools; pool; pool = pool->next) {
        if (pool->id == id) return pool;
    }
    return NULL;
}

/* Frames from now on come from `pool`; the stream lets go of the others (their frames keep them). */
static void replace_pools(camerad_stream *stream, frame_pool *pool) {
    while (stream->pools) {
        frame_pool *old = stream->pools;
        stream->pools = old->next;
        old->next = NULL;
        pool_unref(old);
    }
    stream->pools = pool;
}

/* A frame: from a FrameReady message (`response`, which this takes) or a frame ring's record (NULL). */
static void receive_frame(camerad_stream *stream, const Camerad__V1__FrameReady *ready,
                          Camerad__V1__StreamResponse *response) {
    stream_frame *frame = calloc(1, sizeof *frame);
    if (!frame) {
        camerad_message_free(response);
        fail(stream, "a frame this client has no memory for");
        return;
    }
    camerad_frame *out = &frame->frame;
    size_t room;
    if (ready->data.len > 0) { /* inline */
        frame->inline_message = response;
        out->data = ready->data.data;
        room = ready->data.len;
    } else {
        frame_pool *pool = find_pool(stream, ready->pool_id);
        if (!pool || !pool->shared || ready->slot >= pool->slot_count) {
            free(frame);
            fail(stream, "frame %llu in slot %u of pool %llu, which it never described",
                 (unsigned long long)ready->sequence, ready->slot, (unsigned long long)ready->pool_id);
            camerad_message_free(response);
            return;
        }
        frame->pool = pool;
        pool->refs++;
        frame->slot = ready->slot;
        out->data = pool->slots[ready->slot];
        room = pool->slot_room[ready->slot];
    }
    out->sequence = ready->sequence;
    out->presentation_time_ns = ready->presentation_time_ns;
    out->duration_ns = ready->duration_ns;
    out->size = ready->bytes_used ? ready->bytes_used : room;
    copy_planes(out->planes, &out->n_planes, ready->planes, ready->n_planes);
    if (!response && frame->pool) { /* a ring's record: the planes are the pool's */
        out->n_planes = frame->pool->n_planes;
        memcpy(out->planes, frame->pool->planes, sizeof out->planes);
    }
    bool fits = out->size <= room;
    for (uint32_t i = 0; i < out->n_planes; i++) fits &= out->planes[i].offset < out->size;
    if (stream->format) {
        out->fourcc = stream->format->format.fourcc;
        out->width = stream->format->format.width;
        out->height = stream->format->format.height;
        out->full_range = stream->format->format.full_range;
        uint32_t bytes_per_frame = stream->format->format.bytes_per_frame;
        out->n_samples = bytes_per_frame ? (uint32_t)(out->size / bytes_per_frame) : 0;
    }
    memcpy(out->dropped_before, stream->pending_drops, sizeof out->dropped_before);
    memset(stream->pending_drops, 0, sizeof stream->pending_drops);
    if (!frame->inline_message) camerad_message_free(response);
    if (!fits) {
        uint64_t sequence = out->sequence;
        frame_free(frame);
        fail(stream, "frame %llu, which does not fit its slot", (unsigned long long)sequence);
        return;
    }
    stream_event *event = queue(stream, EVENT_FRAME);
    if (!event) {
        frame_free(frame);
        fail(stream, "a frame this client has no memory for");
        return;
    }
    event->frame = frame;
}

/* Drops camerad reported, from a FramesDropped message or a frame ring's record. */
static void receive_drops(camerad_stream *stream, uint32_t wire_reason, uint32_t count, uint64_t last_sequence) {
    camerad_drop_reason reason =
        wire_reason < CAMERAD_DROP_REASON_COUNT ? (camerad_drop_reason)wire_reason : CAMERAD_DROP_UNSPECIFIED;
    stream->pending_drops[reason] += count;
    stream->stats.dropped[reason] += count;
    stream_event *event = queue(stream, EVENT_DROPPED);
    if (event) {
        event->reason = reason;
        event->count = count;
        event->last_sequence = last_sequence;
    }
}

static void handle_response(camerad_stream *stream, Camerad__V1__StreamResponse *response, int *fds, size_t n_fds);

/* Takes the first waiting message off the list: handled, or (`handle` false) dropped. */
static void take_news(camerad_stream *stream, bool handle) {
    pending_news *news = stream->news_head;
    stream->news_head = news->next;
    if (!stream->news_head) stream->news_tail = NULL;
    if (handle) {
        handle_response(stream, news->response, news->fds, news->n_fds);
    } else {
        camerad_close_fds(news->fds, news->n_fds);
        camerad_message_free(news->response);
    }
    free(news->fds);
    free(news);
}

/* Reads the frame ring's records up to its head, in order: frames and drops
 * queued, each news record letting the next waiting message through. At a news
 * record whose message has not come, stops there — unless `to_the_end` (the
 * call ended: it never will), which then lets the messages still waiting through. */
static void read_frame_ring(camerad_stream *stream, bool to_the_end) {
    if (!stream->frame_ring || stream->ended) return;
    uint64_t head = __atomic_load_n((const uint64_t *)stream->frame_ring, __ATOMIC_ACQUIRE);
    if (head < stream->frame_ring_read || head - stream->frame_ring_read > stream->frame_ring_capacity) {
        fail(stream, "a frame ring whose head %llu is behind %llu or more than %u ahead", (unsigned long long)head,
             (unsigned long long)stream->frame_ring_read, stream->frame_ring_capacity);
        return;
    }
    while (stream->frame_ring_read < head && !stream->ended) {
        const uint8_t *record = stream->frame_ring + FRAME_RING_HEADER +
                                (stream->frame_ring_read % stream->frame_ring_capacity) * FRAME_RING_RECORD;
        uint32_t kind, small;
        uint64_t fields[5];
        memcpy(&kind, record, sizeof kind);
        memcpy(&small, record + 4, sizeof small);
        memcpy(fields, record + 8, sizeof fields);
        if (kind == RECORD_FRAME) {
            Camerad__V1__FrameReady ready = CAMERAD__V1__FRAME_READY__INIT;
            ready.slot = small;
            ready.pool_id = fields[0];
            ready.sequence = fields[1];
            ready.presentation_time_ns = (int64_t)fields[2];
            ready.duration_ns = (int64_t)fields[3];
            ready.bytes_used = fields[4];
            stream->stats.announced_through_ring++;
            receive_frame(stream, &ready, NULL);
        } else if (kind == RECORD_DROPPED) {
            receive_drops(stream, small, fields[0] > UINT32_MAX ? UINT32_MAX : (uint32_t)fields[0], fields[1]);
        } else if (kind == RECORD_NEWS) {
            if (!stream->news_head && !to_the_end) break;
            if (stream->news_head) take_news(stream, true);
        } else {
            fail(stream, "a frame ring record of unknown kind %u", kind);
            break;
        }
        stream->frame_ring_read++;
    }
    __atomic_store_n((uint64_t *)(stream->frame_ring + FRAME_RING_TAIL), stream->frame_ring_read, __ATOMIC_RELEASE);
    while (to_the_end && stream->news_head) take_news(stream, true);
}

void camerad_stream_read_ring(camerad_stream *stream) { read_frame_ring(stream, false); }

/* A message for a stream with a frame ring waits for its news record. */
static void wait_for_news(camerad_stream *stream, Camerad__V1__StreamResponse *response, int *fds, size_t n_fds) {
    pending_news *news = calloc(1, sizeof *news);
    int *kept = n_fds ? malloc(n_fds * sizeof *kept) : NULL;
    if (!news || (n_fds && !kept)) {
        free(news);
        free(kept);
        camerad_close_fds(fds, n_fds);
        camerad_message_free(response);
        fail(stream, "news this client has no memory for");
        return;
    }
    if (n_fds) memcpy(kept, fds, n_fds * sizeof *kept);
    *news = (pending_news){.response = response, .fds = kept, .n_fds = n_fds};
    if (stream->news_tail) {
        stream->news_tail->next = news;
    } else {
        stream->news_head = news;
    }
    stream->news_tail = news;
    read_frame_ring(stream, false);
}

void camerad_stream_receive(camerad_stream *stream, const Camerad__V1__Envelope *envelope, int *fds, size_t n_fds) {
    if (envelope->kind_case == CAMERAD__V1__ENVELOPE__KIND_END) {
        camerad_close_fds(fds, n_fds);
        camerad_error status;
        camerad_error_from_status(&status, envelope->end->status);
        if (status.code == CAMERAD_OK) {
            status.code = CAMERAD_ERROR_CANCELLED;
            snprintf(status.message, sizeof status.message, "the stream ended");
        }
        /* What the ring announced before the end, then messages that found no room there. */
        read_frame_ring(stream, true);
        finish(stream, &status);
        return;
    }
    if (envelope->kind_case != CAMERAD__V1__ENVELOPE__KIND_MESSAGE) {
        camerad_close_fds(fds, n_fds);
        return;
    }
    const ProtobufCBinaryData *payload = &envelope->message->payload;
    Camerad__V1__StreamResponse *response = camerad__v1__stream_response__unpack(NULL, payload->len, payload->data);
    if (!response) {
        camerad_close_fds(fds, n_fds);
        fail(stream, "a message that is not a StreamResponse");
        return;
    }
    if (stream->frame_ring && response->kind_case != CAMERAD__V1__STREAM_RESPONSE__KIND_STARTED) {
        wait_for_news(stream, response, fds, n_fds);
        return;
    }
    handle_response(stream, response, fds, n_fds);
    /* Records written before the start was read. */
    read_frame_ring(stream, false);
}

/* One StreamResponse (it and `fds` become the stream's). */
static void handle_response(camerad_stream *stream, Camerad__V1__StreamResponse *response, int *fds, size_t n_fds) {
    char why[256] = "";
    switch (response->kind_case) {
    case CAMERAD__V1__STREAM_RESPONSE__KIND_STARTED:
    case CAMERAD__V1__STREAM_RESPONSE__KIND_FORMAT_CHANGED: {
        bool started = response->kind_case == CAMERAD__V1__STREAM_RESPONSE__KIND_STARTED;
        const Camerad__V1__FramePool *description = started ? response->started->pool : response->format_changed->pool;
        if (!description || started == stream->started) {
            camerad_close_fds(fds, n_fds);
            camerad_message_free(response);
            fail(stream, started ? "a second start" : "a format before its start");
            return;
        }
        const Camerad__V1__FrameRing *frame_ring = started ? response->started->frame_ring : NULL;
        if (frame_ring) {
            /* camerad puts the frame ring's memfd and signal last. */
            if (n_fds < 2 || frame_ring->fd_index != n_fds - 2 || frame_ring->signal_fd_index != n_fds - 1) {
                camerad_close_fds(fds, n_fds);
                camerad_message_free(response);
                fail(stream, "a frame ring not after the pool's descriptors");
                return;
            }
            n_fds -= 2;
            if (!frame_ring_map(stream, fds[n_fds], fds[n_fds + 1], frame_ring->capacity, why, sizeof why)) {
                camerad_close_fds(fds, n_fds);
                camerad_message_free(response);
                fail(stream, "%s", why);
                return;
            }
        }
        const Camerad__V1__ReleaseRing *ring = started ? response->started->release_ring : NULL;
        if (ring) {
            /* camerad puts the ring's memfd after the pool's descriptors. */
            if (n_fds == 0 || ring->fd_index != n_fds - 1) {
                camerad_close_fds(fds, n_fds);
                camerad_message_free(response);
                fail(stream, "a release ring not after the pool's descriptors");
                return;
            }
            n_fds--;
            if (!ring_map(stream, fds[n_fds], ring->capacity, why, sizeof why)) {
                camerad_close_fds(fds, n_fds);
                camerad_message_free(response);
                fail(stream, "%s", why);
                return;
            }
        }
        frame_pool *pool = pool_map(description, fds, n_fds, why, sizeof why);
        if (!pool) {
            camerad_message_free(response);
            fail(stream, "a pool it cannot map: %s", why);
            return;
        }
        format_record *record =
            started ? format_from(response, description, response->started->device, response->started->frame_duration,
                                  response->started->note)
                    : format_from(response, description, response->format_changed->device,
                                  response->format_changed->frame_duration, response->format_changed->note);
        if (!record) {
            pool_unref(pool);
            camerad_message_free(response);
            fail(stream, "a format this client has no memory for");
            return;
        }
        replace_pools(stream, pool);
        if (started) {
            stream->started = true;
            stream->format = record;
        } else {
            stream_event *event = queue(stream, EVENT_FORMAT);
            if (!event) {
                format_free(record);
                fail(stream, "a format this client has no memory for");
                return;
            }
            event->format = record;
        }
        return;
    }
    case CAMERAD__V1__STREAM_RESPONSE__KIND_FRAME:
        camerad_close_fds(fds, n_fds);
        if (!stream->started) {
            camerad_message_free(response);
            fail(stream, "a frame before its start");
            return;
        }
        receive_frame(stream, response->frame, response);
        return;
    case CAMERAD__V1__STREAM_RESPONSE__KIND_DROPPED:
        camerad_close_fds(fds, n_fds);
        receive_drops(stream, (uint32_t)response->dropped->reason, response->dropped->count,
                      response->dropped->last_sequence);
        camerad_message_free(response);
        return;
    case CAMERAD__V1__STREAM_RESPONSE__KIND_INTERRUPTED:
        camerad_close_fds(fds, n_fds);
        stream->interruption = (camerad_interruption_reason)response->interrupted->reason;
        camerad_message_free(response);
        return;
    default: /* a kind newer than this library: skipped */
        camerad_close_fds(fds, n_fds);
        camerad_message_free(response);
        return;
    }
}

/* ---- Dispatching -------------------------------------------------------- */

bool camerad_stream_dispatch_one(camerad_stream *stream) {
    stream_event *event = stream->head;
    if (!event) return false;
    stream->head = event->next;
    if (!stream->head) stream->tail = NULL;
    const struct camerad_stream_events *events = stream->events;
    switch (event->kind) {
    case EVENT_FRAME:
        event->frame->next = NULL;
        if (stream->ready_tail) {
            stream->ready_tail->next = event->frame;
        } else {
            stream->ready_head = event->frame;
        }
        stream->ready_tail = event->frame;
        event->frame = NULL;
        free(event);
        if (events && events->process) events->process(stream->data, stream);
        return true;
    case EVENT_DROPPED:
        if (events && events->dropped) {
            events->dropped(stream->data, stream, event->reason, event->count, event->last_sequence);
        }
        break;
    case EVENT_FORMAT:
        format_free(stream->format);
        stream->format = event->format;
        event->format = NULL;
        if (events && events->format_changed) events->format_changed(stream->data, stream, &stream->format->format);
        break;
    case EVENT_ENDED:
        stream->end_dispatched = true;
        if (events && events->ended) events->ended(stream->data, stream, &event->status, event->interruption);
        break;
    }
    event_free(event);
    return true;
}

/* ---- The API ------------------------------------------------------------ */

static bool started_or_ended(void *argument) {
    camerad_stream *stream = argument;
    return stream->started || stream->ended;
}

static camerad_stream *stream_open(camerad_client *client, const char *unique_id,
                                   const Camerad__V1__OutputSettings *settings, Camerad__V1__SessionPreset preset,
                                   const Camerad__V1__AudioFormat *audio,
                                   const struct camerad_stream_events *events, void *data, camerad_error *error);

camerad_stream *camerad_stream_new(camerad_client *client, const char *unique_id,
                                   const Camerad__V1__OutputSettings *settings, Camerad__V1__SessionPreset preset,
                                   const struct camerad_stream_events *events, void *data, camerad_error *error) {
    return stream_open(client, unique_id, settings, preset, NULL, events, data, error);
}

camerad_stream *camerad_audio_stream_new(camerad_client *client, const char *unique_id,
                                         const Camerad__V1__AudioFormat *format, uint32_t max_periods_in_flight,
                                         const struct camerad_stream_events *events, void *data, camerad_error *error) {
    Camerad__V1__AudioFormat asked = CAMERAD__V1__AUDIO_FORMAT__INIT;
    if (format) asked = *format;
    Camerad__V1__OutputSettings settings = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    settings.max_frames_in_flight = max_periods_in_flight;
    return stream_open(client, unique_id, &settings, CAMERAD__V1__SESSION_PRESET__SESSION_PRESET_UNSPECIFIED, &asked,
                       events, data, error);
}

static camerad_stream *stream_open(camerad_client *client, const char *unique_id,
                                   const Camerad__V1__OutputSettings *settings, Camerad__V1__SessionPreset preset,
                                   const Camerad__V1__AudioFormat *audio,
                                   const struct camerad_stream_events *events, void *data, camerad_error *error) {
    camerad_stream *stream = calloc(1, sizeof *stream);
    if (!stream) {
        camerad_set_error(error, CAMERAD_ERROR_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    stream->client = client;
    stream->frame_signal = -1;
    stream->events = events;
    stream->data = data;
    stream->call = camerad_call_open(client, CALL_STREAM, "Stream", stream);
    if (!stream->call) {
        free(stream);
        camerad_set_error(error, CAMERAD_ERROR_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    Camerad__V1__OutputSettings asked = CAMERAD__V1__OUTPUT_SETTINGS__INIT;
    if (settings) asked = *settings;
    /* Frames come and go back through shared memory: no message per frame
       either way, and no wake-up in camerad for a release. */
    asked.release_ring = asked.delivery != CAMERAD__V1__DELIVERY__DELIVERY_INLINE;
    asked.frame_ring = asked.release_ring;
    Camerad__V1__OpenStream open = CAMERAD__V1__OPEN_STREAM__INIT;
    open.unique_id = (char *)unique_id;
    open.settings = &asked;
    open.preset = preset;
    Camerad__V1__AudioFormat audio_asked = CAMERAD__V1__AUDIO_FORMAT__INIT;
    if (audio) {
        audio_asked = *audio;
        open.audio = &audio_asked;
    }
    Camerad__V1__StreamRequest request = CAMERAD__V1__STREAM_REQUEST__INIT;
    request.kind_case = CAMERAD__V1__STREAM_REQUEST__KIND_OPEN;
    request.open = &open;
    if (!stream->call->ended) {
        camerad_send_start(client, stream->call, NULL);
        camerad_send_message(client, stream->call, &request.base);
    }
    int result = camerad_wait(client, started_or_ended, stream, error);
    if (result == CAMERAD_OK && !stream->started) {
        result = stream->status.code ? stream->status.code : CAMERAD_ERROR_INTERNAL;
        camerad_error_copy(error, &stream->status);
    }
    if (result) {
        if (stream->call && !stream->call->ended) camerad_send_cancel(client, stream->call);
        camerad_stream_free(stream);
        return NULL;
    }
    stream->next = client->streams;
    client->streams = stream;
    /* Frames that came behind the start wait for dispatch. */
    if (stream->head) camerad_signal_events(client);
    return stream;
}

/* Frees the stream; it is no longer in the client's list. */
void camerad_stream_free(camerad_stream *stream) {
    if (stream->call) {
        if (!stream->call->ended) camerad_send_cancel(stream->client, stream->call);
        camerad_call_close(stream->client, stream->call);
    }
    while (stream->head) {
        stream_event *event = stream->head;
        stream->head = event->next;
        event_free(event);
    }
    for (stream_frame *frame = stream->ready_head, *next; frame; frame = next) {
        next = frame->next;
        frame_free(frame);
    }
    for (stream_frame *frame = stream->held, *next; frame; frame = next) {
        next = frame->next;
        frame_free(frame);
    }
    replace_pools(stream, NULL);
    format_free(stream->format);
    if (stream->ring) munmap(stream->ring, stream->ring_length);
    if (stream->frame_ring) munmap(stream->frame_ring, stream->frame_ring_length);
    if (stream->frame_signal >= 0) {
        epoll_ctl(stream->client->epoll, EPOLL_CTL_DEL, stream->frame_signal, NULL);
        close(stream->frame_signal);
    }
    while (stream->news_head) take_news(stream, false);
    free(stream);
}

void camerad_stream_destroy(camerad_stream *stream) {
    if (!stream) return;
    camerad_client *client = stream->client;
    if (client->dispatching) { /* freed when dispatch unwinds */
        stream->destroyed = true;
        if (stream->call && !stream->call->ended) camerad_send_cancel(client, stream->call);
        if (stream->call) stream->call->ended = true;
        return;
    }
    for (camerad_stream **link = &client->streams; *link; link = &(*link)->next) {
        if (*link == stream) {
            *link = stream->next;
            break;
        }
    }
    camerad_stream_free(stream);
}

const camerad_stream_format *camerad_stream_get_format(const camerad_stream *stream) {
    return stream->format ? &stream->format->format : NULL;
}

camerad_frame *camerad_stream_dequeue_frame(camerad_stream *stream) {
    stream_frame *frame = stream->ready_head;
    if (!frame || stream->destroyed) return NULL;
    stream->ready_head = frame->next;
    if (!stream->ready_head) stream->ready_tail = NULL;
    frame->next = stream->held;
    stream->held = frame;
    stream->stats.frames++;
    return &frame->frame;
}

int camerad_stream_release_frame(camerad_stream *stream, camerad_frame *frame, camerad_error *error) {
    stream_frame **link = &stream->held;
    while (*link && &(*link)->frame != frame) link = &(*link)->next;
    if (!*link) {
        return camerad_set_error(error, CAMERAD_ERROR_INVALID_ARGUMENT,
                                 "that frame is not one this stream handed out, or it was released already; "
                                 "release each dequeued frame exactly once");
    }
    stream_frame *held = *link;
    *link = held->next;
    int result = CAMERAD_OK;
    bool owed = held->pool && stream->call && !stream->call->ended;
    if (owed && ring_push(stream, held->pool->id, held->slot)) {
        stream->stats.released_through_ring++;
    } else if (owed) {
        stream->stats.released_by_message++;
        uint32_t slot = held->slot;
        Camerad__V1__ReleaseFrames release = CAMERAD__V1__RELEASE_FRAMES__INIT;
        release.pool_id = held->pool->id;
        release.n_slots = 1;
        release.slots = &slot;
        Camerad__V1__StreamRequest request = CAMERAD__V1__STREAM_REQUEST__INIT;
        request.kind_case = CAMERAD__V1__STREAM_REQUEST__KIND_RELEASE;
        request.release = &release;
        result = camerad_send_message(stream->client, stream->call, &request.base);
        if (result) camerad_set_error(error, (camerad_error_code)result, "the release could not be sent");
    }
    frame_free(held);
    return result;
}

bool camerad_stream_has_ended(const camerad_stream *stream) { return stream->end_dispatched; }

const camerad_error *camerad_stream_get_status(const camerad_stream *stream) {
    static const camerad_error running = {0};
    return stream->end_dispatched ? &stream->status : &running;
}

void camerad_stream_get_stats(const camerad_stream *stream, camerad_stream_stats *stats) { *stats = stream->stats; }
