import CameraProtocol
import Foundation
import Synchronization

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
    /// AVCapturePhotoSettings.isHighResolutionPhotoEnabled: accepted, and
    /// always the case (``CapturePhotoOutput/isHighResolutionCaptureEnabled``).
    public var isHighResolutionPhotoEnabled = true

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

    /// A photo that was not taken, as AVFoundation hands one to its delegate
    /// with the error: no data (``fileDataRepresentation()`` is nil).
    init(failedAt sequenceNumber: UInt64 = 0) {
        data = Data()
        pixelFormat = FourCharCode(rawValue: 0)
        dimensions = CMVideoDimensions(width: 0, height: 0)
        planeOffsets = []
        bytesPerRow = []
        timestamp = .invalid
        self.sequenceNumber = sequenceNumber
        isFlashFired = false
        isPassedThrough = false
        note = nil
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

/// AVCaptureResolvedPhotoSettings: what one photo request is taken with.
/// AVCapturePhotoSettings with the `AV` dropped, as the porting convention spells it: ``PhotoSettings``.
public typealias CapturePhotoSettings = PhotoSettings

public struct CaptureResolvedPhotoSettings: Sendable {
    /// The request's number, unique in this process.
    public let uniqueID: Int64
    /// Whether the flash fires: as asked when the capture begins (`.auto`
    /// decides as the frame is taken: false until then), as it fired when it ends.
    public let isFlashEnabled: Bool
    /// The photo's size; zero until it is taken.
    public let photoDimensions: CMVideoDimensions
}

/// AVCapturePhotoCaptureDelegate, in Apple's shape: every method optional,
/// called in order for each request — capture begins, the shot is about to be
/// taken, it was taken, the photo (with the error if it failed; then it holds
/// no data), capture ends.
///
/// camerad takes and encodes a photo in one call: `willCapturePhotoFor` comes
/// as the request goes to it, `didCapturePhotoFor` when the photo is back (only
/// then: a failed photo has no capture), and the frame's own moment is the
/// photo's ``CapturePhoto/timestamp``.
public protocol CapturePhotoCaptureDelegate: AnyObject {
    func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings)
    func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings)
    func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings)
    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?)
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings, error: (any Error)?
    )
}

extension CapturePhotoCaptureDelegate {
    public func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {}
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings, error: (any Error)?
    ) {}
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

    /// Takes a photo and hands it to `delegate` (AVFoundation's form), from a task of its own.
    public func capturePhoto(with settings: PhotoSettings, delegate: any CapturePhotoCaptureDelegate) {
        let id = Self.nextRequestID.wrappingAdd(1, ordering: .relaxed).newValue
        // AVFoundation calls its delegates on a queue of its own; so does this,
        // on one task, one call after another: the delegate is never called twice at once.
        let handle = DelegateHandle(delegate: delegate)
        Task {
            let delegate = handle.delegate
            let asked = CaptureResolvedPhotoSettings(
                uniqueID: id, isFlashEnabled: settings.flashMode == .on, photoDimensions: CMVideoDimensions(width: 0, height: 0))
            delegate.photoOutput(self, willBeginCaptureFor: asked)
            delegate.photoOutput(self, willCapturePhotoFor: asked)
            let photo: CapturePhoto
            let failure: CaptureError?
            do throws(CaptureError) {
                photo = try await capturePhoto(with: settings)
                failure = nil
                delegate.photoOutput(self, didCapturePhotoFor: CaptureResolvedPhotoSettings(
                    uniqueID: id, isFlashEnabled: photo.isFlashFired, photoDimensions: photo.dimensions))
            } catch {
                photo = CapturePhoto(failedAt: 0)
                failure = error
            }
            delegate.photoOutput(self, didFinishProcessingPhoto: photo, error: failure)
            delegate.photoOutput(self, didFinishCaptureFor: CaptureResolvedPhotoSettings(
                uniqueID: id, isFlashEnabled: photo.isFlashFired, photoDimensions: photo.dimensions), error: failure)
        }
    }

    private static let nextRequestID = Atomic<Int64>(0)

    /// A delegate carried into the task that calls it. Unchecked Sendable:
    /// the task is the only one that calls it, one call after another.
    private struct DelegateHandle: @unchecked Sendable {
        let delegate: any CapturePhotoCaptureDelegate
    }
}
