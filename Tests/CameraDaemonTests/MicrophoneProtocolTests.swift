import CameraMedia
import CameraProtocol
import CameraTestSupport
import Foundation
import Testing

/// A virtual microphone through the protocol, on a real camerad: listed as an
/// audio device, heard in its own format and another, every period given or
/// reported and the stamp's blocks in order; what it does not offer refused,
/// saying what it does; its levels a known tone's.
@Suite struct MicrophoneProtocolTests {
    static let microphoneArguments = ["--virtual-microphones", "1"]

    static func list(_ raw: RawProtocolClient, mediaType: Camerad_V1_MediaType = .unspecified) async throws -> [Camerad_V1_Device] {
        var request = Camerad_V1_ListDevicesRequest()
        request.filter.mediaType = mediaType
        let (responses, status) = try await raw.call(CameraService.listDevices.name, request: try request.serializedBytes())
        #expect(status.code == .ok)
        return try Camerad_V1_ListDevicesResponse(serializedBytes: try #require(responses.first)).devices
    }

    static func open(_ uniqueID: String, _ audio: Camerad_V1_AudioFormat) -> Camerad_V1_StreamRequest {
        var request = Camerad_V1_StreamRequest()
        request.open.uniqueID = uniqueID
        request.open.audio = audio
        request.open.settings.delivery = .inline
        return request
    }

    static func format(_ rate: UInt32, _ channels: UInt32, _ sampleFormat: Camerad_V1_SampleFormat, _ frames: UInt32) -> Camerad_V1_AudioFormat {
        var format = Camerad_V1_AudioFormat()
        format.sampleRate = rate
        format.channels = channels
        format.sampleFormat = sampleFormat
        format.periodFrames = frames
        return format
    }

    @Test func aMicrophoneIsListedAsAnAudioDevice() async throws {
        try await withRunningDaemon(arguments: Self.microphoneArguments) { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let all = try await Self.list(raw)
            #expect(all.map(\.uniqueID) == ["virtual-0", "virtual-microphone-0"], "cameras first, then microphones")
            let microphone = try #require(all.last)
            #expect(microphone.mediaType == .audio && microphone.deviceType == .microphone && microphone.backend == .virtual)
            #expect(microphone.formats.isEmpty && microphone.optionalActiveFormatIndex == nil)
            #expect(microphone.audio.native == Self.format(48_000, 2, .f32, 480))
            #expect(microphone.audio.sampleRates.contains(16_000) && microphone.audio.maxChannels == 2)
            #expect(microphone.audio.sampleFormats == [.s16, .s32, .f32])
            #expect(all.first?.mediaType == .video && all.first?.hasAudio == false)
            #expect(try await Self.list(raw, mediaType: .audio).map(\.uniqueID) == ["virtual-microphone-0"])
            #expect(try await Self.list(raw, mediaType: .video).map(\.uniqueID) == ["virtual-0"])
        }
    }

    /// Two listeners at once, one in the microphone's own format (its periods
    /// as made) and one at 16 kHz mono s16 (a variant): each hears every
    /// period or a report of it, numbered by position, and the stamp decodes
    /// in order from both.
    @Test func twoListenersInTwoFormatsHearEveryPeriod() async throws {
        try await withRunningDaemon(arguments: Self.microphoneArguments) { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let formats = [Self.format(0, 0, .unspecified, 0), Self.format(16_000, 1, .s16, 320)]
            let expected = [(48_000, 2, AudioLayout.SampleFormat.f32, 480), (16_000, 1, .s16, 320)]
            var streams: [RawStream] = []
            for (index, format) in formats.enumerated() {
                let stream = try await RawStream(raw, callID: UInt64(10 + index))
                try await stream.send(Self.open("virtual-microphone-0", format))
                guard case .success(let (response, _)) = try await stream.next() else {
                    Issue.record("no StreamStarted")
                    return
                }
                let audio = response.started.pool.audio
                #expect(audio == Self.format(UInt32(expected[index].0), UInt32(expected[index].1),
                                             index == 0 ? .f32 : .s16, UInt32(expected[index].3)))
                streams.append(stream)
            }
            for (index, stream) in streams.enumerated() {
                let (rate, channels, sampleFormat, frames) = expected[index]
                let layout = AudioLayout(sampleRate: rate, channels: channels, sampleFormat: sampleFormat, framesPerPeriod: frames)
                var periods: [(sequence: UInt64, samples: [Float])] = []
                var accounted: UInt64?
                while periods.count < 60 {
                    guard case .success(let (response, _)) = try await stream.next() else {
                        Issue.record("the stream ended")
                        return
                    }
                    switch response.kind {
                    case .frame(let frame):
                        if let accounted { #expect(frame.sequence == accounted + 1, "period \(frame.sequence) after \(accounted)") }
                        accounted = frame.sequence
                        #expect(frame.bytesUsed == UInt64(layout.capacity) && frame.data.count == layout.capacity)
                        let samples = frame.data.withUnsafeBytes { sampleFormat.floats(in: $0) }
                        // The first channel's samples.
                        periods.append((frame.sequence, stride(from: 0, to: samples.count, by: channels).map { samples[$0] }))
                    case .dropped(let dropped):
                        if let last = accounted { #expect(dropped.lastSequence == last + UInt64(dropped.count)) }
                        accounted = dropped.lastSequence
                    default:
                        Issue.record("unexpected \(response)")
                    }
                }
                // The longest run without a gap decodes in order, each block where its number puts it.
                let run = periods.enumerated().prefix { $0.element.sequence == periods[0].sequence + UInt64($0.offset) }
                let samples = run.flatMap(\.element.samples)
                let blocks = AudioStamp.decode(samples, sampleRate: rate)
                #expect(blocks.count >= samples.count * 48_000 / rate / 960 - 2, "\(blocks.count) blocks in \(samples.count) samples")
                #expect(zip(blocks, blocks.dropFirst()).allSatisfy { $1.number == $0.number + 1 })
                let start = Int(periods[0].sequence) * frames
                for block in blocks {
                    let place = Double(block.number) * 960 * Double(rate) / 48_000
                    #expect(abs(Double(start + block.offset) - place) <= 34, "\(block) from frame \(start)")
                }
            }
        }
    }

    @Test func whatTheMicrophoneDoesNotOfferIsRefusedSayingWhatItDoes() async throws {
        try await withRunningDaemon(arguments: Self.microphoneArguments) { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            let cases: [(Camerad_V1_AudioFormat, String)] = [
                (Self.format(12_345, 0, .unspecified, 0), "44100"),
                (Self.format(0, 9, .unspecified, 0), "1 to 2"),
                (Self.format(48_000, 0, .unspecified, 48_000), "500 ms"),
                (Self.format(48_000, 0, .unspecified, 10), "48 to 24000"),
                (Self.format(0, 0, Camerad_V1_SampleFormat(rawValue: 9)!, 0), "sample_format 9"),
            ]
            for (index, (format, names)) in cases.enumerated() {
                let stream = try await RawStream(raw, callID: UInt64(20 + index))
                try await stream.send(Self.open("virtual-microphone-0", format))
                let error = try await stream.end()
                #expect(error.code == .invalidArgument && error.message.contains(names), "\(error)")
            }
            var video = Self.open("virtual-microphone-0", Self.format(0, 0, .unspecified, 0))
            video.open.settings.pixelFormat = .nv12
            let stream = try await RawStream(raw, callID: 40)
            try await stream.send(video)
            let error = try await stream.end()
            #expect(error.code == .invalidArgument && error.message.contains("is a microphone"), "\(error)")
        }
    }

    /// A virtual microphone hearing a 1 kHz tone of peak 0.5: its RMS is
    /// 0.354, −9.03 dBFS, its peak −6.02 dBFS, on both channels.
    @Test func levelsAreAKnownTones() async throws {
        try await withRunningDaemon { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            var add = Camerad_V1_AddVirtualCameraRequest()
            add.mediaType = .audio
            add.toneAmplitude = 0.5
            let (added, status) = try await raw.call(CameraService.addVirtualCamera.name, request: try add.serializedBytes())
            #expect(status.code == .ok, "\(status.message)")
            let microphone = try Camerad_V1_AddVirtualCameraResponse(serializedBytes: try #require(added.first)).device
            #expect(microphone.uniqueID == "virtual-microphone-0" && microphone.mediaType == .audio)
            // A tone and the sync clicks are two signals: one microphone hears one.
            add.syncMarks = true
            let (_, both) = try await raw.call(CameraService.addVirtualCamera.name, request: try add.serializedBytes())
            #expect(both.code == .invalidArgument && both.message.contains("ask for one"), "\(both.message)")

            var watch = Camerad_V1_WatchAudioLevelsRequest()
            watch.uniqueID = microphone.uniqueID
            try await raw.send(EnvelopeCodec.start(callID: 50, method: CameraService.watchAudioLevels.name,
                                                   request: try watch.serializedBytes()))
            var readings: [Camerad_V1_AudioLevels] = []
            while readings.count < 15, let envelope = try await raw.receive() {
                guard envelope.callID == 50, case .message(let message) = envelope.kind else {
                    Issue.record("unexpected \(envelope)")
                    return
                }
                readings.append(try Camerad_V1_AudioLevels(serializedBytes: message.payload))
            }
            #expect(zip(readings, readings.dropFirst()).allSatisfy { $1.timestampNs > $0.timestampNs })
            // After the first 100 ms the average covers only the tone; after a second the peak too.
            let last = try #require(readings.last)
            #expect(last.channels.count == 2)
            for channel in last.channels {
                #expect(abs(channel.averagePowerLevel - -9.03) <= 0.5, "\(channel)")
                #expect(abs(channel.peakHoldLevel - -6.02) <= 0.5, "\(channel)")
            }

            var watchCamera = Camerad_V1_WatchAudioLevelsRequest()
            watchCamera.uniqueID = "virtual-0"
            let (_, refused) = try await raw.call(CameraService.watchAudioLevels.name, request: try watchCamera.serializedBytes())
            #expect(refused.code == .invalidArgument && refused.message.contains("camera"))
        }
    }
}

/// Hostile listeners of a microphone: hoarders, a ring that makes no sense, a
/// greedy request; a bystander hears on, every period accounted for.
@Suite struct MicrophoneHostileTests {
    /// Twenty listeners hold all the periods they may (16 each) and never give
    /// one back: the microphone's pool grows for them (their owners' budgets
    /// pay), and a newcomer of the same format still hears every period.
    @Test func hoardingListenersCannotStarveANewcomer() async throws {
        try await withRunningDaemon(virtualCameras: 0, arguments: ["--virtual-microphones", "1"]) { daemon in
            var hoarders: [PoolReader] = []
            defer { hoarders.forEach { $0.close() } }
            for index in 0..<20 {
                let hoarder = try await PoolReader(daemon, device: "virtual-microphone-0", name: "hoarder-\(index)", framesInFlight: 16,
                                                   audio: Camerad_V1_AudioFormat(), check: PoolReader.anyBytes)
                let held = try await hoarder.read(16, releasing: false)
                #expect(held.count == 16)
                hoarders.append(hoarder)
            }
            let newcomer = try StreamReport(try await camctl(["listen", "--duration", "2", "--check", "--json"],
                                                             socket: daemon.socketPath, timeout: .seconds(120)))
            print("hostile: twenty hoarding listeners; a newcomer: \(newcomer); \(String(describing: newcomer.audioCheck))")
            #expect(newcomer.frames >= 10 && newcomer.accountsForEveryFrame, "\(newcomer)")
            #expect(newcomer.drops["outOfBuffers"] == 0, "no period of the newcomer's is lost to the hoarders")
            #expect(newcomer.audioCheck?.outOfOrder == 0 && newcomer.audioCheck?.misplaced == 0)
            #expect(!daemon.hasExited)
        }
    }

    @Test(.timeLimit(.minutes(4))) func aReleaseRingThatMakesNoSenseEndsThatListenerAlone() async throws {
        try await withRunningDaemon(virtualCameras: 0, arguments: ["--virtual-microphones", "1"]) { daemon in
            let bystander = try await PoolReader(daemon, device: "virtual-microphone-0", name: "bystander", releaseRing: true,
                                                 audio: Camerad_V1_AudioFormat(), check: PoolReader.anyBytes)
            defer { bystander.close() }
            let hostile = try await PoolReader(daemon, device: "virtual-microphone-0", name: "hostile", releaseRing: true,
                                               audio: Camerad_V1_AudioFormat(), check: PoolReader.anyBytes)
            defer { hostile.close() }
            _ = try await hostile.read(3)
            // A head far beyond anything written; it releases nothing more (a release would write the head again).
            try #require(hostile.ring).memory.baseAddress.storeBytes(of: UInt64(1) << 40, as: UInt64.self)
            let error = await #expect(throws: RPCError.self) {
                while try await hostile.nextMessage() != nil {}
            }
            #expect(error?.code == .invalidArgument && error?.message.contains("release ring") == true, "\(String(describing: error))")
            let periods = try await bystander.read(50)
            #expect(zip(periods, periods.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "the other listener never noticed")
        }
    }

    /// A microphone removed while heard (as if unplugged): its listeners and
    /// levels watchers end with DEVICE_DISCONNECTED, after what they got.
    @Test(.timeLimit(.minutes(4))) func aMicrophoneThatGoesEndsItsListenersWithDeviceDisconnected() async throws {
        try await withRunningDaemon(virtualCameras: 0, arguments: ["--virtual-microphones", "1"]) { daemon in
            let listener = try await PoolReader(daemon, device: "virtual-microphone-0", name: "listener",
                                                audio: MicrophoneProtocolTests.format(16_000, 1, .s16, 160), check: PoolReader.anyBytes)
            defer { listener.close() }
            _ = try await listener.read(5)
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            var watch = Camerad_V1_WatchAudioLevelsRequest()
            watch.uniqueID = "virtual-microphone-0"
            try await raw.send(EnvelopeCodec.start(callID: 70, method: CameraService.watchAudioLevels.name, request: try watch.serializedBytes()))
            var remove = Camerad_V1_RemoveVirtualCameraRequest()
            remove.uniqueID = "virtual-microphone-0"
            let removal = try RawProtocolClient(path: daemon.socketPath)
            try await removal.hello()
            let (_, removed) = try await removal.call(CameraService.removeVirtualCamera.name, request: try remove.serializedBytes())
            #expect(removed.code == .ok, "\(removed.message)")
            let error = await #expect(throws: RPCError.self) {
                while try await listener.nextMessage() != nil {}
            }
            #expect(error?.reason == .deviceDisconnected, "\(String(describing: error))")
            var levelsEnd: Camerad_V1_Status?
            while levelsEnd == nil, let envelope = try await raw.receive() {
                if envelope.callID == 70, case .end(let end) = envelope.kind { levelsEnd = end.status }
            }
            #expect(levelsEnd?.reason == .deviceDisconnected, "\(String(describing: levelsEnd))")
        }
    }

    @Test func greedyRequestsAreRefusedSayingWhatIsAllowed() async throws {
        try await withRunningDaemon(virtualCameras: 0, arguments: ["--virtual-microphones", "1"]) { daemon in
            let raw = try RawProtocolClient(path: daemon.socketPath)
            try await raw.hello()
            var tooMany = MicrophoneProtocolTests.open("virtual-microphone-0", Camerad_V1_AudioFormat())
            tooMany.open.settings.maxFramesInFlight = 20
            var huge = MicrophoneProtocolTests.open("virtual-microphone-0", Camerad_V1_AudioFormat())
            huge.open.audio.periodFrames = 1_000_000
            for (index, (request, names)) in [(tooMany, "1 to 16"), (huge, "500 ms")].enumerated() {
                let stream = try await RawStream(raw, callID: UInt64(60 + index))
                try await stream.send(request)
                let error = try await stream.end()
                #expect(error.code == .invalidArgument && error.message.contains(names), "\(error)")
            }
        }
    }
}

extension MicrophoneProtocolTests {
    /// The audio suites' leak check, as the video suites' (`StreamingTests`):
    /// thirty clients that each listen in a resampled layout and watch the
    /// levels, then go — after the first (glibc's arenas, the user's frame
    /// signal, kept while camerad runs), camerad's threads, descriptors and
    /// memory are where they were: every variant, meter, pool and worker went
    /// with its last listener.
    @Test(.timeLimit(.minutes(4))) func listenersThatComeAndGoLeaveNothingBehindInTheDaemon() async throws {
        try await withRunningDaemon(virtualCameras: 0, arguments: ["--virtual-microphones", "1"],
                                    environment: DaemonFootprint.allocatorWithoutCaches) { daemon in
            func listenAndWatch() async throws {
                let raw = try RawProtocolClient(path: daemon.socketPath)
                try await raw.hello()
                let stream = try await RawStream(raw, callID: 7)
                try await stream.send(Self.open("virtual-microphone-0", Self.format(16_000, 1, .s16, 160)))
                let period = try await stream.next()
                #expect((try? period.get().0.started) != nil, "\(period)")
                var levels = Camerad_V1_WatchAudioLevelsRequest()
                levels.uniqueID = "virtual-microphone-0"
                try await raw.send(EnvelopeCodec.start(callID: 9, method: CameraService.watchAudioLevels.name, request: try levels.serializedBytes()))
                // More readings may come before the cancel lands.
                #expect(try await raw.outcome(of: 9, cancelAfter: 1).responses >= 1, "a reading")
            }
            let idle = DaemonFootprint(daemon)
            try await listenAndWatch()
            let baseline = await DaemonFootprint.quiet(daemon, threadsOf: idle)
            for _ in 0..<30 { try await listenAndWatch() }
            let after = await DaemonFootprint.settling(daemon, to: baseline)
            print("thirty listeners and watchers came and went: \(after), from \(baseline)")
            #expect(after.isBack(to: baseline), "\(after) from \(baseline)")
        }
    }
}
