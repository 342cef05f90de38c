/*
 * camerad-snapshot: one photo, as a JPEG with EXIF.
 *
 *   camerad-snapshot DEVICE FILE [--size WxH] [--quality Q] [--socket PATH]
 */
#include <camerad/client.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *device = NULL, *path = NULL, *socket_path = NULL;
    Camerad__V1__PhotoSettings settings = CAMERAD__V1__PHOTO_SETTINGS__INIT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%ux%u", &settings.max_width, &settings.max_height) != 2) goto usage;
        } else if (strcmp(argv[i], "--quality") == 0 && i + 1 < argc) {
            settings.quality = (uint32_t)atoi(argv[++i]);
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            socket_path = argv[++i];
        } else if (!device) {
            device = argv[i];
        } else if (!path) {
            path = argv[i];
        } else {
            goto usage;
        }
    }
    if (!device || !path) goto usage;

    camerad_error error;
    camerad_client *client = camerad_client_connect(socket_path, "camerad-snapshot", &error);
    Camerad__V1__CapturePhotoResponse *photo = NULL;
    if (!client || camerad_capture_photo(client, device, &settings, &photo, &error)) {
        fprintf(stderr, "camerad-snapshot: %s (%s)\n", error.message, camerad_error_name(error.code));
        camerad_client_destroy(client);
        return 1;
    }
    FILE *file = fopen(path, "wb");
    int status = 0;
    if (!file || fwrite(photo->data.data, 1, photo->data.len, file) != photo->data.len || fclose(file) != 0) {
        perror(path);
        status = 1;
    } else {
        printf("%s: %ux%u JPEG, %zu bytes, frame %llu%s%s\n", path, photo->width, photo->height, photo->data.len,
               (unsigned long long)photo->sequence, *photo->note ? "; " : "", photo->note);
    }
    camerad_message_free(photo);
    camerad_client_destroy(client);
    return status;

usage:
    fprintf(stderr, "usage: camerad-snapshot DEVICE FILE [--size WxH] [--quality Q] [--socket PATH]\n");
    return 2;
}
