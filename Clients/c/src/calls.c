/* The unary methods, each one camerad_client_call(). */
#include "internal.h"

#define CALL(method, request, type, out, error) \
    camerad_client_call(client, method, &(request).base, &type##__descriptor, (ProtobufCMessage **)(out), error)

int camerad_list_devices(camerad_client *client, const Camerad__V1__DeviceFilter *filter,
                         Camerad__V1__ListDevicesResponse **devices, camerad_error *error) {
    Camerad__V1__ListDevicesRequest request = CAMERAD__V1__LIST_DEVICES_REQUEST__INIT;
    request.filter = (Camerad__V1__DeviceFilter *)filter;
    return CALL("ListDevices", request, camerad__v1__list_devices_response, devices, error);
}

int camerad_get_device(camerad_client *client, const char *unique_id, Camerad__V1__Device **device,
                       camerad_error *error) {
    Camerad__V1__GetDeviceRequest request = CAMERAD__V1__GET_DEVICE_REQUEST__INIT;
    request.unique_id = (char *)unique_id;
    Camerad__V1__GetDeviceResponse *response = NULL;
    int result = CALL("GetDevice", request, camerad__v1__get_device_response, &response, error);
    if (result == CAMERAD_OK && device) {
        *device = response->device;
        response->device = NULL;
    }
    camerad_message_free(response);
    return result;
}

int camerad_get_device_statistics(camerad_client *client, const char *unique_id,
                                  Camerad__V1__DeviceStatistics **statistics, camerad_error *error) {
    Camerad__V1__GetDeviceStatisticsRequest request = CAMERAD__V1__GET_DEVICE_STATISTICS_REQUEST__INIT;
    request.unique_id = (char *)unique_id;
    return CALL("GetDeviceStatistics", request, camerad__v1__device_statistics, statistics, error);
}

int camerad_lock_for_configuration(camerad_client *client, const char *unique_id, uint32_t wait_ms,
                                   uint32_t *lock_count, camerad_error *error) {
    Camerad__V1__LockForConfigurationRequest request = CAMERAD__V1__LOCK_FOR_CONFIGURATION_REQUEST__INIT;
    request.unique_id = (char *)unique_id;
    request.wait_ms = wait_ms;
    Camerad__V1__LockForConfigurationResponse *response = NULL;
    int result = CALL("LockForConfiguration", request, camerad__v1__lock_for_configuration_response, &response, error);
    if (result == CAMERAD_OK && lock_count) *lock_count = response->lock_count;
    camerad_message_free(response);
    return result;
}

int camerad_unlock_for_configuration(camerad_client *client, const char *unique_id, uint32_t *lock_count,
                                     camerad_error *error) {
    Camerad__V1__UnlockForConfigurationRequest request = CAMERAD__V1__UNLOCK_FOR_CONFIGURATION_REQUEST__INIT;
    request.unique_id = (char *)unique_id;
    Camerad__V1__UnlockForConfigurationResponse *response = NULL;
    int result =
        CALL("UnlockForConfiguration", request, camerad__v1__unlock_for_configuration_response, &response, error);
    if (result == CAMERAD_OK && lock_count) *lock_count = response->lock_count;
    camerad_message_free(response);
    return result;
}

int camerad_configure_device(camerad_client *client, const char *unique_id,
                             const Camerad__V1__DeviceConfiguration *configuration, bool persist,
                             Camerad__V1__Device **device, camerad_error *error) {
    Camerad__V1__ConfigureDeviceRequest request = CAMERAD__V1__CONFIGURE_DEVICE_REQUEST__INIT;
    request.unique_id = (char *)unique_id;
    request.configuration = (Camerad__V1__DeviceConfiguration *)configuration;
    request.persist = persist;
    Camerad__V1__ConfigureDeviceResponse *response = NULL;
    int result = CALL("ConfigureDevice", request, camerad__v1__configure_device_response, &response, error);
    if (result == CAMERAD_OK && device) {
        *device = response->device;
        response->device = NULL;
    }
    camerad_message_free(response);
    return result;
}

int camerad_capture_photo(camerad_client *client, const char *unique_id, const Camerad__V1__PhotoSettings *settings,
                          Camerad__V1__CapturePhotoResponse **photo, camerad_error *error) {
    Camerad__V1__CapturePhotoRequest request = CAMERAD__V1__CAPTURE_PHOTO_REQUEST__INIT;
    request.unique_id = (char *)unique_id;
    request.settings = (Camerad__V1__PhotoSettings *)settings;
    return CALL("CapturePhoto", request, camerad__v1__capture_photo_response, photo, error);
}
