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

    /// AVCaptureDevice.DeviceType, for the cameras and microphones Linux has.
    ///
    /// camerad's virtual cameras are `.builtInWideAngleCamera` (they stand in for a
    /// phone's cameras); USB cameras are `.external`, as on macOS; every
    /// microphone is `.microphone`. The other
    /// kinds of an iPhone's cameras are here so that code listing them compiles
    /// unchanged; no Linux device is one of them, so they match nothing.
    public enum DeviceType: String, CaseIterable, Sendable, CustomStringConvertible {
        case builtInWideAngleCamera
        case external
        /// A microphone (media type audio).
        case microphone
        case builtInTelephotoCamera
        case builtInUltraWideCamera
        case builtInDualCamera
        case builtInDualWideCamera
        case builtInTripleCamera
        case builtInTrueDepthCamera
        case builtInLiDARDepthCamera
        case continuityCamera

        public var description: String { rawValue }

        /// The name before iOS 17 and macOS 14.
        @available(*, deprecated, renamed: "microphone")
        public static let builtInMicrophone = DeviceType.microphone

        init?(_ type: Camerad_V1_DeviceType) {
            switch type {
            case .builtInWideAngleCamera: self = .builtInWideAngleCamera
            case .external: self = .external
            case .microphone: self = .microphone
            default: return nil
            }
        }

        /// Nil for the kinds no Linux device is.
        var proto: Camerad_V1_DeviceType? {
            switch self {
            case .builtInWideAngleCamera: .builtInWideAngleCamera
            case .external: .external
            case .microphone: .microphone
            default: nil
            }
        }
    }

    /// AVCaptureDevice.FocusMode.
    public enum FocusMode: Int, CaseIterable, Sendable {
        case locked = 0
        case autoFocus = 1
        case continuousAutoFocus = 2

        init?(_ mode: Camerad_V1_FocusMode) {
            self.init(protoRawValue: mode.rawValue)
        }
    }

    /// AVCaptureDevice.ExposureMode.
    public enum ExposureMode: Int, CaseIterable, Sendable {
        case locked = 0
        case autoExpose = 1
        case continuousAutoExposure = 2
        case custom = 3

        init?(_ mode: Camerad_V1_ExposureMode) {
            self.init(protoRawValue: mode.rawValue)
        }
    }

    /// AVCaptureDevice.WhiteBalanceMode.
    public enum WhiteBalanceMode: Int, CaseIterable, Sendable {
        case locked = 0
        case autoWhiteBalance = 1
        case continuousAutoWhiteBalance = 2

        init?(_ mode: Camerad_V1_WhiteBalanceMode) {
            self.init(protoRawValue: mode.rawValue)
        }
    }

    /// AVCaptureDevice.TorchMode.
    public enum TorchMode: Int, CaseIterable, Sendable {
        case off = 0
        case on = 1
        case auto = 2

        init?(_ mode: Camerad_V1_TorchMode) {
            self.init(protoRawValue: mode.rawValue)
        }
    }

    /// AVCaptureDevice.FlashMode.
    public enum FlashMode: Int, CaseIterable, Sendable {
        case off = 0
        case on = 1
        case auto = 2

        init?(_ mode: Camerad_V1_FlashMode) {
            self.init(protoRawValue: mode.rawValue)
        }
    }
}

/// The protocol's AVFoundation enums list Apple's cases in Apple's order after an
/// UNSPECIFIED zero, so a case's proto raw value is Apple's plus one.
protocol AppleOrderedEnum: RawRepresentable<Int> {}

extension AppleOrderedEnum {
    init?(protoRawValue: Int) {
        self.init(rawValue: protoRawValue - 1)
    }
}

extension CaptureDevice.FocusMode: AppleOrderedEnum {}
extension CaptureDevice.ExposureMode: AppleOrderedEnum {}
extension CaptureDevice.WhiteBalanceMode: AppleOrderedEnum {}
extension CaptureDevice.TorchMode: AppleOrderedEnum {}
extension CaptureDevice.FlashMode: AppleOrderedEnum {}
