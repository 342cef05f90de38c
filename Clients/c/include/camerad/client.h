/*
 * libcamerad-client: camerad's C client.
 *
 * One `camerad_client` is one connection to camerad (Protos/README.md draws the
 * wire). Its calls are of two kinds:
 *
 *   - Blocking calls (list, get, lock, configure, photo, statistics, opening a
 *     stream): each sends its request and waits for the answer, up to the
 *     client's timeout. While one waits, whatever else arrives is only queued:
 *     no callback runs inside a blocking call.
 *   - Events (frames, drops, format changes, interruptions, device events):
 *     queued as they arrive and handed out by camerad_client_dispatch(), which
 *     runs the callbacks. camerad_client_get_fd() is a descriptor to poll for
 *     readability (an epoll descriptor: it is readable when there is anything
 *     to dispatch or to send); put it in your event loop and call
 *     camerad_client_dispatch() when it is readable. camerad_client_iterate()
 *     does both for programs without a loop.
 *
 * Streams are shaped like PipeWire's pw_stream: a versioned struct of
 * callbacks, `process` when frames are waiting, and a pull API
 * (camerad_stream_dequeue_frame() / camerad_stream_release_frame()) usable with
 * or without callbacks. Frames are read-only views straight into the pool's
 * shared memory: no copy.
 *
 * Data types: the protocol's own messages (protobuf-c: the camerad/v1/...pb-c.h headers)
 * describe devices, settings and photos. Messages this library returns are
 * the caller's: free them with camerad_message_free().
 *
 * Errors: a function that fails returns a camerad_error_code (or NULL) and
 * fills the camerad_error it was given, if any. The codes are the protocol's
 * ErrorReason numbers, the same as CaptureKit's CaptureError.Code.
 *
 * Threads: a client and its streams and watches are not thread-safe: use each
 * client from one thread at a time (as with one pw_loop), including its
 * callbacks, which run on the thread calling camerad_client_dispatch(). A frame's
 * bytes may be read on any thread until the frame is released; release it on
 * the client's thread. Separate clients are independent.
 */
#ifndef CAMERAD_CLIENT_H
#define CAMERAD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "camerad/v1/camera.pb-c.h"
#include "camerad/v1/envelope.pb-c.h"
#include "camerad/v1/photo.pb-c.h"
#include "camerad/v1/stream.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CAMERAD_API __attribute__((visibility("default")))
#else
#define CAMERAD_API
#endif

#define CAMERAD_CLIENT_VERSION "0.1.0"
/* The protocol version this library speaks (Protos/README.md). */
#define CAMERAD_PROTOCOL_VERSION 2

/* ---- Errors ------------------------------------------------------------ */

/* The protocol's ErrorReason numbers; CaptureKit's CaptureError.Code names. */
typedef enum camerad_error_code {
    CAMERAD_OK = 0,
    CAMERAD_ERROR_CANCELLED = 1,
    CAMERAD_ERROR_INVALID_ARGUMENT = 2,
    CAMERAD_ERROR_UNIMPLEMENTED = 3,
    CAMERAD_ERROR_HELLO_REQUIRED = 4,
    CAMERAD_ERROR_VERSION_MISMATCH = 5,
    CAMERAD_ERROR_PERMISSION_DENIED = 6,
    CAMERAD_ERROR_RESOURCE_EXHAUSTED = 7,
    CAMERAD_ERROR_SHUTTING_DOWN = 8,
    CAMERAD_ERROR_INTERNAL = 9,
    /* The daemon's socket could not be reached. */
    CAMERAD_ERROR_DAEMON_UNAVAILABLE = 10,
    /* The connection broke, or camerad sent what the protocol does not allow (it is closed then). */
    CAMERAD_ERROR_CONNECTION_LOST = 11,
    CAMERAD_ERROR_ALREADY_EXISTS = 12,
    CAMERAD_ERROR_TIMED_OUT = 13,
    CAMERAD_ERROR_DEVICE_NOT_FOUND = 20,
    CAMERAD_ERROR_DEVICE_DISCONNECTED = 21,
    CAMERAD_ERROR_DEVICE_BUSY = 22,
    CAMERAD_ERROR_DEVICE_LOCKED = 23,
    CAMERAD_ERROR_NOT_LOCKED = 24,
    CAMERAD_ERROR_UNSUPPORTED_FORMAT = 25,
    CAMERAD_ERROR_INVALID_STATE = 26,
    CAMERAD_ERROR_UNSUPPORTED = 27,
    /* A failure without a reason this library knows (a newer or older camerad). */
    CAMERAD_ERROR_UNKNOWN = 1000,
} camerad_error_code;

typedef struct camerad_error {
    camerad_error_code code;
    /* The gRPC canonical status code camerad gave (Camerad__V1__StatusCode). */
    int status;
    /* One line: what failed and what to do about it. */
    char message[512];
} camerad_error;

/* CaptureKit's name for a code: "deviceNotFound"; "unknown" for others. */
CAMERAD_API const char *camerad_error_name(camerad_error_code code);

/* Frees any message this library returned (NULL is fine). */
CAMERAD_API void camerad_message_free(void *message);

/* ---- The connection ---------------------------------------------------- */

typedef struct camerad_client camerad_client;

/*
 * Connects and says Hello. `socket_path` NULL resolves the path as camerad
 * does: $CAMERAD_SOCKET, else $XDG_RUNTIME_DIR/camerad.sock, else
 * /run/camerad/camerad.sock. `client_name` (NULL: the program's name) shows in
 * other clients' errors ("locked by pid 4242 (obs)").
 * Fails with DAEMON_UNAVAILABLE, VERSION_MISMATCH, CONNECTION_LOST.
 */
CAMERAD_API camerad_client *camerad_client_connect(const char *socket_path, const char *client_name, camerad_error *error);

/* Closes the connection: every stream and watch ends; their frames are unmapped. */
CAMERAD_API void camerad_client_destroy(camerad_client *client);

/* What camerad said to Hello: its version, features, pid, and this client's pid and uid. */
CAMERAD_API const Camerad__V1__HelloResponse *camerad_client_hello(const camerad_client *client);

/* How long a blocking call waits for its answer (default 30 000 ms; 0: for ever). */
CAMERAD_API void camerad_client_set_timeout(camerad_client *client, int timeout_ms);

/* A descriptor to poll for readability; it stays the same for the client's life. */
CAMERAD_API int camerad_client_get_fd(const camerad_client *client);

/*
 * Reads what has arrived, sends what is waiting, and runs the callbacks of
 * what is queued. Never blocks. Returns CONNECTION_LOST once the connection
 * has ended (its streams and watches have had their `ended` callbacks).
 */
CAMERAD_API int camerad_client_dispatch(camerad_client *client, camerad_error *error);

/* Waits up to `timeout_ms` (-1: for ever) for something to dispatch, then dispatches. */
CAMERAD_API int camerad_client_iterate(camerad_client *client, int timeout_ms, camerad_error *error);

/* ---- Devices ----------------------------------------------------------- */

/* AVCaptureDevice.DiscoverySession: the devices `filter` admits (NULL: all). */
CAMERAD_API int camerad_list_devices(camerad_client *client, const Camerad__V1__DeviceFilter *filter,
                         Camerad__V1__ListDevicesResponse **devices, camerad_error *error);

/* One device, with its formats, controls and capabilities. DEVICE_NOT_FOUND otherwise. */
CAMERAD_API int camerad_get_device(camerad_client *client, const char *unique_id, Camerad__V1__Device **device,
                       camerad_error *error);

/* What the fan-out engine does for a device: variants, frames shared and copied. */
CAMERAD_API int camerad_get_device_statistics(camerad_client *client, const char *unique_id,
                                  Camerad__V1__DeviceStatistics **statistics, camerad_error *error);

/*
 * AVCaptureDevice.lockForConfiguration, across processes; counted. Waits up
 * to `wait_ms` for another holder to let go; DEVICE_LOCKED names the holder
 * ("locked for configuration by pid 4242 (obs)"). `lock_count` may be NULL.
 * The lock also ends with the connection.
 */
CAMERAD_API int camerad_lock_for_configuration(camerad_client *client, const char *unique_id, uint32_t wait_ms,
                                   uint32_t *lock_count, camerad_error *error);
/* Undoes one lock; NOT_LOCKED when this connection holds none. */
CAMERAD_API int camerad_unlock_for_configuration(camerad_client *client, const char *unique_id, uint32_t *lock_count,
                                     camerad_error *error);

/* Changes a device under the lock (NOT_LOCKED otherwise); `device` (may be NULL) is it after. */
CAMERAD_API int camerad_configure_device(camerad_client *client, const char *unique_id,
                             const Camerad__V1__DeviceConfiguration *configuration, bool persist,
                             Camerad__V1__Device **device, camerad_error *error);

/* A still photo; `settings` NULL: a JPEG at the frame's size. */
CAMERAD_API int camerad_capture_photo(camerad_client *client, const char *unique_id, const Camerad__V1__PhotoSettings *settings,
                          Camerad__V1__CapturePhotoResponse **photo, camerad_error *error);

/* ---- Movie recording (AVCaptureMovieFileOutput, in camerad) --------------- */

typedef struct camerad_recording camerad_recording;

/*
 * Records `start`'s camera (and its `audio_unique_id` microphone) into `fd`,
 * a regular file the caller opened for writing: camerad gets its own copy
 * (close yours when you like), and never opens a path. `start->fd_index` is
 * set here. A refusal (a pipe, a read-only file, settings the encoder cannot
 * do) comes as the recording's end: see camerad_recording_get_finished().
 * Destroy the recording before its client.
 */
CAMERAD_API camerad_recording *camerad_recording_start(camerad_client *client, const Camerad__V1__StartRecording *start,
                                                       int fd, camerad_error *error);
/*
 * Hands the recording over to `fd` (another file opened for writing): at a
 * keyframe asked for at once the file under way is finished and `fd` takes
 * over, no frame lost between. camerad_recording_get_handed_over() counts
 * the hand-overs done; the figures are then the new file's.
 */
CAMERAD_API int camerad_recording_next_file(camerad_recording *recording, int fd, camerad_error *error);
/* The hand-overs done so far, and the last one's FileHandedOver (the finished file's figures), or NULL. */
CAMERAD_API const Camerad__V1__FileHandedOver *camerad_recording_get_handed_over(const camerad_recording *recording,
                                                                                 unsigned *count);
/* Ends the recording; its RecordingFinished follows once the file is finished. */
CAMERAD_API int camerad_recording_stop(camerad_recording *recording, camerad_error *error);
/*
 * Reads from camerad until the recording has started (or ended), or with
 * `until_finished` until it has ended; TIMED_OUT past the client's timeout.
 */
CAMERAD_API int camerad_recording_wait(camerad_recording *recording, bool until_finished, camerad_error *error);
/* What camerad said: RecordingStarted (NULL before), the latest figures (NULL before any). */
CAMERAD_API const Camerad__V1__RecordingStarted *camerad_recording_get_started(const camerad_recording *recording);
CAMERAD_API const Camerad__V1__RecordingFigures *camerad_recording_get_figures(const camerad_recording *recording);
/*
 * Once it ended: its RecordingFinished (ending, successfully_finished,
 * figures, message), or NULL when it never started — `status` (may be NULL)
 * then says why. NULL, with `status` OK, while it runs.
 */
CAMERAD_API const Camerad__V1__RecordingFinished *camerad_recording_get_finished(const camerad_recording *recording,
                                                                                 camerad_error *status);
CAMERAD_API void camerad_recording_destroy(camerad_recording *recording);

/*
 * Any unary method by name ("AddVirtualCamera"): sends `request`, decodes the
 * answer as `response_type` (INTERNAL when it does not decode). The functions
 * above are this.
 */
CAMERAD_API int camerad_client_call(camerad_client *client, const char *method, const ProtobufCMessage *request,
                        const ProtobufCMessageDescriptor *response_type, ProtobufCMessage **response,
                        camerad_error *error);

/* ---- Device events ----------------------------------------------------- */

typedef struct camerad_watch camerad_watch;

#define CAMERAD_VERSION_WATCH_EVENTS 0
struct camerad_watch_events {
    uint32_t version; /* CAMERAD_VERSION_WATCH_EVENTS */
    /* SUBSCRIBED, CONNECTED, DISCONNECTED, CHANGED, LOCKED, UNLOCKED; `event` is valid during the call. */
    void (*event)(void *data, const Camerad__V1__DeviceEvent *event);
    /* The watch ended: cancelled (CANCELLED), or the connection ended. */
    void (*ended)(void *data, const camerad_error *status);
};

/*
 * Devices connecting, disconnecting, changing, locked and unlocked, until
 * camerad_watch_destroy(). With `include_existing`, the devices there are
 * come first as CONNECTED; SUBSCRIBED says the watch is live.
 */
CAMERAD_API camerad_watch *camerad_watch_devices(camerad_client *client, bool include_existing,
                                     const struct camerad_watch_events *events, void *data, camerad_error *error);
CAMERAD_API void camerad_watch_destroy(camerad_watch *watch);

/* ---- Streams (a camera's frames, a microphone's periods) ----------------- */

typedef struct camerad_stream camerad_stream;

#define CAMERAD_MAX_PLANES 4

typedef struct camerad_plane {
    /* From the start of the frame. */
    size_t offset;
    uint32_t bytes_per_row;
    uint32_t height;
} camerad_plane;

/* What a stream's frames are, from StreamStarted or FormatChanged. */
typedef struct camerad_stream_format {
    /* V4L2 fourcc: NV12, YU12 (I420), YUYV, AR24 (BGRA), MJPG. */
    uint32_t fourcc;
    uint32_t width, height;
    bool compressed;
    /* False for inline delivery. */
    bool shared;
    uint32_t n_planes;
    camerad_plane planes[CAMERAD_MAX_PLANES];
    /* How often the device makes a frame, in seconds (0/0 when not told). */
    uint32_t frame_duration_numerator, frame_duration_denominator;
    /* The device as it runs; NULL when a format change did not say. */
    const Camerad__V1__Device *device;
    /* Set when the stream is not exactly what was asked, saying how; else "". */
    const char *note;
    /* YUV values span 0-255 (CAMERAD__V1__OUTPUT_PIXEL_FORMAT__OUTPUT_PIXEL_FORMAT_NV12_FULL_RANGE,
     * CoreVideo's '420f'); false: video range, Y 16-235 and Cb/Cr 16-240. */
    bool full_range;
    /* A microphone's stream (camerad_audio_stream_new): each frame is a period of
     * `period_frames` frames of `channels` interleaved little-endian samples;
     * `sample_rate` 0 for video. */
    uint32_t sample_rate, channels, period_frames, bytes_per_frame;
    Camerad__V1__SampleFormat sample_format;
} camerad_stream_format;

/* AVCaptureVideoDataOutput's drop reasons (Camerad__V1__DropReason). */
typedef enum camerad_drop_reason {
    CAMERAD_DROP_UNSPECIFIED = 0,
    CAMERAD_DROP_FRAME_WAS_LATE = 1,
    CAMERAD_DROP_OUT_OF_BUFFERS = 2,
    CAMERAD_DROP_DISCONTINUITY = 3,
} camerad_drop_reason;
#define CAMERAD_DROP_REASON_COUNT 4

/* One frame: a read-only view into shared memory, the client's until released. */
typedef struct camerad_frame {
    uint64_t sequence;
    /* CLOCK_MONOTONIC nanoseconds at capture. */
    int64_t presentation_time_ns;
    int64_t duration_ns;
    const uint8_t *data;
    /* Bytes of the frame (for MJPEG, the JPEG's size). */
    size_t size;
    uint32_t fourcc, width, height;
    uint32_t n_planes;
    camerad_plane planes[CAMERAD_MAX_PLANES];
    /* Frames reported dropped, by reason, between the stream's previous frame and this one. */
    uint32_t dropped_before[CAMERAD_DROP_REASON_COUNT];
    /* As the stream's format says (camerad_stream_format.full_range). */
    bool full_range;
    /* Audio: the period's frames (a sample per channel each); its first is
     * sequence x period_frames on the microphone's clock, so a gap in the
     * sequence numbers is exactly the samples lost. 0 for video. */
    uint32_t n_samples;
} camerad_frame;

/* camerad's interruption reasons (Camerad__V1__InterruptionReason). */
typedef enum camerad_interruption_reason {
    CAMERAD_INTERRUPTION_NONE = 0,
    CAMERAD_INTERRUPTION_DEVICE_DISCONNECTED = 1,
    CAMERAD_INTERRUPTION_SHUTTING_DOWN = 2,
    CAMERAD_INTERRUPTION_DEVICE_FAILED = 3,
} camerad_interruption_reason;

#define CAMERAD_VERSION_STREAM_EVENTS 0
struct camerad_stream_events {
    uint32_t version; /* CAMERAD_VERSION_STREAM_EVENTS */
    /* Frames are waiting: dequeue them now or later (camerad sends no more than max_frames_in_flight). */
    void (*process)(void *data, camerad_stream *stream);
    /* Frames this stream did not get, ahead of its next frame. */
    void (*dropped)(void *data, camerad_stream *stream, camerad_drop_reason reason, uint32_t count,
                    uint64_t last_sequence);
    /* Later frames have this format (a new pool, or the device's mode changed). */
    void (*format_changed)(void *data, camerad_stream *stream, const camerad_stream_format *format);
    /*
     * The stream ended: `status` says why (DEVICE_DISCONNECTED, SHUTTING_DOWN,
     * CONNECTION_LOST when camerad went away...), `reason` the interruption
     * camerad reported, if any. Frames already dequeued stay readable until released.
     */
    void (*ended)(void *data, camerad_stream *stream, const camerad_error *status,
                  camerad_interruption_reason reason);
};

/*
 * Opens a stream of `unique_id` with AVCaptureVideoDataOutput's settings
 * (`settings` NULL: the device's own format) and blocks until camerad has
 * started it (its format is then camerad_stream_get_format()) or refused it.
 * `events` may be NULL: pull frames with camerad_stream_dequeue_frame() after
 * each dispatch. `events` and `data` must outlive the stream.
 */
CAMERAD_API camerad_stream *camerad_stream_new(camerad_client *client, const char *unique_id,
                                   const Camerad__V1__OutputSettings *settings, Camerad__V1__SessionPreset preset,
                                   const struct camerad_stream_events *events, void *data, camerad_error *error);

/*
 * Opens a microphone's stream (AVCaptureAudioDataOutput): periods of `format`
 * (NULL, or a field 0 / UNSPECIFIED: the microphone's own; the period 10 ms of
 * the rate), at most `max_periods_in_flight` held at once (0: 8; 1 to 16).
 * camerad converts, once for every client asking the same format; what the
 * microphone does not offer (its Device.audio) is INVALID_ARGUMENT saying what
 * it does. The frames, drops and end are a camerad_stream's, with the format's
 * audio fields and each frame's n_samples set.
 */
CAMERAD_API camerad_stream *camerad_audio_stream_new(camerad_client *client, const char *unique_id,
                                         const Camerad__V1__AudioFormat *format, uint32_t max_periods_in_flight,
                                         const struct camerad_stream_events *events, void *data, camerad_error *error);

/* Stops the stream. Every frame of it, dequeued or not, is released and unmapped. */
CAMERAD_API void camerad_stream_destroy(camerad_stream *stream);

CAMERAD_API const camerad_stream_format *camerad_stream_get_format(const camerad_stream *stream);

/* The next frame, oldest first, or NULL when none is waiting. */
CAMERAD_API camerad_frame *camerad_stream_dequeue_frame(camerad_stream *stream);

/* Gives a dequeued frame back to camerad, exactly once; `frame` is invalid after. */
CAMERAD_API int camerad_stream_release_frame(camerad_stream *stream, camerad_frame *frame, camerad_error *error);

/* True once the stream's end has been dispatched (after its `ended` callback, if any); frames
   that came before the end are dequeued first. */
CAMERAD_API bool camerad_stream_has_ended(const camerad_stream *stream);
/* How it ended (code OK while it runs). */
CAMERAD_API const camerad_error *camerad_stream_get_status(const camerad_stream *stream);

typedef struct camerad_stream_stats {
    /* Frames handed to camerad_stream_dequeue_frame(). */
    uint64_t frames;
    /* Frames reported dropped, by reason. */
    uint64_t dropped[CAMERAD_DROP_REASON_COUNT];
    /* Frames given back through the stream's release ring (no message), and by a
     * ReleaseFrames message (the ring full, or inline delivery, which has none). */
    uint64_t released_through_ring, released_by_message;
    /* Frames read from the stream's frame ring (camerad sent no message for them),
     * of `frames` and those still queued. */
    uint64_t announced_through_ring;
} camerad_stream_stats;
CAMERAD_API void camerad_stream_get_stats(const camerad_stream *stream, camerad_stream_stats *stats);

/* "NV12", "YUYV": a fourcc as text (out must hold 5 bytes). */
CAMERAD_API const char *camerad_fourcc_string(uint32_t fourcc, char out[5]);

#ifdef __cplusplus
}
#endif
#endif
