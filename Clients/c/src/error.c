/* Error codes: the protocol's ErrorReason, with CaptureKit's names. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static const struct {
    camerad_error_code code;
    const char *name;
} names[] = {
    {CAMERAD_OK, "ok"},
    {CAMERAD_ERROR_CANCELLED, "cancelled"},
    {CAMERAD_ERROR_INVALID_ARGUMENT, "invalidArgument"},
    {CAMERAD_ERROR_UNIMPLEMENTED, "unimplemented"},
    {CAMERAD_ERROR_HELLO_REQUIRED, "helloRequired"},
    {CAMERAD_ERROR_VERSION_MISMATCH, "versionMismatch"},
    {CAMERAD_ERROR_PERMISSION_DENIED, "permissionDenied"},
    {CAMERAD_ERROR_RESOURCE_EXHAUSTED, "resourceExhausted"},
    {CAMERAD_ERROR_SHUTTING_DOWN, "shuttingDown"},
    {CAMERAD_ERROR_INTERNAL, "internalError"},
    {CAMERAD_ERROR_DAEMON_UNAVAILABLE, "daemonUnavailable"},
    {CAMERAD_ERROR_CONNECTION_LOST, "connectionLost"},
    {CAMERAD_ERROR_ALREADY_EXISTS, "alreadyExists"},
    {CAMERAD_ERROR_TIMED_OUT, "timedOut"},
    {CAMERAD_ERROR_DEVICE_NOT_FOUND, "deviceNotFound"},
    {CAMERAD_ERROR_DEVICE_DISCONNECTED, "deviceDisconnected"},
    {CAMERAD_ERROR_DEVICE_BUSY, "deviceBusy"},
    {CAMERAD_ERROR_DEVICE_LOCKED, "deviceLocked"},
    {CAMERAD_ERROR_NOT_LOCKED, "notLocked"},
    {CAMERAD_ERROR_UNSUPPORTED_FORMAT, "unsupportedFormat"},
    {CAMERAD_ERROR_INVALID_STATE, "invalidState"},
    {CAMERAD_ERROR_UNSUPPORTED, "unsupported"},
};

const char *camerad_error_name(camerad_error_code code) {
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].code == code) return names[i].name;
    }
    return "unknown";
}

int camerad_set_error(camerad_error *error, camerad_error_code code, const char *format, ...) {
    if (error) {
        error->code = code;
        error->status = 0;
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(error->message, sizeof error->message, format, arguments);
        va_end(arguments);
    }
    return code;
}

void camerad_error_from_status(camerad_error *error, const Camerad__V1__Status *status) {
    if (!error) return;
    memset(error, 0, sizeof *error);
    if (!status || status->code == CAMERAD__V1__STATUS_CODE__STATUS_CODE_OK) return;
    error->status = status->code;
    error->code = CAMERAD_ERROR_UNKNOWN;
    for (size_t i = 1; i < sizeof names / sizeof names[0]; i++) {
        if ((int)names[i].code == (int)status->reason) error->code = names[i].code;
    }
    snprintf(error->message, sizeof error->message, "%s", status->message ? status->message : "");
}

void camerad_error_copy(camerad_error *to, const camerad_error *from) {
    if (to && from) *to = *from;
}

void camerad_message_free(void *message) {
    if (message) protobuf_c_message_free_unpacked(message, NULL);
}

const char *camerad_fourcc_string(uint32_t fourcc, char out[5]) {
    for (int i = 0; i < 4; i++) {
        char c = (char)((fourcc >> (8 * i)) & 0xff);
        out[i] = (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    out[4] = 0;
    return out;
}
