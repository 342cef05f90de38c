import CameraIPC
import CameraProtocol
import Foundation

/// The camerad daemon as CaptureKit sees it: where it is, and what it says of
/// itself. Apple's capture API has no counterpart: on Linux the cameras live in
/// another process.
public enum CaptureDaemon {
    /// The socket CaptureKit connects to. Default: `$CAMERAD_SOCKET`, else
    /// `$XDG_RUNTIME_DIR/camerad.sock`, else `/run/camerad/camerad.sock`.
    /// Setting it closes the current connection.
    public static var socketPath: String {
        get { DaemonClient.shared.socketPath }
        set { DaemonClient.shared.socketPath = newValue }
    }

    /// How this process names itself to the daemon (its logs, other clients'
    /// error messages). Default: the process name.
    public static var clientName: String {
        get { DaemonClient.shared.clientName }
        set { DaemonClient.shared.clientName = newValue }
    }

    /// What the daemon said when CaptureKit connected.
    public struct Info: Sendable, Equatable {
        public var version: String
        public var protocolVersion: UInt32
        public var features: [String]
        public var pid: Int32
    }

    /// Connects if needed and returns the daemon's own description.
    public static func info() async throws(CaptureError) -> Info {
        let hello = try await DaemonClient.shared.connection().hello
        return Info(version: hello.serverVersion, protocolVersion: hello.protocolVersion,
                    features: hello.features, pid: hello.serverPid)
    }

    /// Round-trip times of `count` pings on one bidirectional call.
    public static func ping(count: Int = 1, payloadSize: Int = 0) async throws(CaptureError) -> [Duration] {
        let client = try await DaemonClient.shared.connection()
        return try await CaptureError.converting {
            let call = try client.bidirectional(CameraService.ping)
            var times: [Duration] = []
            var responses = call.responses.makeAsyncIterator()
            let clock = ContinuousClock()
            for sequence in 0..<count {
                var request = Camerad_V1_PingRequest()
                request.sequence = UInt64(sequence)
                request.payload = Data(count: payloadSize)
                let start = clock.now
                try call.send(request)
                guard let response = try await responses.next(), response.sequence == UInt64(sequence) else {
                    throw CaptureError(.internalError, "ping \(sequence) got no matching answer")
                }
                times.append(clock.now - start)
            }
            call.finishSending()
            while try await responses.next() != nil {}
            return times
        }
    }

    /// Closes CaptureKit's connection; the next call opens a new one.
    public static func disconnect() {
        DaemonClient.shared.disconnect()
    }
}

// MARK: - Virtual cameras

extension CaptureDaemon {
    /// How a new virtual camera starts and makes frames.
    public struct VirtualCameraOptions: Sendable {
        /// The mode it starts in: a fourcc ("YUYV", "NV12", "MJPG") and size among
        /// its formats. nil: YUYV 640x480.
        public var pixelFormat: FourCharCode?
        public var width: Int?
        public var height: Int?
        /// Its frame duration; nil: 1/30 s.
        public var frameDuration: CMTime?
        /// Frames as fast as they can be made (for benchmarks).
        public var unthrottled = false
        /// Bars drawn once, then only the stamp bands (for benchmarks).
        public var staticPicture = false
        /// A/V sync marks: the frame exposed at every whole second of
        /// CLOCK_MONOTONIC is drawn bright, as a virtual microphone added with
        /// sync marks clicks then — a clapperboard for checking a recording's sync.
        public var syncMarks = false

        public init(pixelFormat: FourCharCode? = nil, width: Int? = nil, height: Int? = nil, frameDuration: CMTime? = nil,
                    unthrottled: Bool = false, staticPicture: Bool = false, syncMarks: Bool = false) {
            self.pixelFormat = pixelFormat
            self.width = width
            self.height = height
            self.frameDuration = frameDuration
            self.unthrottled = unthrottled
            self.staticPicture = staticPicture
            self.syncMarks = syncMarks
        }
    }

    /// Adds one of camerad's virtual cameras. Allowed to camerad's own user and root.
    ///
    /// - Parameters:
    ///   - index: makes the uniqueID "virtual-<index>" (0–63); nil takes the lowest free index.
    ///   - localizedName: empty for "Virtual Camera <index>".
    ///   - position: the position it reports (`.front`, `.back`).
    ///   - options: its pixel format, size and frame rate.
    /// - Throws: `permissionDenied`, `alreadyExists` for a taken index, `invalidArgument`,
    ///   `unsupportedFormat` for a mode virtual cameras do not have.
    public static func addVirtualCamera(
        index: Int? = nil, localizedName: String = "", position: CaptureDevice.Position = .unspecified,
        options: VirtualCameraOptions = VirtualCameraOptions()
    ) async throws(CaptureError) -> CaptureDevice {
        var request = Camerad_V1_AddVirtualCameraRequest()
        if let index {
            guard let index = UInt32(exactly: index) else {
                throw CaptureError(.invalidArgument, "virtual camera index \(index) is negative; use 0 to 63")
            }
            request.index = index
        }
        request.localizedName = localizedName
        request.position = position.proto
        request.fourcc = options.pixelFormat?.rawValue ?? 0
        request.width = UInt32(clamping: options.width ?? 0)
        request.height = UInt32(clamping: options.height ?? 0)
        if let duration = options.frameDuration, duration.isValid {
            request.frameDuration.numerator = UInt32(clamping: duration.value)
            request.frameDuration.denominator = UInt32(duration.timescale)
        }
        request.unthrottled = options.unthrottled
        request.staticPicture = options.staticPicture
        request.syncMarks = options.syncMarks
        return LiveDevices.shared.update(try await DaemonClient.shared.unary(CameraService.addVirtualCamera, request).device)
    }

    /// Adds a virtual microphone, "virtual-microphone-<index>" (48 kHz stereo
    /// float, 10 ms periods): it hears the audio stamp (a 1 kHz tone marked
    /// with each block's position), with `toneAmplitude` (0 to 1) a plain
    /// 1 kHz sine of that peak, or with `syncMarks` a click at every whole
    /// second of CLOCK_MONOTONIC, when virtual cameras with sync marks flash;
    /// its clock runs `driftPPM` parts per million fast (slow, below 0) of
    /// CLOCK_MONOTONIC, as a sound card's does (-10000 to 10000).
    /// Linux only; the same rights as ``addVirtualCamera(index:localizedName:position:options:)``.
    public static func addVirtualMicrophone(
        index: Int? = nil, localizedName: String = "", toneAmplitude: Float? = nil, syncMarks: Bool = false, driftPPM: Int = 0
    ) async throws(CaptureError) -> CaptureDevice {
        var request = Camerad_V1_AddVirtualCameraRequest()
        if let index {
            guard let index = UInt32(exactly: index) else {
                throw CaptureError(.invalidArgument, "virtual microphone index \(index) is negative; use 0 to 63")
            }
            request.index = index
        }
        request.localizedName = localizedName
        request.mediaType = .audio
        request.toneAmplitude = toneAmplitude ?? 0
        request.syncMarks = syncMarks
        guard let drift = Int32(exactly: driftPPM) else {
            throw CaptureError(.invalidArgument, "a drift of \(driftPPM) ppm is out of range; use -10000 to 10000")
        }
        request.driftPpm = drift
        return LiveDevices.shared.update(try await DaemonClient.shared.unary(CameraService.addVirtualCamera, request).device)
    }

    /// A microphone's levels, as camerad computes them for everyone: a reading
    /// every 100 ms until the iteration stops (or the microphone goes). Linux
    /// only; a session's ``CaptureConnection/audioChannels`` follow the same.
    public static func audioLevels(of microphone: CaptureDevice) async throws(CaptureError) -> AudioLevelReadings {
        var request = Camerad_V1_WatchAudioLevelsRequest()
        request.uniqueID = microphone.uniqueID
        let client = try await DaemonClient.shared.connection()
        return try await CaptureError.converting { AudioLevelReadings(responses: try client.serverStreaming(CameraService.watchAudioLevels, request)) }
    }

    /// Removes a virtual camera or microphone, as if it were unplugged.
    ///
    /// - Throws: `deviceNotFound`, `invalidArgument` for a device that is not virtual, `permissionDenied`.
    public static func removeVirtualCamera(uniqueID: String) async throws(CaptureError) {
        var request = Camerad_V1_RemoveVirtualCameraRequest()
        request.uniqueID = uniqueID
        _ = try await DaemonClient.shared.unary(CameraService.removeVirtualCamera, request)
    }
}

// MARK: - Statistics

extension CaptureDaemon {
    /// What camerad's fan-out engine does for one device. Linux only.
    public struct DeviceStatistics: Sendable, Equatable, Codable {
        /// One output variant: converted once per frame, shared by its streams.
        public struct Variant: Sendable, Equatable, Codable {
            public var poolID: UInt64
            public var pixelFormat: FourCharCode
            public var width: Int
            public var height: Int
            public var rotationDegrees: Int
            public var isMirrored: Bool
            public var streams: Int
            public var slotCount: Int
            public var slotsInUse: Int
            /// Frames converted into this variant's pool.
            public var conversions: UInt64
            /// Frames the variant's worker let go unconverted because it was
            /// still busy with two (FRAME_WAS_LATE for its streams).
            public var framesSkipped: UInt64
            /// Frames of the device's own format given to streams in the
            /// device's buffers, as they are: no copy.
            public var framesShared: UInt64
            /// Frames of the device's own format copied all the same (the
            /// device short of buffers, or its buffers not shareable): zero in
            /// a steady state.
            public var framesCopied: UInt64

            /// Frames the variant made for its streams: converted, or shared
            /// as the device made them.
            public var framesMade: UInt64 { conversions + framesShared }
        }

        public var uniqueID: String
        public var isCapturing: Bool
        public var framesCaptured: UInt64
        public var streams: Int
        public var variants: [Variant]
    }

    /// The fan-out engine's numbers for `device` now.
    public static func statistics(for device: CaptureDevice) async throws(CaptureError) -> DeviceStatistics {
        var request = Camerad_V1_GetDeviceStatisticsRequest()
        request.uniqueID = device.uniqueID
        let statistics = try await DaemonClient.shared.unary(CameraService.getDeviceStatistics, request)
        return DeviceStatistics(
            uniqueID: statistics.uniqueID, isCapturing: statistics.capturing, framesCaptured: statistics.framesCaptured,
            streams: Int(statistics.streams),
            variants: statistics.variants.map { variant in
                DeviceStatistics.Variant(
                    poolID: variant.poolID, pixelFormat: FourCharCode(rawValue: variant.fourcc), width: Int(variant.width),
                    height: Int(variant.height), rotationDegrees: Int(variant.rotationDegrees), isMirrored: variant.mirrored,
                    streams: Int(variant.streams), slotCount: Int(variant.slotCount), slotsInUse: Int(variant.slotsInUse),
                    conversions: variant.conversions, framesSkipped: variant.framesSkipped,
                    framesShared: variant.framesShared, framesCopied: variant.framesCopied)
            })
    }
}

/// One reading of a microphone's levels: per channel, in dBFS.
public struct AudioLevelReading: Sendable {
    public struct Channel: Sendable {
        /// The RMS power of the last 100 ms.
        public let averagePowerLevel: Float
        /// The highest sample's level over the last second.
        public let peakHoldLevel: Float
    }
    /// CLOCK_MONOTONIC nanoseconds of the last sample it covers.
    public let timestampNanoseconds: Int64
    public let channels: [Channel]
}

/// ``CaptureDaemon/audioLevels(of:)``: readings as they come.
public struct AudioLevelReadings: AsyncSequence, Sendable {
    public typealias Element = AudioLevelReading
    let responses: ResponseStream<Camerad_V1_AudioLevels>

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(responses: responses.makeAsyncIterator()) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var responses: ResponseStream<Camerad_V1_AudioLevels>.AsyncIterator

        public mutating func next() async throws -> AudioLevelReading? {
            do {
                guard let reading = try await responses.next() else { return nil }
                return AudioLevelReading(timestampNanoseconds: reading.timestampNs, channels: reading.channels.map {
                    AudioLevelReading.Channel(averagePowerLevel: $0.averagePowerLevel, peakHoldLevel: $0.peakHoldLevel)
                })
            } catch {
                throw CaptureError(converting: error)
            }
        }
    }
}
