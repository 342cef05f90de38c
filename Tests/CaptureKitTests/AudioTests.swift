import CameraMedia
import CameraTestSupport
import CaptureKit
import Dispatch
import Foundation
import Synchronization
import Testing

extension CaptureKitEndToEnd {
/// Microphones through CaptureKit as AVFoundation code uses them: found as
/// audio devices, heard through a CaptureAudioDataOutput beside a camera's
/// video in one session, samples read with CoreMedia's functions, levels in
/// the connection's audio channels.
@Suite struct AudioTests {
    static let microphone = ["--virtual-microphones", "1"]

    @Test func aMicrophoneIsAnAudioDevice() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1, arguments: Self.microphone) { _ in
            let microphone = try #require(try await CaptureDevice.default(for: .audio))
            #expect(microphone.uniqueID == "virtual-microphone-0" && microphone.deviceType == .microphone)
            #expect(microphone.hasMediaType(.audio) && !microphone.hasMediaType(.video) && microphone.isVirtual)
            let audio = try #require(microphone.audioCapabilities)
            #expect(audio.native == AudioCapabilities.Format(sampleRate: 48_000, channels: 2, sampleFormat: .float32, framesPerPeriod: 480))
            // Its formats, as AVFoundation lists a microphone's: its own, linear PCM, the active one.
            let format = try #require(microphone.formats.first)
            #expect(microphone.formats.count == 1 && microphone.activeFormat == format && format.mediaType == .audio)
            #expect(format.audioFormat == audio.native && format.mediaSubType == kAudioFormatLinearPCM && format.videoSupportedFrameRateRanges.isEmpty)
            let description = try #require(format.formatDescription.audioStreamBasicDescription)
            #expect(description.mSampleRate == 48_000 && description.mChannelsPerFrame == 2 && description.mBitsPerChannel == 32)
            #expect(description.mFormatFlags & kAudioFormatFlagIsFloat != 0 && format.formatDescription.mediaType == .audio)
            #expect(format.description == "'lpcm' FLOAT_LE 2ch 48000 Hz")
            // Set as it is (seed code re-sets the active format): nothing changes, nothing fails.
            try await microphone.lockForConfiguration()
            microphone.activeFormat = format
            try await microphone.commitConfiguration()
            await microphone.unlockForConfiguration()
            #expect(microphone.activeFormat == format)
            #expect(try await CaptureDevice.default(for: .video)?.formats.allSatisfy { $0.mediaType == .video && $0.audioFormat == nil } == true)
            #expect(audio.sampleRates.contains(44_100) && audio.maxChannels == 2 && audio.sampleFormats.count == 3)
            let session = CaptureDevice.DiscoverySession(deviceTypes: [.microphone], mediaType: .audio, position: .unspecified)
            #expect(try await session.devices.map(\.uniqueID) == ["virtual-microphone-0"])
            #expect(try await CaptureDevice.devices(for: .video).map(\.uniqueID) == ["virtual-0"])
            #expect(try await CaptureDevice.default(for: .video)?.audioCapabilities == nil)
        }
    }

    /// A session with a camera and a microphone, as a recorder sets one up:
    /// frames and periods both arrive, on one clock; the periods are the
    /// format asked in AVFoundation's keys, read through CoreMedia's
    /// functions, and the stamp decodes in order from them; the connection's
    /// channels follow the microphone's levels.
    @Test func aSessionWithACameraAndAMicrophone() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1, arguments: Self.microphone) { _ in
            let camera = try #require(try await CaptureDevice.default(for: .video))
            let microphone = try #require(try await CaptureDevice.default(for: .audio))
            let session = CaptureSession()
            let cameraInput = try CaptureDeviceInput(device: camera)
            let microphoneInput = try CaptureDeviceInput(device: microphone)
            #expect(session.canAddInput(cameraInput))
            session.addInput(cameraInput)
            #expect(session.canAddInput(microphoneInput))
            session.addInput(microphoneInput)
            #expect(!session.canAddInput(try CaptureDeviceInput(device: microphone)), "one microphone per session")
            let video = CaptureVideoDataOutput()
            let audio = CaptureAudioDataOutput()
            session.addOutput(video)
            session.addOutput(audio)
            audio.audioSettings = [AVFormatIDKey: kAudioFormatLinearPCM, AVSampleRateKey: 16_000.0, AVNumberOfChannelsKey: 1,
                                   AVLinearPCMBitDepthKey: 16, AVLinearPCMIsFloatKey: false, AVLinearPCMIsNonInterleaved: false]
            #expect(video.connection(with: .video)?.input === cameraInput && video.connection(with: .audio) == nil)
            let connection = try #require(audio.connection(with: .audio))
            #expect(connection.input === microphoneInput)
            #expect(connection.audioChannels.count == 2 && video.connection(with: .video)?.audioChannels.isEmpty == true)

            let delegate = AudioRecorder()
            audio.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "audio"))
            var frames = video.sampleBuffers.makeAsyncIterator()
            try await session.start()
            let frame = try #require(await frames.next())
            #expect(await waitUntil(timeout: .seconds(60)) { delegate.periods.count >= 100 })
            #expect(await waitUntil(timeout: .seconds(30)) { connection.audioChannels.allSatisfy { $0.averagePowerLevel > -160 } })
            let levels = connection.audioChannels.map { ($0.averagePowerLevel, $0.peakHoldLevel) }
            await session.stopRunning()

            let periods = delegate.periods
            let first = try #require(periods.first)
            #expect(first.description == AudioRecorder.expected, "\(first.description)")
            #expect(periods.allSatisfy { $0.numSamples == 160 && $0.bytes.count == 320 })
            // One clock: the camera's frames and the microphone's periods are stamped on CLOCK_MONOTONIC.
            #expect(abs(frame.presentationTimeStamp.seconds - first.time) < 5, "\(frame.presentationTimeStamp.seconds) and \(first.time)")
            let run = periods.enumerated().prefix { $0.element.sequence == first.sequence + UInt64($0.offset) }.map(\.element)
            let samples = run.flatMap { period in period.bytes.withUnsafeBytes { AudioLayout.SampleFormat.s16.floats(in: $0) } }
            let blocks = AudioStamp.decode(samples, sampleRate: 16_000)
            #expect(blocks.count >= samples.count / 320 - 2)
            #expect(zip(blocks, blocks.dropFirst()).allSatisfy { $1.number == $0.number + 1 })
            #expect(delegate.drops.allSatisfy { $0 > 0 }, "drop reports name the periods they stand for")
            // The stamp: a tone at -20 dBFS under marks that reach -6 dBFS.
            for (average, peak) in levels {
                #expect(average > -30 && average < -3 && peak >= average && peak <= 0, "\(average) \(peak)")
            }
        }
    }

    /// The sample buffer handler (beyond AVFoundation, PipeWire's `process`):
    /// called with every period on one thread, CaptureKit's, as each is read;
    /// its slots go back as it invalidates them, so two in flight keep the
    /// stream going; it gets what a `sampleBuffers` iteration beside it gets,
    /// and nothing once removed.
    @Test func aSampleBufferHandlerHearsEveryPeriodOnTheConnectionThread() async throws {
        try await withCaptureKitDaemon(virtualCameras: 0, arguments: Self.microphone) { _ in
            let microphone = try #require(try await CaptureDevice.default(for: .audio))
            let session = CaptureSession()
            session.addInput(try CaptureDeviceInput(device: microphone))
            let audio = CaptureAudioDataOutput()
            session.addOutput(audio)
            audio.audioSettings = [AVSampleRateKey: 16_000.0, AVNumberOfChannelsKey: 1, AVLinearPCMBitDepthKey: 16, AVLinearPCMIsFloatKey: false]
            audio.maxPeriodsInFlight = 2
            let connection = try #require(audio.connection(with: .audio))
            let recorder = AudioRecorder()
            let threads = Mutex<Set<UInt>>([])
            audio.setSampleBufferHandler { sample in
                threads.withLock { _ = $0.insert(UInt(pthread_self())) }
                if sample.dataBuffer != nil {
                    recorder.captureOutput(audio, didOutput: sample, from: connection)
                } else {
                    recorder.captureOutput(audio, didDrop: sample, from: connection)
                }
                sample.invalidate()
            }
            try await session.start()
            #expect(await waitUntil(timeout: .seconds(60)) { recorder.periods.count >= 200 }, "two in flight, given back: the stream goes on")
            // An iteration beside it: every period it reads, the handler got too.
            var iterator = audio.sampleBuffers.makeAsyncIterator()
            var iterated: [UInt64] = []
            while iterated.count < 20, let sample = await iterator.next() {
                if sample.dataBuffer != nil { iterated.append(sample.sequenceNumber) }
                sample.invalidate()
            }
            audio.setSampleBufferHandler(nil)
            let handled = recorder.periods.count
            var afterwards = 0
            while afterwards < 20, let sample = await iterator.next() {
                if sample.dataBuffer != nil { afterwards += 1 }
                sample.invalidate()
            }
            await session.stopRunning()

            #expect(recorder.periods.count == handled, "nothing after the handler was removed")
            #expect(threads.withLock { $0.count } == 1, "one thread calls it")
            #expect(threads.withLock { $0.contains(UInt(pthread_self())) } == false)
            let sequences = recorder.periods.map(\.sequence)
            #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "in order")
            let missing = Int(sequences.last! - sequences.first!) + 1 - sequences.count
            #expect(missing <= recorder.drops.reduce(0, +), "every period missing was reported dropped")
            #expect(Set(iterated).isSubset(of: Set(sequences)), "what the iteration read, the handler had: \(iterated)")
            #expect(recorder.periods.allSatisfy { $0.numSamples == 160 && $0.description == AudioRecorder.expected })
            let run = recorder.periods.enumerated().prefix { $0.element.sequence == sequences[0] + UInt64($0.offset) }.map(\.element)
            let samples = run.flatMap { period in period.bytes.withUnsafeBytes { AudioLayout.SampleFormat.s16.floats(in: $0) } }
            let blocks = AudioStamp.decode(samples, sampleRate: 16_000)
            #expect(blocks.count >= samples.count / 320 - 2 && zip(blocks, blocks.dropFirst()).allSatisfy { $1.number == $0.number + 1 })
        }
    }

    /// AVAudioSession's input gain, on the device (camerad's virtual
    /// microphone scales what it hears): set under the configuration lock, as
    /// a camera's settings are; a tone of peak 0.5 at gain 0.5 is 6 dB lower in
    /// the levels every process reads. What a microphone cannot take is refused
    /// saying why.
    @Test func aMicrophonesInputGainIsSetUnderTheLockAndHeard() async throws {
        try await withCaptureKitDaemon(virtualCameras: 1) { _ in
            let microphone = try await CaptureDaemon.addVirtualMicrophone(toneAmplitude: 0.5)
            #expect(microphone.isInputGainSettable && microphone.inputGain == 1)
            var levels = try await CaptureDaemon.audioLevels(of: microphone).makeAsyncIterator()
            /// The first reading of a steady average within 0.5 dB of `level` (dBFS), channels alike.
            func average(near level: Float) async throws -> Bool {
                for _ in 0..<100 {
                    guard let reading = try await levels.next() else { return false }
                    if reading.channels.allSatisfy({ abs($0.averagePowerLevel - level) <= 0.5 }) { return true }
                }
                return false
            }
            #expect(try await average(near: -9.03), "a tone of peak 0.5: RMS −9.03 dBFS")

            await #expect(throws: CaptureError.self, "the lock first") { try await microphone.setInputGain(0.5) }
            try await microphone.lockForConfiguration()
            try await microphone.setInputGain(0.5)
            #expect(microphone.inputGain == 0.5)
            #expect(try await average(near: -9.03 - 6.02), "half the gain, 6 dB less, as every listener hears it")

            do throws(CaptureError) {
                try await microphone.setInputGain(1.5)
                Issue.record("1.5 was taken")
            } catch {
                #expect(error.code == .invalidArgument && error.message.contains("input_gain 1.5 is out of range"), "\(error)")
            }
            var torch = CaptureDevice.Configuration()
            torch.torchMode = .on
            do throws(CaptureError) {
                try await microphone.configure(torch)
                Issue.record("a microphone took a torch")
            } catch {
                #expect(error.code == .invalidArgument && error.message.contains("input_gain is the one setting"), "\(error)")
            }
            await microphone.unlockForConfiguration()

            let camera = try #require(try await CaptureDevice.default(for: .video))
            #expect(!camera.isInputGainSettable)
            try await camera.lockForConfiguration()
            do throws(CaptureError) {
                try await camera.setInputGain(0.5)
                Issue.record("a camera took an input gain")
            } catch {
                #expect(error.code == .invalidArgument && error.message.contains("microphone's setting"), "\(error)")
            }
            await camera.unlockForConfiguration()
        }
    }

    @Test func audioSettingsCaptureKitCannotGiveAreRefusedNamingThem() async throws {
        try await withCaptureKitDaemon(virtualCameras: 0, arguments: Self.microphone) { _ in
            let microphone = try #require(try await CaptureDevice.default(for: .audio))
            for (settings, named) in [
                ([AVLinearPCMIsNonInterleaved: true], "AVLinearPCMIsNonInterleaved"),
                ([AVFormatIDKey: UInt32(0x6161_6320)], "AVFormatIDKey"),
                ([AVLinearPCMBitDepthKey: 24], "AVLinearPCMBitDepthKey 24"),
                (["AVEncoderBitRateKey": 128_000], "AVEncoderBitRateKey"),
            ] as [(CaptureAudioDataOutput.AudioSettings, String)] {
                let session = CaptureSession()
                session.addInput(try CaptureDeviceInput(device: microphone))
                let audio = CaptureAudioDataOutput()
                session.addOutput(audio)
                audio.audioSettings = settings
                do throws(CaptureError) {
                    try await session.start()
                    Issue.record("\(named) was taken")
                } catch {
                    #expect(error.code == .unsupportedFormat && error.message.contains(named), "\(error)")
                }
            }
            let session = CaptureSession()
            session.addInput(try CaptureDeviceInput(device: microphone))
            let audio = CaptureAudioDataOutput()
            session.addOutput(audio)
            audio.audioSettings = CaptureAudioDataOutput.AudioSettings(sampleRate: 12_345)
            do throws(CaptureError) {
                try await session.start()
                Issue.record("12345 Hz was taken")
            } catch {
                #expect(error.code == .invalidArgument && error.message.contains("44100"), "\(error)")
            }
        }
    }
}
}

/// An audio delegate that keeps what it is given: each period's bytes copied
/// through CoreMedia's functions, and the drops.
final class AudioRecorder: CaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable {
    struct Period {
        let sequence: UInt64
        let time: Double
        let numSamples: Int
        let bytes: [UInt8]
        let description: String
    }

    static let expected = "lpcm 16000.0 Hz 1ch 16 bits, flags 12, 2 bytes a frame"

    private let received = Mutex<(periods: [Period], drops: [Int])>(([], []))
    var periods: [Period] { received.withLock { $0.periods } }
    var drops: [Int] { received.withLock { $0.drops } }

    func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        guard let block = CMSampleBufferGetDataBuffer(sampleBuffer),
              let format = CMSampleBufferGetFormatDescription(sampleBuffer),
              let description = CMAudioFormatDescriptionGetStreamBasicDescription(format)?.pointee else { return }
        var length = 0
        var pointer: UnsafeMutablePointer<CChar>?
        guard CMBlockBufferGetDataPointer(block, atOffset: 0, lengthAtOffsetOut: nil, totalLengthOut: &length,
                                          dataPointerOut: &pointer) == kCMBlockBufferNoErr, let pointer else { return }
        let bytes = Array(UnsafeRawBufferPointer(start: pointer, count: length))
        let text = "lpcm \(description.mSampleRate) Hz \(description.mChannelsPerFrame)ch \(description.mBitsPerChannel) bits, "
            + "flags \(description.mFormatFlags), \(description.mBytesPerFrame) bytes a frame"
        let period = Period(sequence: sampleBuffer.sequenceNumber, time: CMSampleBufferGetPresentationTimeStamp(sampleBuffer).seconds,
                            numSamples: CMSampleBufferGetNumSamples(sampleBuffer), bytes: bytes,
                            description: description.mFormatID == kAudioFormatLinearPCM ? text : "not PCM")
        received.withLock { $0.periods.append(period) }
    }

    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        received.withLock { $0.drops.append(sampleBuffer.attachments.droppedFrameCount) }
    }
}
