import CameraProtocol
import Foundation

/// AVCapturePhotoSettings: how one photo is taken.
public struct PhotoSettings: Sendable {
    /// A JPEG (AVVideoCodecType.jpeg), or the frame uncompressed.
    public enum Codec: String, CaseIterable, Sendable {
        case jpeg, bgra, nv12
    }

    public var codec: Codec
    /// 1 to 100.
    public var jpegQuality: Int
    public var flashMode: CaptureDevice.FlashMode
    /// The photo fits in these, in the device's aspect ratio (before the
    /// connection turns it); nil: the frame's size.
    public var maxPhotoDimensions: CMVideoDimensions?

    public init(codec: Codec = .jpeg, jpegQuality: Int = 90, flashMode: CaptureDevice.FlashMode = .off,
                maxPhotoDimensions: CMVideoDimensions? = nil) {
        self.codec = codec
        self.jpegQuality = jpegQuality
        self.flashMode = flashMode
        self.maxPhotoDimensions = maxPhotoDimensions
    }
}

/// AVCapturePhoto: one photo, its bytes in memory.
public struct CapturePhoto: Sendable {
    /// The JPEG with its EXIF, or the uncompressed frame (planes at ``planeOffsets``).
    public let data: Data
    /// MJPG for a JPEG, AR24 (BGRA) or NV12.
    public let pixelFormat: FourCharCode
    public let dimensions: CMVideoDimensions
    public let planeOffsets: [Int]
    public let bytesPerRow: [Int]
    /// When the frame was captured, CLOCK_MONOTONIC.
    public let timestamp: CMTime
    public let sequenceNumber: UInt64
    public let isFlashFired: Bool
    /// The camera's own JPEG, its image data untouched. Linux only.
    public let isPassedThrough: Bool
    /// Set when the photo is not what was asked, saying how. Linux only.
    public let note: String?

    /// The JPEG file's bytes; nil for an uncompressed photo.
    public func fileDataRepresentation() -> Data? {
        pixelFormat == FourCharCode("MJPG") ? data : nil
    }

    init(_ response: Camerad_V1_CapturePhotoResponse) {
        data = response.data
        pixelFormat = FourCharCode(rawValue: response.fourcc)
        dimensions = CMVideoDimensions(width: Int32(clamping: response.width), height: Int32(clamping: response.height))
        planeOffsets = response.planes.map { Int($0.offset) }
        bytesPerRow = response.planes.map { Int($0.bytesPerRow) }
        timestamp = CMTime(value: response.presentationTimeNs, timescale: 1_000_000_000)
        sequenceNumber = response.sequence
        isFlashFired = response.flashFired
        isPassedThrough = response.passedThrough
        note = response.note.isEmpty ? nil : response.note
    }
}

/// AVCapturePhotoCaptureDelegate.
public protocol CapturePhotoCaptureDelegate: AnyObject, Sendable {
    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto?, error: CaptureError?)
}

/// AVCapturePhotoOutput: still photos from the session's device, turned and
/// mirrored as its connection says. The session need not run: camerad opens an
/// idle device for the shot, in its photo mode.
public final class CapturePhotoOutput: CaptureOutput, @unchecked Sendable {
    public override init() {}

    /// The flash modes the output's device has (empty before it is in a
    /// session with a device input, as in AVFoundation).
    public var supportedFlashModes: [CaptureDevice.FlashMode] {
        guard let device = connection(with: .video)?.input.device else { return [] }
        return CaptureDevice.FlashMode.allCases.filter { device.isFlashModeSupported($0) }
    }

    /// AVCapturePhotoOutput.isHighResolutionCaptureEnabled: accepted, and
    /// always the case here — a photo is taken in the device's largest mode
    /// (its photo mode) unless its settings ask for less.
    public var isHighResolutionCaptureEnabled: Bool {
        get { true }
        set {}  // swiftlint:disable:this unused_setter_value
    }

    /// Takes a photo.
    ///
    /// - Throws: `invalidState` when the output has no device (add it and a device
    ///   input to a session first); `unsupported` for a flash the device lacks.
    public func capturePhoto(with settings: PhotoSettings) async throws(CaptureError) -> CapturePhoto {
        guard let connection = connection(with: .video) else {
            throw CaptureError(.invalidState, "the photo output has no device; add it and a device input to a session first")
        }
        var request = Camerad_V1_CapturePhotoRequest()
        request.uniqueID = connection.input.device.uniqueID
        request.settings.codec = switch settings.codec {
        case .jpeg: .jpeg
        case .bgra: .bgra
        case .nv12: .nv12
        }
        request.settings.quality = UInt32(clamping: settings.jpegQuality)
        request.settings.flashMode = Camerad_V1_FlashMode(rawValue: settings.flashMode.rawValue + 1) ?? .off
        if let size = settings.maxPhotoDimensions {
            request.settings.maxWidth = UInt32(clamping: size.width)
            request.settings.maxHeight = UInt32(clamping: size.height)
        }
        request.settings.orientation = connection.videoOrientation.proto
        request.settings.mirrored = connection.isVideoMirrored
        return CapturePhoto(try await DaemonClient.shared.unary(CameraService.capturePhoto, request))
    }

    /// Takes a photo and hands it to `delegate` (AVFoundation's form).
    public func capturePhoto(with settings: PhotoSettings, delegate: any CapturePhotoCaptureDelegate) {
        Task {
            do throws(CaptureError) {
                let photo = try await capturePhoto(with: settings)
                delegate.photoOutput(self, didFinishProcessingPhoto: photo, error: nil)
            } catch {
                delegate.photoOutput(self, didFinishProcessingPhoto: nil, error: error)
            }
        }
    }
}
