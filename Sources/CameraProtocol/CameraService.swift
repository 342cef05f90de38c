/// The methods of `service Camera` in Protos/camerad/v1/camera.proto.
///
/// The RPC layer has no code generator for services, so this table is written
/// by hand; a test checks it against the .proto file.
public enum CameraService {
    public static let name = "camerad.v1.Camera"

    /// The protocol version of the committed .proto files.
    public static let protocolVersion = UInt32(Camerad_V1_ProtocolVersion.current.rawValue)

    public static let hello = Method<Camerad_V1_HelloRequest, Camerad_V1_HelloResponse>(
        service: name, method: "Hello", kind: .unary)
    public static let listDevices = Method<Camerad_V1_ListDevicesRequest, Camerad_V1_ListDevicesResponse>(
        service: name, method: "ListDevices", kind: .unary)
    public static let getDevice = Method<Camerad_V1_GetDeviceRequest, Camerad_V1_GetDeviceResponse>(
        service: name, method: "GetDevice", kind: .unary)
    public static let watchDevices = Method<Camerad_V1_WatchDevicesRequest, Camerad_V1_DeviceEvent>(
        service: name, method: "WatchDevices", kind: .serverStreaming)
    public static let addVirtualCamera = Method<Camerad_V1_AddVirtualCameraRequest, Camerad_V1_AddVirtualCameraResponse>(
        service: name, method: "AddVirtualCamera", kind: .unary)
    public static let removeVirtualCamera = Method<
        Camerad_V1_RemoveVirtualCameraRequest, Camerad_V1_RemoveVirtualCameraResponse
    >(service: name, method: "RemoveVirtualCamera", kind: .unary)
    public static let ping = Method<Camerad_V1_PingRequest, Camerad_V1_PingResponse>(
        service: name, method: "Ping", kind: .bidirectionalStreaming)

    public static let stream = Method<Camerad_V1_StreamRequest, Camerad_V1_StreamResponse>(
        service: name, method: "Stream", kind: .bidirectionalStreaming)
    public static let getDeviceStatistics = Method<Camerad_V1_GetDeviceStatisticsRequest, Camerad_V1_DeviceStatistics>(
        service: name, method: "GetDeviceStatistics", kind: .unary)
    public static let lockForConfiguration = Method<
        Camerad_V1_LockForConfigurationRequest, Camerad_V1_LockForConfigurationResponse
    >(service: name, method: "LockForConfiguration", kind: .unary)
    public static let unlockForConfiguration = Method<
        Camerad_V1_UnlockForConfigurationRequest, Camerad_V1_UnlockForConfigurationResponse
    >(service: name, method: "UnlockForConfiguration", kind: .unary)
    public static let configureDevice = Method<Camerad_V1_ConfigureDeviceRequest, Camerad_V1_ConfigureDeviceResponse>(
        service: name, method: "ConfigureDevice", kind: .unary)
    public static let capturePhoto = Method<Camerad_V1_CapturePhotoRequest, Camerad_V1_CapturePhotoResponse>(
        service: name, method: "CapturePhoto", kind: .unary)
    public static let watchAudioLevels = Method<Camerad_V1_WatchAudioLevelsRequest, Camerad_V1_AudioLevels>(
        service: name, method: "WatchAudioLevels", kind: .serverStreaming)
    public static let record = Method<Camerad_V1_RecordRequest, Camerad_V1_RecordResponse>(
        service: name, method: "Record", kind: .bidirectionalStreaming)

    /// Every method's name and shape, for checks against the .proto file.
    public static let all: [(name: String, kind: MethodKind)] = [
        (hello.name, hello.kind),
        (listDevices.name, listDevices.kind),
        (getDevice.name, getDevice.kind),
        (watchDevices.name, watchDevices.kind),
        (addVirtualCamera.name, addVirtualCamera.kind),
        (removeVirtualCamera.name, removeVirtualCamera.kind),
        (ping.name, ping.kind),
        (stream.name, stream.kind),
        (getDeviceStatistics.name, getDeviceStatistics.kind),
        (lockForConfiguration.name, lockForConfiguration.kind),
        (unlockForConfiguration.name, unlockForConfiguration.kind),
        (configureDevice.name, configureDevice.kind),
        (capturePhoto.name, capturePhoto.kind),
        (watchAudioLevels.name, watchAudioLevels.kind),
        (record.name, record.kind),
    ]
}
