import CameraMedia
import CameraTestSupport
import CaptureKit
import Foundation
import Glibc
import Testing

extension CaptureKitEndToEnd {
/// The conformance scenarios every client proves (Clients/CONFORMANCE.md), as
/// CaptureKit does them. The C library's are `Clients/c/tests/conformance.c`,
/// the Python package's `Clients/python/tests/test_conformance.py`.
@Suite struct ConformanceTests {
    /// The stamp a virtual camera drew into a frame, read from its bytes.
    static func stamp(of sample: SampleBuffer) throws -> FrameStampDecoder.Result {
        let pixels = try #require(sample.imageBuffer)
        let stride = pixels.pixelFormatType == kCVPixelFormatType_422YpCbCr8_yuvs ? 2 : 1
        return try pixels.withUnsafeBytes {
            FrameStampDecoder.decode(luma: $0, width: pixels.width, height: pixels.height, bytesPerRow: pixels.bytesPerRow,
                                     pixelStride: stride)
        }
    }

    /// The frame's stamp names the frame: its sequence number and capture time.
    static func isIntact(_ sample: SampleBuffer) throws -> Bool {
        try stamp(of: sample).stamp == FrameStamp(sequence: UInt32(truncatingIfNeeded: sample.sequenceNumber),
                                                  timestampNanoseconds: sample.presentationTimeStamp.value)
    }

    @Test("conformance: discover_and_filter") func discoverAndFilter() async throws {
        try await withCaptureKitDaemon { _ in
            let all = try await CaptureDevice.devices()
            #expect(all.map(\.uniqueID) == ["virtual-0", "virtual-1"])
            let back = CaptureDevice.DiscoverySession(deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video,
                                                      position: .back)
            let backDevices = try await back.devices
            #expect(backDevices.map(\.uniqueID) == ["virtual-1"])
            let external = CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified)
            let externalDevices = try await external.devices
            #expect(externalDevices.isEmpty)
        }
    }

    @Test("conformance: info_agrees_with_camctl") func infoAgreesWithCamctl() async throws {
        try await withCaptureKitDaemon { daemon in
            let device = try await CaptureDevice.matching("virtual-0")
            let result = try await camctl(["info", "virtual-0", "--json"], socket: daemon.socketPath)
            let info = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
            #expect(info["localizedName"] as? String == device.localizedName)
            let formats = try #require(info["formats"] as? [[String: Any]])
            #expect(formats.map { [$0["width"] as? Int, $0["height"] as? Int] }
                == device.formats.map { [Int($0.dimensions.width), Int($0.dimensions.height)] })
            let controls = try #require(info["controls"] as? [[String: Any]])
            #expect(controls.map { $0["id"] as? Int } == device.controls.map { Int($0.id) })
        }
    }

    @Test("conformance: stream_stamps_in_order") func streamStampsInOrder() async throws {
        try await withCaptureKitDaemon { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            try await withStreamingSession(device) { _, _, frames in
                var previous: UInt64?
                var intact = 0
                let count = try await frames.forEachFrame(100) { sample, reported in
                    if try Self.isIntact(sample) { intact += 1 }
                    if let previous {
                        #expect(sample.sequenceNumber > previous, "in order")
                        #expect(Int(sample.sequenceNumber - previous) - 1 == reported, "every number a frame or reported")
                    }
                    previous = sample.sequenceNumber
                }
                #expect(count == 100 && intact == 100)
            }
        }
    }

    @Test("conformance: second_stream_other_variant") func secondStreamOtherVariant() async throws {
        try await withCaptureKitDaemon { _ in
            let device = try await CaptureDevice.matching("virtual-1")
            let small = CaptureVideoDataOutput.VideoSettings(
                pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, width: 320, height: 240)
            try await withStreamingSession(device) { _, _, own in
                try await withStreamingSession(device, configure: { output, _ in output.videoSettings = small }) { _, _, scaled in
                    for _ in 0..<30 {
                        let a = try await own.nextFrame(), b = try await scaled.nextFrame()
                        let bothIntact = try Self.isIntact(a) && Self.isIntact(b)
                        #expect(bothIntact)
                        #expect(a.imageBuffer?.width == 640)
                        #expect(b.imageBuffer?.width == 320 && b.imageBuffer?.height == 240)
                        #expect(b.imageBuffer?.pixelFormatType == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
                    }
                }
            }
        }
    }

    @Test("conformance: drops_reported_when_holding") func dropsReportedWhenHolding() async throws {
        try await withCaptureKitDaemon { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            try await withStreamingSession(device, configure: { output, _ in output.maxFramesInFlight = 1 }) { _, _, frames in
                let held = try await frames.nextFrame()
                // The device makes more while this client holds all it may: each is late for it.
                let captured = try await CaptureDaemon.statistics(for: device).framesCaptured
                #expect(try await waitUntil { try await CaptureDaemon.statistics(for: device).framesCaptured >= captured + 5 })
                held.invalidate()
                var late = 0
                var next: SampleBuffer?
                while next == nil, let sample = await frames.next() {
                    if let reason = sample.attachments.droppedFrameReason {
                        if reason == .frameWasLate { late += sample.attachments.droppedFrameCount }
                    } else {
                        next = sample
                    }
                }
                let after = try #require(next)
                #expect(late >= 3)
                #expect(Int(after.sequenceNumber - held.sequenceNumber) - 1 == late, "exactly the numbers missed")
            }
        }
    }

    @Test("conformance: lock_refused_with_holder_pid") func lockRefusedWithHolderPid() async throws {
        try await withCaptureKitDaemon { daemon in
            let holder = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "lock", "virtual-1"])
            #expect(await holder.wait { $0.lines.contains("locked virtual-1") })
            let pid = holder.process.processIdentifier
            let device = try await CaptureDevice.matching("virtual-1")
            let error = await #expect(throws: CaptureError.self) { try await device.lockForConfiguration() }
            #expect(error?.code == .deviceLocked)
            #expect(error?.message.contains("pid \(pid) ") == true, "\(String(describing: error))")
            try await device.refresh()
            #expect(device.configurationLockHolder?.pid == pid)
            _ = await holder.stop()
            try await device.lockForConfiguration(waitingUpTo: .seconds(10))
            await device.unlockForConfiguration()
        }
    }

    @Test("conformance: record_file_plays") func recordFilePlays() async throws {
        try await withTemporaryDirectory { folder in
            try await withCaptureKitDaemon { _ in
                let (session, output) = try await MovieFileOutputTests.session()
                try await session.start()
                let delegate = MovieFileOutputTests.Delegate()
                let url = URL(fileURLWithPath: folder + "/conformance.mp4")
                output.startRecording(to: url, recordingDelegate: delegate)
                #expect(await waitUntil(timeout: .seconds(60)) { !delegate.events.isEmpty })
                guard case .started = delegate.events.first else {
                    Issue.record("the recording starts: \(delegate.events)")
                    return
                }
                #expect(await waitUntil(timeout: .seconds(60)) { output.recordedDuration.seconds >= 1 })
                output.stopRecording()
                let error = try #require(await delegate.finished())
                #expect(error == nil, "stopped, successfully: \(String(describing: error))")
                let probe = try await runProcess("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                                       "-show_entries", "stream=codec_name,width,nb_read_frames",
                                                                       "-of", "csv=p=0", url.path])
                #expect(probe.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,320,\(output.recordedFrameCount)")
                await session.stopRunning()
            }
        }
    }

    @Test("conformance: record_hand_over") func recordHandOver() async throws {
        try await withTemporaryDirectory { folder in
            try await withCaptureKitDaemon { _ in
                let (session, output) = try await MovieFileOutputTests.session()
                try await session.start()
                let delegate = MovieFileOutputTests.Delegate()
                let (first, second) = (URL(fileURLWithPath: folder + "/first.mp4"), URL(fileURLWithPath: folder + "/second.mp4"))
                output.startRecording(to: first, recordingDelegate: delegate)
                #expect(await waitUntil(timeout: .seconds(60)) { output.recordedDuration.seconds >= 1 })
                try output.handOverRecording(to: second)
                #expect(await waitUntil(timeout: .seconds(60)) { output.outputFileURL == second })
                #expect(await waitUntil(timeout: .seconds(60)) { output.recordedDuration.seconds >= 1 })
                output.stopRecording()
                #expect(await waitUntil(timeout: .seconds(60)) { delegate.events.count >= 4 })
                // CaptureKit has no figures for a handed-over file (AVFoundation has no place for them): the first
                // file plays, the second holds what the output says, and the frames of both are in order.
                var stamps: [UInt32] = []
                for url in [first, second] {
                    let sequences = try await MovieProbe.stamps(url.path, width: 320, height: 240, in: folder).compactMap { $0?.sequence }
                    #expect(!sequences.isEmpty, "\(url.lastPathComponent) plays")
                    if url == second { #expect(sequences.count == output.recordedFrameCount) }
                    stamps += sequences
                }
                #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
                await session.stopRunning()
            }
        }
    }

    @Test("conformance: record_pipe_refused") func recordPipeRefused() async throws {
        try await withTemporaryDirectory { folder in
            try await withCaptureKitDaemon { _ in
                let fifo = folder + "/pipe"
                #expect(mkfifo(fifo, 0o600) == 0)
                let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                defer { close(reader) }
                let (session, output) = try await MovieFileOutputTests.session()
                try await session.start()
                let delegate = MovieFileOutputTests.Delegate()
                output.startRecording(to: URL(fileURLWithPath: fifo), recordingDelegate: delegate)
                let error = try #require(await delegate.finished())
                let refusal = try #require(error as? CaptureError, "\(String(describing: error))")
                #expect(refusal.code == .invalidArgument && refusal.message.contains("a pipe"), "\(refusal)")
                #expect(delegate.events.count == 1, "nothing started")
                #expect(try await CaptureDevice.devices().count == 2, "the connection goes on")
                await session.stopRunning()
            }
        }
    }

    @Test("conformance: photo_decodes_with_exif") func photoDecodesWithExif() async throws {
        try await withCaptureKitDaemon { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let session = CaptureSession()
            let output = CapturePhotoOutput()
            session.addInput(try CaptureDeviceInput(device: device))
            session.addOutput(output)
            let photo = try await output.capturePhoto(with: PhotoSettings(
                maxPhotoDimensions: CMVideoDimensions(width: 640, height: 480)))
            let jpeg = [UInt8](try #require(photo.fileDataRepresentation()))
            #expect(jpeg.starts(with: [0xFF, 0xD8, 0xFF, 0xE1]) && Array(jpeg[6..<12]) == Array("Exif\0\0".utf8))
            let decoded = try JPEGDecoder().decodeGray(jpeg)
            #expect(decoded.width == Int(photo.dimensions.width) && decoded.height == Int(photo.dimensions.height))
            #expect(decoded.width <= 640 && decoded.height <= 480)
            let stamp = decoded.pixels.withUnsafeBytes {
                FrameStampDecoder.decode(luma: $0, width: decoded.width, height: decoded.height, bytesPerRow: decoded.width)
            }
            #expect(stamp.top?.sequence == UInt32(truncatingIfNeeded: photo.sequenceNumber))
        }
    }

    @Test("conformance: unknown_device_error") func unknownDeviceError() async throws {
        try await withCaptureKitDaemon { _ in
            let lookUp = await #expect(throws: CaptureError.self) { _ = try await CaptureDevice.matching("no-such-camera") }
            #expect(lookUp?.code == .deviceNotFound)
            // A stream of a device that is gone: its unique ID is unknown now.
            let device = try await CaptureDaemon.addVirtualCamera(options: .init(pixelFormat: FourCharCode("NV12")))
            try await CaptureDaemon.removeVirtualCamera(uniqueID: device.uniqueID)
            let (session, _) = try sessionWithVideoOutput(device)
            let stream = await #expect(throws: CaptureError.self) { try await session.start() }
            #expect(stream?.code == .deviceNotFound, "\(String(describing: stream))")
        }
    }

    @Test("conformance: bad_argument_error") func badArgumentError() async throws {
        try await withCaptureKitDaemon { _ in
            let device = try await CaptureDevice.matching("virtual-0")
            let (session, output) = try sessionWithVideoOutput(device)
            output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, width: 10000,
                                         height: 10000)
            let error = await #expect(throws: CaptureError.self) { try await session.start() }
            #expect(error?.code == .invalidArgument, "\(String(describing: error))")
            let devices = try await CaptureDevice.devices()
            #expect(devices.count == 2, "the connection goes on")
        }
    }

    @Test("conformance: daemon_gone_interrupts_stream") func daemonGoneInterruptsStream() async throws {
        try await withTemporarySocketPath { path in
            let daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "1"])
            CaptureDaemon.socketPath = path
            defer { CaptureDaemon.disconnect() }
            let device = try await CaptureDevice.matching("virtual-0")
            let (session, output) = try sessionWithVideoOutput(device)
            let events = EventLog(session)
            let frames = FrameReader(output.sampleBuffers)
            try await session.start()
            _ = try await frames.nextFrame()
            #expect(await daemon.stop() == 0)
            #expect(await events.wait(for: ["interrupted daemonNotAvailable", "error shuttingDown", "stopped"]),
                    "events: \(events.names)")
            while await frames.next() != nil {}  // the sequence ends
            let later = await #expect(throws: CaptureError.self) { _ = try await CaptureDevice.devices() }
            #expect(later?.code == .daemonUnavailable)
        }
    }

    @Test("conformance: audio_periods_in_order") func audioPeriodsInOrder() async throws {
        try await withCaptureKitDaemon { _ in
            let microphone = try await CaptureDaemon.addVirtualMicrophone()
            #expect(microphone.hasMediaType(.audio) && microphone.deviceType == .microphone)
            #expect(microphone.audioCapabilities?.native.sampleRate == 48_000)
            let session = CaptureSession()
            session.addInput(try CaptureDeviceInput(device: microphone))
            let output = CaptureAudioDataOutput()
            session.addOutput(output)
            var periods = output.sampleBuffers.makeAsyncIterator()
            try await session.start()
            var previous: UInt64?
            var first: UInt64?
            var broken = false
            var samples: [Float] = []
            var received = 0
            var droppedSince = 0
            while received < 50, let sample = await periods.next() {
                guard let block = sample.dataBuffer else {
                    droppedSince += sample.attachments.droppedFrameCount
                    continue
                }
                #expect(sample.numSamples == 480)
                #expect(sample.formatDescription?.audioStreamBasicDescription?.mChannelsPerFrame == 2)
                if let previous {
                    #expect(sample.sequenceNumber > previous && Int(sample.sequenceNumber - previous) - 1 == droppedSince)
                    broken = broken || sample.sequenceNumber != previous + 1
                }
                droppedSince = 0
                first = first ?? sample.sequenceNumber
                if !broken {
                    let floats = try block.withUnsafeBytes { AudioLayout.SampleFormat.f32.floats(in: $0) }
                    samples += stride(from: 0, to: floats.count, by: 2).map { floats[$0] }
                }
                previous = sample.sequenceNumber
                received += 1
            }
            await session.stopRunning()
            let blocks = AudioStamp.decode(samples, sampleRate: 48_000)
            #expect(blocks.count >= samples.count / 960 - 2)
            for (index, block) in blocks.enumerated() {
                #expect(Int(block.number) * 960 == Int(try #require(first)) * 480 + block.offset, "\(block)")
                if index > 0 { #expect(block.number == blocks[index - 1].number + 1) }
            }
            try await CaptureDaemon.removeVirtualCamera(uniqueID: microphone.uniqueID)
        }
    }

    @Test("conformance: audio_format_refused") func audioFormatRefused() async throws {
        try await withCaptureKitDaemon { _ in
            let microphone = try await CaptureDaemon.addVirtualMicrophone()
            let session = CaptureSession()
            session.addInput(try CaptureDeviceInput(device: microphone))
            let output = CaptureAudioDataOutput()
            session.addOutput(output)
            output.audioSettings = CaptureAudioDataOutput.AudioSettings(sampleRate: 12_345)
            do throws(CaptureError) {
                try await session.start()
                Issue.record("12345 Hz was taken")
            } catch {
                #expect(error.code == .invalidArgument && error.message.contains("44100"), "\(error)")
            }
            #expect(try await CaptureDevice.devices().prefix(2).map(\.uniqueID) == ["virtual-0", "virtual-1"])
            try await CaptureDaemon.removeVirtualCamera(uniqueID: microphone.uniqueID)
        }
    }
}
}
