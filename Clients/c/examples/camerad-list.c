/*
 * camerad-list: the cameras camerad serves.
 *
 *   camerad-list [--json] [--socket PATH]
 *
 * --json prints what `camctl list --json` prints, byte for byte.
 */
#include <camerad/client.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

static const char *position_name(Camerad__V1__Position position) {
    switch (position) {
    case CAMERAD__V1__POSITION__POSITION_BACK: return "back";
    case CAMERAD__V1__POSITION__POSITION_FRONT: return "front";
    default: return "unspecified";
    }
}

static const char *device_type_name(Camerad__V1__DeviceType type) {
    switch (type) {
    case CAMERAD__V1__DEVICE_TYPE__DEVICE_TYPE_BUILT_IN_WIDE_ANGLE_CAMERA: return "builtInWideAngleCamera";
    case CAMERAD__V1__DEVICE_TYPE__DEVICE_TYPE_EXTERNAL: return "external";
    case CAMERAD__V1__DEVICE_TYPE__DEVICE_TYPE_MICROPHONE: return "microphone";
    default: return "unknown";
    }
}

/* As camctl: pretty, keys sorted, `"key" : value`. */
static void print_json(const Camerad__V1__ListDevicesResponse *list) {
    if (list->n_devices == 0) {
        printf("[\n\n]\n");
        return;
    }
    printf("[\n");
    for (size_t i = 0; i < list->n_devices; i++) {
        const Camerad__V1__Device *device = list->devices[i];
        printf("  {\n    \"deviceType\" : ");
        json_string(stdout, device_type_name(device->device_type));
        printf(",\n    \"isConnected\" : %s,\n    \"localizedName\" : ", device->is_connected ? "true" : "false");
        json_string(stdout, device->localized_name);
        printf(",\n    \"mediaType\" : ");
        json_string(stdout, device->media_type == CAMERAD__V1__MEDIA_TYPE__MEDIA_TYPE_AUDIO ? "audio" : "video");
        printf(",\n    \"modelID\" : ");
        json_string(stdout, device->model_id);
        printf(",\n    \"position\" : ");
        json_string(stdout, position_name(device->position));
        printf(",\n    \"uniqueID\" : ");
        json_string(stdout, device->unique_id);
        printf("\n  }%s\n", i + 1 < list->n_devices ? "," : "");
    }
    printf("]\n");
}

int main(int argc, char **argv) {
    const char *socket_path = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            socket_path = argv[++i];
        } else {
            fprintf(stderr, "usage: camerad-list [--json] [--socket PATH]\n");
            return 2;
        }
    }
    camerad_error error;
    camerad_client *client = camerad_client_connect(socket_path, "camerad-list", &error);
    if (!client) {
        fprintf(stderr, "camerad-list: %s (%s)\n", error.message, camerad_error_name(error.code));
        return 1;
    }
    Camerad__V1__ListDevicesResponse *list = NULL;
    if (camerad_list_devices(client, NULL, &list, &error)) {
        fprintf(stderr, "camerad-list: %s (%s)\n", error.message, camerad_error_name(error.code));
        camerad_client_destroy(client);
        return 1;
    }
    if (json) {
        print_json(list);
    } else if (list->n_devices == 0) {
        printf("no cameras\n");
    } else {
        for (size_t i = 0; i < list->n_devices; i++) {
            const Camerad__V1__Device *device = list->devices[i];
            printf("%-24s %s (%s, %s)\n", device->unique_id, device->localized_name, position_name(device->position),
                   device_type_name(device->device_type));
        }
    }
    camerad_message_free(list);
    camerad_client_destroy(client);
    return 0;
}
