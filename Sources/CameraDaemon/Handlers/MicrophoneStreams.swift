import CameraIPC
import CameraMedia
import CameraProtocol
import Foundation

/// A microphone's side of the Stream call and the WatchAudioLevels call: the
/// request checked against what the microphone offers, periods to a
/// ``ClientStreamSink`` as a camera's frames, levels as AudioLevels messages.
extension MicrophoneStreamer {
    /// Periods a listener holds at most when it does not say (80 ms of 10 ms periods).
    static let defaultPeriodsInFlight = 8
    /// Periods a listener may hold at most.
    static let maxPeriodsInFlight = 16

    /// Opens a stream for a client's Stream call on this microphone: its
    /// periods go to `writer` as the protocol's messages.
    ///
    /// - Throws: INVALID_ARGUMENT for video settings, or a format or period the
    ///   microphone does not offer (saying what it does).
    func listen(_ request: Camerad_V1_OpenStream, for owner: ClientBudget.Owner, writer: any StreamResponder) async throws -> UInt64 {
        let settings = request.settings
        let uniqueID = microphone.uniqueID
        guard settings.pixelFormat == .native, settings.width == 0, settings.height == 0, !settings.hasMinFrameDuration,
              settings.orientation == .unspecified, !settings.mirrored, request.preset == .unspecified else {
            throw CameraError(.invalidArgument,
                              "\(uniqueID) is a microphone: ask for its audio (OpenStream.audio), not a pixel format, size, frame rate, orientation, mirroring or preset")
        }
        let audio = request.audio
        let layout = try microphone.audio.layout(
            sampleRate: Int(audio.sampleRate), channels: Int(audio.channels),
            sampleFormat: try AudioLayout.SampleFormat(try audio.sampleFormat.known("sample_format")),
            framesPerPeriod: Int(audio.periodFrames))
        let inline = try settings.delivery.known("delivery") == .inline
        let inFlight = settings.maxFramesInFlight == 0 ? Self.defaultPeriodsInFlight : Int(settings.maxFramesInFlight)
        guard (1...Self.maxPeriodsInFlight).contains(inFlight) else {
            throw CameraError(.invalidArgument,
                              "max_frames_in_flight \(inFlight) is out of range for a microphone; use 1 to \(Self.maxPeriodsInFlight) periods")
        }
        if inline && layout.capacity > StreamOptions.maxInlineFrameSize {
            throw CameraError(.invalidArgument, "inline periods of \(layout.capacity) bytes do not fit a message; ask for shorter periods")
        }
        let policy = SubscriptionPolicy(
            maxInFlight: inFlight,
            alwaysDiscardsLate: settings.optionalAlwaysDiscardsLateVideoFrames != nil ? settings.alwaysDiscardsLateVideoFrames : true,
            copies: inline)
        let rings = try owner.user.flatMap { user throws(CameraError) in
            try ClientRings(releaseRing: settings.releaseRing && !inline, frameRing: settings.frameRing && !inline,
                            user: user, device: uniqueID, budget: budget)
        }
        return try await listen(layout, policy: policy, sink: ClientStreamSink(writer: writer, inline: inline, rings: rings), for: owner)
    }

    /// The client is done with some slots (ReleaseFrames).
    func release(_ id: UInt64, _ request: Camerad_V1_ReleaseFrames) throws {
        try release(id, poolID: request.poolID, slots: request.slots.map(Int.init))
    }
}

/// A WatchAudioLevels call as a sink of the microphone's ``AudioMeter``:
/// each reading goes as an AudioLevels message; its end is `ended`'s.
struct AudioLevelsSink: FrameSink {
    let writer: ResponseWriter<Camerad_V1_AudioLevels>
    let ended: AsyncStream<CameraError?>.Continuation

    func started(_ news: StreamNews) {}

    func frame(_ handle: FrameHandle) -> Bool {
        let frame = handle.frame
        var message = Camerad_V1_AudioLevels()
        message.timestampNs = frame.timestampNanoseconds
        message.channels = (frame.copied ?? Data(frame.bytes)).withUnsafeBytes { AudioMeter.readings(in: $0) }.map { reading in
            var channel = Camerad_V1_AudioChannelLevel()
            channel.averagePowerLevel = reading.averagePowerLevel
            channel.peakHoldLevel = reading.peakHoldLevel
            return channel
        }
        return writer.send(message)
    }

    /// A reading missed is no loss: the next one says the same of a later moment.
    func dropped(_ drops: DropTally) {}
    func formatChanged(_ news: StreamNews) {}
    func interrupted(_ reason: StreamInterruption, _ error: CameraError) {}

    func end(with error: CameraError?) {
        _ = ended.wake(with: error)
        ended.wakeFinished()
    }
}

extension AudioLayout.SampleFormat {
    /// Nil for UNSPECIFIED: the device's own.
    init?(_ format: Camerad_V1_SampleFormat) throws(CameraError) {
        switch format {
        case .unspecified: return nil
        case .s16: self = .s16
        case .s32: self = .s32
        case .f32: self = .f32
        case .UNRECOGNIZED(let raw): throw Camerad_V1_SampleFormat.unknown(raw, "sample_format")
        }
    }
}

extension Camerad_V1_SampleFormat {
    init(_ format: AudioLayout.SampleFormat) {
        self = switch format {
        case .s16: .s16
        case .s32: .s32
        case .f32: .f32
        }
    }
}

extension Camerad_V1_AudioFormat {
    init(_ layout: AudioLayout) {
        self.init()
        sampleRate = UInt32(layout.sampleRate)
        channels = UInt32(layout.channels)
        sampleFormat = Camerad_V1_SampleFormat(layout.sampleFormat)
        periodFrames = UInt32(layout.framesPerPeriod)
    }
}

extension Camerad_V1_AudioCapabilities {
    init(_ audio: AudioCapabilities) {
        self.init()
        native = Camerad_V1_AudioFormat(audio.native)
        sampleRates = AudioCapabilities.sampleRates.map(UInt32.init)
        maxChannels = UInt32(audio.maxChannels)
        sampleFormats = AudioCapabilities.sampleFormats.map(Camerad_V1_SampleFormat.init)
        minPeriodUs = UInt32(AudioCapabilities.periodMicroseconds.lowerBound)
        maxPeriodUs = UInt32(AudioCapabilities.periodMicroseconds.upperBound)
    }
}
