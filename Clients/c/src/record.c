/* Movie recording: the Record call, its file's descriptor sent with StartRecording. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

struct camerad_recording {
    camerad_client *client;
    camerad_call *call;
    Camerad__V1__RecordingStarted *started;
    Camerad__V1__RecordingFigures *figures;
    Camerad__V1__RecordingFinished *finished;
    Camerad__V1__FileHandedOver *handed_over;
    unsigned hand_overs;
    bool ended;
    camerad_error status;
};

void camerad_recording_receive(camerad_recording *recording, const Camerad__V1__Envelope *envelope) {
    if (envelope->kind_case == CAMERAD__V1__ENVELOPE__KIND_END) {
        camerad_error status;
        camerad_error_from_status(&status, envelope->end->status);
        camerad_recording_ended(recording, &status);
        return;
    }
    if (envelope->kind_case != CAMERAD__V1__ENVELOPE__KIND_MESSAGE) return;
    const ProtobufCBinaryData *payload = &envelope->message->payload;
    Camerad__V1__RecordResponse *response = camerad__v1__record_response__unpack(NULL, payload->len, payload->data);
    if (!response) return;
    switch (response->kind_case) {
    case CAMERAD__V1__RECORD_RESPONSE__KIND_STARTED:
        camerad_message_free(recording->started);
        recording->started = response->started;
        response->started = NULL;
        break;
    case CAMERAD__V1__RECORD_RESPONSE__KIND_PROGRESS:
        camerad_message_free(recording->figures);
        recording->figures = response->progress;
        response->progress = NULL;
        break;
    case CAMERAD__V1__RECORD_RESPONSE__KIND_HANDED_OVER:
        camerad_message_free(recording->handed_over);
        recording->handed_over = response->handed_over;
        response->handed_over = NULL;
        recording->hand_overs++;
        /* The figures are the new file's from now on. */
        camerad_message_free(recording->figures);
        recording->figures = NULL;
        break;
    case CAMERAD__V1__RECORD_RESPONSE__KIND_FINISHED:
        camerad_message_free(recording->finished);
        recording->finished = response->finished;
        response->finished = NULL;
        break;
    default:
        break;
    }
    camerad_message_free(response);
}

void camerad_recording_ended(camerad_recording *recording, const camerad_error *status) {
    if (recording->ended) return;
    recording->ended = true;
    recording->status = *status;
}

camerad_recording *camerad_recording_start(camerad_client *client, const Camerad__V1__StartRecording *start, int fd,
                                           camerad_error *error) {
    camerad_recording *recording = calloc(1, sizeof *recording);
    if (recording) recording->call = camerad_call_open(client, CALL_RECORD, "Record", recording);
    if (!recording || !recording->call) {
        free(recording);
        camerad_set_error(error, CAMERAD_ERROR_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    recording->client = client;
    Camerad__V1__StartRecording first = *start;
    first.fd_index = 0;
    Camerad__V1__RecordRequest request = CAMERAD__V1__RECORD_REQUEST__INIT;
    request.kind_case = CAMERAD__V1__RECORD_REQUEST__KIND_START;
    request.start = &first;
    int result = recording->call->ended ? (int)recording->call->status.code : camerad_send_start(client, recording->call, NULL);
    if (!result) result = camerad_send_message_with_fd(client, recording->call, &request.base, fd);
    if (result) {
        camerad_set_error(error, result, "starting the recording failed: the connection to camerad broke or timed out");
        camerad_recording_destroy(recording);
        return NULL;
    }
    return recording;
}

int camerad_recording_stop(camerad_recording *recording, camerad_error *error) {
    if (recording->ended) return CAMERAD_OK;
    Camerad__V1__StopRecording stop = CAMERAD__V1__STOP_RECORDING__INIT;
    Camerad__V1__RecordRequest request = CAMERAD__V1__RECORD_REQUEST__INIT;
    request.kind_case = CAMERAD__V1__RECORD_REQUEST__KIND_STOP;
    request.stop = &stop;
    int result = camerad_send_message(recording->client, recording->call, &request.base);
    if (result) return camerad_set_error(error, result, "stopping the recording failed: the connection to camerad broke");
    return CAMERAD_OK;
}

int camerad_recording_next_file(camerad_recording *recording, int fd, camerad_error *error) {
    if (recording->ended) {
        return camerad_set_error(error, CAMERAD_ERROR_INVALID_STATE, "the recording has ended; start another");
    }
    Camerad__V1__NextFile next = CAMERAD__V1__NEXT_FILE__INIT;
    Camerad__V1__RecordRequest request = CAMERAD__V1__RECORD_REQUEST__INIT;
    request.kind_case = CAMERAD__V1__RECORD_REQUEST__KIND_NEXT_FILE;
    request.next_file = &next;
    int result = camerad_send_message_with_fd(recording->client, recording->call, &request.base, fd);
    if (result) return camerad_set_error(error, result, "handing the recording over failed: the connection to camerad broke");
    return CAMERAD_OK;
}

const Camerad__V1__FileHandedOver *camerad_recording_get_handed_over(const camerad_recording *recording,
                                                                     unsigned *count) {
    if (count) *count = recording->hand_overs;
    return recording->handed_over;
}

static bool has_started(void *argument) {
    const camerad_recording *recording = argument;
    return recording->ended || recording->started;
}

static bool has_ended(void *argument) { return ((const camerad_recording *)argument)->ended; }

int camerad_recording_wait(camerad_recording *recording, bool until_finished, camerad_error *error) {
    return camerad_wait(recording->client, until_finished ? has_ended : has_started, recording, error);
}

const Camerad__V1__RecordingStarted *camerad_recording_get_started(const camerad_recording *recording) {
    return recording->started;
}

const Camerad__V1__RecordingFigures *camerad_recording_get_figures(const camerad_recording *recording) {
    /* The finished file's figures are the last ones. */
    if (recording->finished && recording->finished->figures) return recording->finished->figures;
    return recording->figures;
}

const Camerad__V1__RecordingFinished *camerad_recording_get_finished(const camerad_recording *recording,
                                                                     camerad_error *status) {
    if (status) {
        if (recording->ended) {
            camerad_error_copy(status, &recording->status);
        } else {
            camerad_set_error(status, CAMERAD_OK, "recording");
        }
    }
    return recording->ended ? recording->finished : NULL;
}

void camerad_recording_destroy(camerad_recording *recording) {
    if (!recording) return;
    if (recording->call) {
        if (!recording->call->ended) camerad_send_cancel(recording->client, recording->call);
        camerad_call_close(recording->client, recording->call);
    }
    camerad_message_free(recording->started);
    camerad_message_free(recording->figures);
    camerad_message_free(recording->finished);
    camerad_message_free(recording->handed_over);
    free(recording);
}
