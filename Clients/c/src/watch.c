/* Device events: the WatchDevices call, its events queued until dispatched. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

static void queue(camerad_watch *watch, Camerad__V1__DeviceEvent *event, const camerad_error *status) {
    watch_event *item = calloc(1, sizeof *item);
    if (!item) {
        camerad_message_free(event);
        return;
    }
    item->event = event;
    if (status) item->status = *status;
    if (watch->tail) {
        watch->tail->next = item;
    } else {
        watch->head = item;
    }
    watch->tail = item;
}

static void finish(camerad_watch *watch, const camerad_error *status) {
    if (watch->ended) return;
    watch->ended = true;
    if (watch->call) watch->call->ended = true;
    queue(watch, NULL, status);
}

void camerad_watch_connection_ended(camerad_watch *watch, const camerad_error *status) { finish(watch, status); }

void camerad_watch_receive(camerad_watch *watch, const Camerad__V1__Envelope *envelope) {
    if (envelope->kind_case == CAMERAD__V1__ENVELOPE__KIND_END) {
        camerad_error status;
        camerad_error_from_status(&status, envelope->end->status);
        finish(watch, &status);
    } else if (envelope->kind_case == CAMERAD__V1__ENVELOPE__KIND_MESSAGE) {
        const ProtobufCBinaryData *payload = &envelope->message->payload;
        Camerad__V1__DeviceEvent *event = camerad__v1__device_event__unpack(NULL, payload->len, payload->data);
        if (event) {
            queue(watch, event, NULL);
            return;
        }
        camerad_error status = {.code = CAMERAD_ERROR_INTERNAL};
        snprintf(status.message, sizeof status.message, "camerad sent the watch a message that is not a DeviceEvent");
        if (watch->call) camerad_send_cancel(watch->client, watch->call);
        finish(watch, &status);
    }
}

bool camerad_watch_dispatch_one(camerad_watch *watch) {
    watch_event *item = watch->head;
    if (!item) return false;
    watch->head = item->next;
    if (!watch->head) watch->tail = NULL;
    if (item->event && watch->events && watch->events->event) {
        watch->events->event(watch->data, item->event);
    } else if (!item->event && watch->events && watch->events->ended) {
        watch->events->ended(watch->data, &item->status);
    }
    camerad_message_free(item->event);
    free(item);
    return true;
}

camerad_watch *camerad_watch_devices(camerad_client *client, bool include_existing,
                                     const struct camerad_watch_events *events, void *data, camerad_error *error) {
    camerad_watch *watch = calloc(1, sizeof *watch);
    if (watch) watch->call = camerad_call_open(client, CALL_WATCH, "WatchDevices", watch);
    if (!watch || !watch->call) {
        free(watch);
        camerad_set_error(error, CAMERAD_ERROR_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    watch->client = client;
    watch->events = events;
    watch->data = data;
    Camerad__V1__WatchDevicesRequest request = CAMERAD__V1__WATCH_DEVICES_REQUEST__INIT;
    request.include_existing = include_existing;
    if (!watch->call->ended) camerad_send_start(client, watch->call, &request.base);
    watch->next = client->watches;
    client->watches = watch;
    return watch;
}

void camerad_watch_free(camerad_watch *watch) {
    if (watch->call) {
        if (!watch->call->ended) camerad_send_cancel(watch->client, watch->call);
        camerad_call_close(watch->client, watch->call);
    }
    while (watch->head) {
        watch_event *item = watch->head;
        watch->head = item->next;
        camerad_message_free(item->event);
        free(item);
    }
    free(watch);
}

void camerad_watch_destroy(camerad_watch *watch) {
    if (!watch) return;
    camerad_client *client = watch->client;
    if (client->dispatching) {
        watch->destroyed = true;
        return;
    }
    for (camerad_watch **link = &client->watches; *link; link = &(*link)->next) {
        if (*link == watch) {
            *link = watch->next;
            break;
        }
    }
    camerad_watch_free(watch);
}
