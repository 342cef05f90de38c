import CameraProtocol

extension CaptureDevice {
    /// AVCaptureDevice.Position.
    public enum Position: Int, CaseIterable, Sendable, CustomStringConvertible {
        case unspecified = 0
        case back = 1
        case front = 2

        public var description: String {
            switch self {
            case .unspecified: "unspecified"
            case .back: "back"
            case .front: "front"
            }
        }

        init(_ position: Camerad_V1_Position) {
            self = switch position {
            case .back: .back
            case .front: .front
            default: .unspecified
            }
        }

        var proto: Camerad_V1_Position {
            switch self {
            case .unspecified: .unspecified
            case .back: .back
            case .front: .front
            }
        }
    }

    /// AVCaptureDevice.DeviceType, for the cameras Linux has.
    ///
    /// camerad's virtual cameras are `.builtInWideAngleCamera` (they stand in for a
    /// phone's cameras); USB cameras are `.external`, as on macOS.
    public enum DeviceType: String, CaseIterable, Sendable, CustomStringConvertible {
        case builtInWideAngleCamera
        case external

        public var description: String { rawValue }

        init?(_ type: Camerad_V1_DeviceType) {
            switch type {
            case .builtInWideAngleCamera: self = .builtInWideAngleCamera
            case .external: self = .external
            default: return nil
            }
        }

        var proto: Camerad_V1_DeviceType {
            switch self {
            case .builtInWideAngleCamera: .builtInWideAngleCamera
            case .external: .external
            }
        }
    }

    /// AVCaptureDevice.FocusMode.
    public enum FocusMode: Int, CaseIterable, Sendable {
        case locked = 0
        case autoFocus = 1
        case continuousAutoFocus = 2

        init?(_ mode: Camerad_V1_FocusMode) {
            switch mode {
            case .locked: self = .locked
            case .autoFocus: self = .autoFocus
            case .continuousAutoFocus: self = .continuousAutoFocus
            default: return nil
            }
        }
    }

    /// AVCaptureDevice.ExposureMode.
    public enum ExposureMode: Int, CaseIterable, Sendable {
        case locked = 0
        case autoExpose = 1
        case continuousAutoExposure = 2
        case custom = 3

        init?(_ mode: Camerad_V1_ExposureMode) {
            switch mode {
            case .locked: self = .locked
            case .autoExpose: self = .autoExpose
            case .continuousAutoExposure: self = .continuousAutoExposure
            case .custom: self = .custom
            default: return nil
            }
        }
    }

    /// AVCaptureDevice.WhiteBalanceMode.
    public enum WhiteBalanceMode: Int, CaseIterable, Sendable {
        case locked = 0
        case autoWhiteBalance = 1
        case continuousAutoWhiteBalance = 2

        init?(_ mode: Camerad_V1_WhiteBalanceMode) {
            switch mode {
            case .locked: self = .locked
            case .autoWhiteBalance: self = .autoWhiteBalance
            case .continuousAutoWhiteBalance: self = .continuousAutoWhiteBalance
            default: return nil
            }
        }
    }

    /// AVCaptureDevice.TorchMode.
    public enum TorchMode: Int, CaseIterable, Sendable {
        case off = 0
        case on = 1
        case auto = 2

        init?(_ mode: Camerad_V1_TorchMode) {
            switch mode {
            case .off: self = .off
            case .on: self = .on
            case .auto: self = .auto
            default: return nil
            }
        }
    }

    /// AVCaptureDevice.FlashMode.
    public enum FlashMode: Int, CaseIterable, Sendable {
        case off = 0
        case on = 1
        case auto = 2

        init?(_ mode: Camerad_V1_FlashMode) {
            switch mode {
            case .off: self = .off
            case .on: self = .on
            case .auto: self = .auto
            default: return nil
            }
        }
    }
}
