import CameraIPC
import CameraMedia
import Foundation

/// AVCapturePhotoSettings, and the connection's orientation and mirroring.
struct PhotoSettings: Sendable {
    enum Codec: Sendable { case jpeg, bgra, nv12 }

    var codec: Codec = .jpeg
    /// JPEG quality, 1 to 100; nil: 90.
    var quality: Int?
    var flashMode: FlashMode = .off
    /// The largest size wanted each way (0: the frame's); the photo is scaled
    /// down to fit, never up.
    var maxWidth = 0
    var maxHeight = 0
    var rotation: Rotation = .none
    var mirrored = false
}

/// A photo as taken (AVCapturePhoto): a JPEG, or uncompressed pixels.
struct Photo: Sendable {
    var data = Data()
    var pixelFormat: PixelFormat = .mjpeg
    var width = 0
    var height = 0
    /// Where an uncompressed photo's planes lie (nil for a JPEG).
    var layout: FrameLayout?
    var sequence: UInt64 = 0
    /// CLOCK_MONOTONIC nanoseconds at capture.
    var timestampNanoseconds: Int64 = 0
    var flashFired = false
    /// The JPEG is the camera's own, not encoded again.
    var passedThrough = false
    /// Why the photo is not what was asked (the device runs a smaller mode).
    var note: String?
}

/// A still photo from a device: the frame comes from the running capture, or
/// from one started for the shot in the device's photo mode (its configured
/// mode, else the `.photo` preset's); it is then scaled to fit the asked
/// dimensions and encoded (``PhotoEncoder``). A JPEG keeps the camera's pixel
/// order and says the connection's orientation and mirroring in EXIF, as
/// AVCapturePhotoOutput does; an uncompressed photo is turned and mirrored.
enum PhotoCapture {
    /// The largest uncompressed photo carried in one response.
    static let uncompressedLimit = 12 << 20

    /// How long a photo waits for a frame at least; twice the frame duration
    /// for slower modes.
    static let frameTimeout: Duration = .seconds(5)

    /// Takes a photo through a stream of the device's own variant
    /// (``PhotoSink``), charged to `owner` as any stream.
    ///
    /// - Throws: ``CameraError``: `UNSUPPORTED` for a flash the device lacks,
    ///   `UNSUPPORTED_FORMAT` for a photo too big uncompressed, `TIMED_OUT` when
    ///   no frame comes within `frameTimeout` (or two frame durations); what
    ///   opening a stream throws (a device that cannot start, `RESOURCE_EXHAUSTED`).
    static func take(
        _ settings: PhotoSettings, device: any CameraBackend, streamer: DeviceStreamer, owner: ClientBudget.Owner,
        holdsLock: Bool, frameTimeout: Duration = PhotoCapture.frameTimeout
    ) async throws -> Photo {
        let description = device.describe()
        let flash = settings.flashMode
        if flash != .off && !description.capabilities.flashModes.contains(flash) {
            throw CameraError(.unsupported, "\(device.uniqueID) has no flash; take the photo with flash mode off")
        }
        if let quality = settings.quality, !(1...100).contains(quality) {
            throw CameraError(.invalidArgument, "JPEG quality must be 1 to 100 (0 for 90), not \(quality)")
        }
        // Reading the node's own mode opens it: the device's work, on its executor.
        let active = await device.executor.run { [device] in device.activeMode }
        let idleMode = device.configuredMode ?? ModeSelection.mode(for: .photo, formats: device.formats, active: active)
        // A device running a smaller mode for its streams is switched to the
        // photo mode for the shot only by its lock holder (the streams are told,
        // twice); anyone else gets the photo at the running mode, flagged.
        var restore: CaptureMode?
        var note: String?
        if let running = streamer.runningMode, area(running) < area(idleMode) {
            if holdsLock {
                try await streamer.switchMode(to: idleMode)
                restore = running
            } else {
                note = "the device runs \(running) for its streams; the photo is at that size, not its photo mode \(idleMode) (the holder of its configuration lock gets that)"
            }
        }
        // A capture just restarted in the photo mode settles like one started for it.
        let warmUp = restore != nil ? max(1, device.photoWarmUpFrames) : streamer.runningMode == nil ? device.photoWarmUpFrames : 0
        let sink = PhotoSink(timers: streamer.timers)
        var request = StreamRequest()
        // The device's own frames, in the photo mode when the photo starts it.
        request.preset = .photo
        request.maxFramesInFlight = 1
        let id: UInt64
        do {
            id = try await streamer.open(request, for: owner, sink: sink)
        } catch {
            if let restore { try? await streamer.switchMode(to: restore) }
            throw error
        }
        defer { streamer.close(id) }
        let shot = PhotoShot(device: device, streamer: streamer, sink: sink, frameTimeout: frameTimeout)
        let taken: (frame: FrameHandle, fires: Bool)
        do {
            taken = try await shot.take(warmUp: warmUp, flash: flash)
        } catch {
            if let restore { try? await streamer.switchMode(to: restore) }
            throw error
        }
        // The frame stays valid in its slot, held until the stream closes.
        if let restore { try? await streamer.switchMode(to: restore) }
        let (frame, fires) = (taken.frame.frame, taken.fires)
        // Scaling and encoding are CPU work: a worker's, not the handler's.
        var photo = try await Workers.run {
            try encode(frame, fired: fires, settings: settings, description: description, device: device)
        }
        photo.note = note
        return photo
    }

    /// The photo of `frame` as `settings` ask: a JPEG with EXIF, or uncompressed.
    private static func encode(
        _ frame: PooledFrame, fired fires: Bool, settings: PhotoSettings,
        description: DeviceDescription, device: any CameraBackend
    ) throws -> Photo {
        let source = try frame.videoLayout

        var photo = Photo()
        let (width, height) = fit(source.width, source.height, into: settings.maxWidth, settings.maxHeight)
        let rotation = settings.rotation
        let (outWidth, outHeight) = rotation.swapsDimensions ? (height, width) : (width, height)
        let zoom = device.settingsState.digitalZoom
        let encoder = PhotoEncoder()
        photo.flashFired = fires
        photo.sequence = frame.sequence
        photo.timestampNanoseconds = frame.timestampNanoseconds
        photo.width = outWidth
        photo.height = outHeight
        let bytes = frame.bytes
        do {
            switch settings.codec {
            case .jpeg:
                // As AVCapturePhotoOutput: the pixels stay as the camera made
                // them, and EXIF Orientation says how to show them.
                let target = FrameVariant(format: .mjpeg, width: width, height: height)
                photo.width = width
                photo.height = height
                photo.passedThrough = zoom <= 1 && PhotoEncoder.passesThrough(source, target)
                var metadata = metadata(of: description, device: device, frame: frame, width: width, height: height)
                metadata.flashFired = fires
                metadata.orientation = exifOrientation(rotation, mirrored: settings.mirrored)
                photo.data = Data(try encoder.jpeg(
                    bytes, source: source, target: target, quality: settings.quality ?? 90, metadata: metadata, zoom: zoom))
                photo.pixelFormat = .mjpeg
            case .bgra, .nv12:
                let format: PixelFormat = settings.codec == .bgra ? .bgra : .nv12
                let target = FrameVariant(format: format, width: outWidth, height: outHeight, rotation: rotation,
                                          mirrored: settings.mirrored)
                guard target.layout.capacity <= uncompressedLimit else {
                    throw CameraError(.unsupportedFormat,
                                      "an uncompressed \(format.code) photo of \(outWidth)x\(outHeight) is over \(uncompressedLimit >> 20) MiB; ask for a JPEG or a smaller size")
                }
                photo.data = Data(try encoder.uncompressed(bytes, source: source, target: target, zoom: zoom))
                photo.pixelFormat = format
                photo.layout = target.layout
            }
        } catch let error as ConversionError {
            throw CameraError(.unsupportedFormat, "\(device.uniqueID): \(error.message)")
        } catch let error as JPEGError {
            throw CameraError(.internalError, "\(device.uniqueID): \(error.message)")
        }
        return photo
    }

    /// One photo's frames, from its stream.
    private struct PhotoShot {
        let device: any CameraBackend
        let streamer: DeviceStreamer
        let sink: PhotoSink
        let frameTimeout: Duration

        /// The photo's frame, and whether the flash fired for it (`.auto` fires
        /// when the first frame is dark).
        func take(warmUp: Int, flash: FlashMode) async throws -> (frame: FrameHandle, fires: Bool) {
            let first = try await frame(after: warmUp)
            // Scaling the frame is CPU work: a worker's, not the cooperative pool's.
            var fires = flash == .on
            if flash == .auto { fires = try await Workers.run { try meanLuma(first.frame) } < darkLuma }
            guard fires else { return (first, false) }
            try first.release()
            let before = device.controls
            try await device.executor.run { [device] in try strobe(device) }
            do {
                let lit = try await frame(after: flashDelayFrames)
                try await device.executor.run { [device] in try restoreLED(device, as: before) }
                return (lit, true)
            } catch {
                _ = try? await device.executor.run { [device] in try restoreLED(device, as: before) }
                throw error
            }
        }

        /// The frame after `skipping` more, each given back as it comes.
        private func frame(after skipping: Int) async throws -> FrameHandle {
            let duration = (streamer.runningMode?.frameDuration ?? .thirtieth).nanoseconds
            let timeout = max(frameTimeout, .nanoseconds(2 * duration))
            for _ in 0..<skipping {
                try await sink.next(within: timeout, of: device.uniqueID).release()
            }
            return try await sink.next(within: timeout, of: device.uniqueID)
        }
    }

    /// Mean luma (16 to 235) below which `.auto` fires the flash.
    static let darkLuma = 60.0
    /// Frames let pass after the strobe, so the photo's whole exposure is lit.
    static let flashDelayFrames = 1

    /// The frame's mean luma, from a small NV12 copy of it.
    static func meanLuma(_ frame: PooledFrame) throws -> Double {
        let small = try PhotoEncoder().uncompressed(frame.bytes, source: try frame.videoLayout,
                                                    target: FrameVariant(format: .nv12, width: 64, height: 48))
        return Double(small.prefix(64 * 48).reduce(0) { $0 + Int($1) }) / Double(64 * 48)
    }

    /// Sets the LED to flash and strobes it.
    private static func strobe(_ device: any CameraBackend) throws {
        try device.setControls(ControlChange.resolve([
            ControlValue(.flashLEDMode, FlashLEDMode.flash.rawValue),
            ControlValue(.flashStrobe, 1),
        ], among: device.controls, of: device.uniqueID))
    }

    /// Puts the LED back as it was in `before`, the controls before the strobe.
    private static func restoreLED(_ device: any CameraBackend, as before: [CameraControl]) throws {
        guard let led = before.first(where: { $0.id == .flashLEDMode }) else { return }
        try device.setControls(ControlChange.resolve([ControlValue(.flashLEDMode, led.value)],
                                                     among: device.controls, of: device.uniqueID))
    }

    /// The EXIF Orientation that shows a stored image turned clockwise by
    /// `rotation`, then mirrored left to right.
    static func exifOrientation(_ rotation: Rotation, mirrored: Bool) -> Int {
        switch (rotation, mirrored) {
        case (.none, false): 1
        case (.none, true): 2
        case (.clockwise180, false): 3
        case (.clockwise180, true): 4
        case (.clockwise90, true): 5
        case (.clockwise90, false): 6
        case (.clockwise270, true): 7
        case (.clockwise270, false): 8
        }
    }

    private static func area(_ mode: CaptureMode) -> Int { Int(mode.format.width) * Int(mode.format.height) }

    /// The frame's size scaled down (never up) to fit `maxWidth`×`maxHeight`
    /// (0: no limit that way), in its aspect ratio, even.
    static func fit(_ width: Int, _ height: Int, into maxWidth: Int, _ maxHeight: Int) -> (Int, Int) {
        let scale = min(1, maxWidth > 0 ? Double(maxWidth) / Double(width) : 1,
                        maxHeight > 0 ? Double(maxHeight) / Double(height) : 1)
        guard scale < 1 else { return (width, height) }
        return (max(2, Int(Double(width) * scale) & ~1), max(2, Int(Double(height) * scale) & ~1))
    }

    /// EXIF: Make, Model, when (wall clock at the frame's capture), size, and
    /// exposure time and ISO when the exposure is manual (an automatic one is not known).
    private static func metadata(
        of description: DeviceDescription, device: any CameraBackend, frame: PooledFrame,
        width: Int, height: Int
    ) -> PhotoMetadata {
        let age = Double(monotonicNanoseconds() - frame.timestampNanoseconds) / 1e9
        let settings = description.settings
        let manual = settings.exposureMode == .locked || settings.exposureMode == .custom
        let exposure = manual ? settings.exposureDuration.flatMap(exifExposureTime) : nil
        return PhotoMetadata(
            make: device.photoMake, model: description.localizedName, software: "camerad \(cameradVersion)",
            captured: Date(timeIntervalSinceNow: -max(0, age)), pixelWidth: width, pixelHeight: height,
            exposureTime: exposure, iso: manual ? settings.iso.flatMap { $0 > 0 ? Int($0.rounded()) : nil } : nil, flashFired: false)
    }

    /// An exposure time as EXIF's fraction of a second, in EXPOSURE_ABSOLUTE's 100 µs.
    private static func exifExposureTime(_ duration: Duration) -> (UInt32, UInt32)? {
        let units = (duration / CameraSettingsMapping.exposureUnit).rounded()
        guard units >= 1, units <= Double(UInt32.max) else { return nil }
        return (UInt32(units), UInt32(Duration.seconds(1) / CameraSettingsMapping.exposureUnit))
    }
}

extension PooledFrame {
    /// Its video frame's layout: a photo's subscription is to a variant of a camera's frames.
    fileprivate var videoLayout: FrameLayout {
        get throws(CameraError) {
            guard let layout = pool.media.video else {
                throw CameraError(.internalError, "a photo was given \(pool.media), not a video frame; report this camerad bug")
            }
            return layout
        }
    }
}
