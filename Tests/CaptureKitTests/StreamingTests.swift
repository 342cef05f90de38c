import CYUV
import CameraMedia
import CameraTestSupport
import CaptureKit
import Foundation
import Testing

/// The frame a virtual camera of `layout` made for a sample: re-drawn from the
/// sequence number and timestamp the sample carries.
func sourceFrame(of sample: SampleBuffer, width: Int = 640, height: Int = 480) -> [UInt8] {
    let pattern = TestPattern(width: width, height: height)
    var frame = [UInt8](repeating: 0, count: pattern.frameSize(.nv12))
    let stamp = FrameStamp(sequence: UInt32(truncatingIfNeeded: sample.sequenceNumber),
                           timestampNanoseconds: sample.presentationTimeStamp.value)
    frame.withUnsafeMutableBytes { pattern.render(stamp, format: .nv12, into: $0) }
    return frame
}

/// The bytes of a sample's frame.
func bytes(of sample: SampleBuffer) throws -> [UInt8] {
    let pixels = try #require(sample.imageBuffer)
    return try pixels.withUnsafeBytes { Array($0) }
}

/// Runs a session on `device` with one video data output set up by `configure`,
/// hands `body` its frames, then stops it.
func withStreamingSession<T>(
    _ device: CaptureDevice, preset: SessionPreset = .inputPriority,
    configure: (CaptureVideoDataOutput, CaptureConnection) -> Void = { _, _ in },
    _ body: (CaptureSession, CaptureVideoDataOutput, FrameReader) async throws -> T
) async throws -> T {
    let session = CaptureSession()
    let output = CaptureVideoDataOutput()
    session.beginConfiguration()
    session.addInput(try CaptureDeviceInput(device: device))
    session.addOutput(output)
    session.sessionPreset = preset
    configure(output, try #require(output.connection(with: .video)))
    session.commitConfiguration()
    let frames = FrameReader(output.sampleBuffers)
    try await session.start()
    do {
        let result = try await body(session, output, frames)
        await session.stopRunning()
        return result
    } catch {
        await session.stopRunning()
        throw error
    }
}

/// A session with `device` as its input and one video data output.
func sessionWithVideoOutput(_ device: CaptureDevice) throws -> (CaptureSession, CaptureVideoDataOutput) {
    let session = CaptureSession()
    let output = CaptureVideoDataOutput()
    session.addInput(try CaptureDeviceInput(device: device))
    session.addOutput(output)
    return (session, output)
}

/// libyuv's own conversions of an NV12 640x480 frame, to compare with what the daemon sent.
enum Reference {
    /// Video range (Y 16–235, Cb/Cr 16–240) stretched to 0–255, as CoreVideo's '420f' has NV12.
    static func fullRange(_ nv12: [UInt8], _ w: Int, _ h: Int) -> [UInt8] {
        nv12.enumerated().map { index, value in
            let v = Double(value)
            let full = index < w * h ? (v - 16) * 255 / 219 : 128 + (v - 128) * 255 / 224
            return UInt8(clamping: Int(full.rounded()))
        }
    }

    static func i420(_ nv12: [UInt8], _ w: Int, _ h: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: w * h * 3 / 2)
        nv12.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                let o = d.baseAddress!
                _ = NV12ToI420(s.baseAddress, Int32(w), s.baseAddress! + w * h, Int32(w),
                               o, Int32(w), o + w * h, Int32(w / 2), o + w * h * 5 / 4, Int32(w / 2), Int32(w), Int32(h))
            }
        }
        return out
    }

    static func yuyv(_ nv12: [UInt8], _ w: Int, _ h: Int) -> [UInt8] {
        let planar = i420(nv12, w, h)
        var out = [UInt8](repeating: 0, count: w * h * 2)
        planar.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                let p = s.baseAddress!
                _ = I420ToYUY2(p, Int32(w), p + w * h, Int32(w / 2), p + w * h * 5 / 4, Int32(w / 2), d.baseAddress, Int32(w * 2), Int32(w), Int32(h))
            }
        }
        return out
    }

    static func bgra(_ nv12: [UInt8], _ w: Int, _ h: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: w * h * 4)
        nv12.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                _ = NV12ToARGB(s.baseAddress, Int32(w), s.baseAddress! + w * h, Int32(w), d.baseAddress, Int32(w * 4), Int32(w), Int32(h))
            }
        }
        return out
    }

    /// kCVPixelFormatType_32ARGB: BGRA's bytes the other way round (A, R, G, B).
    static func argb(_ nv12: [UInt8], _ w: Int, _ h: Int) -> [UInt8] {
        let bgra = bgra(nv12, w, h)
        return stride(from: 0, to: bgra.count, by: 4).flatMap { bgra[$0..<$0 + 4].reversed() }
    }

    static func scaled(_ nv12: [UInt8], _ w: Int, _ h: Int, to ow: Int, _ oh: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: ow * oh * 3 / 2)
        nv12.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                _ = NV12Scale(s.baseAddress, Int32(w), s.baseAddress! + w * h, Int32(w), Int32(w), Int32(h),
                              d.baseAddress, Int32(ow), d.baseAddress! + ow * oh, Int32(ow), Int32(ow), Int32(oh), kFilterBilinear)
            }
        }
        return out
    }
}

func meanAbsoluteDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
    guard a.count == b.count, !a.isEmpty else { return .infinity }
    var total = 0
    for index in a.indices { total += abs(Int(a[index]) - Int(b[index])) }
    return Double(total) / Double(a.count)
}

extension CaptureKitEndToEnd {
@Suite struct StreamingTests {
    /// An NV12 640x480 virtual camera at 30 fps, in a fresh daemon.
    func withCamera<T>(
        fps: Int = 30, environment: [String: String] = [:], _ body: (CaptureDevice, DaemonProcess) async throws -> T
    ) async throws -> T {
        try await withCaptureKitDaemon(virtualCameras: 0, environment: environment) { daemon in
            let device = try await CaptureDaemon.addVirtualCamera(options: .init(
                pixelFormat: FourCharCode("NV12"), width: 640, height: 480, frameDuration: CMTime(value: 1, timescale: Int32(fps))))
            return try await body(device, daemon)
        }
    }

    @Test func everyOutputFormatMatchesLibyuvsConversionOfTheSameFrame() async throws {
        try await withCamera { device, _ in
            let cases: [(OSType?, Int?, Int?, ([UInt8]) -> [UInt8], exact: Bool)] = [
                (nil, nil, nil, { $0 }, true),
                (kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, nil, { $0 }, true),
                (kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, nil, nil, { Reference.fullRange($0, 640, 480) }, true),
                (kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, 320, 240,
                 { Reference.fullRange(Reference.scaled($0, 640, 480, to: 320, 240), 320, 240) }, true),
                (kCVPixelFormatType_420YpCbCr8Planar, nil, nil, { Reference.i420($0, 640, 480) }, true),
                (kCVPixelFormatType_422YpCbCr8_yuvs, nil, nil, { Reference.yuyv($0, 640, 480) }, true),
                (kCVPixelFormatType_32BGRA, nil, nil, { Reference.bgra($0, 640, 480) }, true),
                (kCVPixelFormatType_32ARGB, nil, nil, { Reference.argb($0, 640, 480) }, false),
                (kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, 320, 240, { Reference.scaled($0, 640, 480, to: 320, 240) }, true),
                (kCVPixelFormatType_32BGRA, 320, 240, { Reference.bgra(Reference.scaled($0, 640, 480, to: 320, 240), 320, 240) }, false),
            ]
            for (type, width, height, reference, exact) in cases {
                try await withStreamingSession(device, configure: { output, _ in
                    output.videoSettings = .init(pixelFormatType: type, width: width, height: height)
                }) { _, _, frames in
                    for _ in 0..<3 {
                        let sample = try await frames.nextFrame()
                        let pixels = try #require(sample.imageBuffer)
                        #expect(pixels.width == (width ?? 640) && pixels.height == (height ?? 480))
                        #expect(pixels.pixelFormatType == type ?? kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
                        let received = try bytes(of: sample)
                        let expected = reference(sourceFrame(of: sample))
                        if exact {
                            #expect(received == expected, "\(pixels)")
                        } else {
                            #expect(meanAbsoluteDifference(received, expected) < 1.5, "\(pixels)")
                        }
                        let format: PixelFormat = switch pixels.pixelFormatType {
                        case kCVPixelFormatType_420YpCbCr8Planar: .i420
                        case kCVPixelFormatType_422YpCbCr8_yuvs: .yuyv
                        case kCVPixelFormatType_32BGRA: .bgra
                        case kCVPixelFormatType_32ARGB: .argb
                        default: .nv12
                        }
                        let stamp = received.withUnsafeBytes {
                            FrameStampDecoder.decode(frame: $0, format: format, width: pixels.width, height: pixels.height)
                        }
                        #expect(stamp.stamp?.sequence == UInt32(truncatingIfNeeded: sample.sequenceNumber), "the bands name the frame")
                    }
                }
            }
        }
    }

    /// Every luma pixel of a turned, mirrored frame is where the connection says.
    @Test func orientationAndMirroringTurnFramesAsAsked() async throws {
        try await withCamera { device, _ in
            for orientation in CaptureConnection.VideoOrientation.allCases {
                for mirrored in [false, true] {
                    try await withStreamingSession(device, configure: { output, connection in
                        output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_420YpCbCr8Planar)
                        connection.videoOrientation = orientation
                        connection.isVideoMirrored = mirrored
                    }) { _, _, frames in
                        let sample = try await frames.nextFrame()
                        let pixels = try #require(sample.imageBuffer)
                        let turned = orientation == .portrait || orientation == .portraitUpsideDown
                        #expect((pixels.width, pixels.height) == (turned ? (480, 640) : (640, 480)))
                        let received = try bytes(of: sample)
                        let source = sourceFrame(of: sample)
                        let (w, h, ow) = (640, 480, pixels.width)
                        var wrong = 0
                        for v in stride(from: 0, to: pixels.height, by: 7) {
                            for u in stride(from: 0, to: pixels.width, by: 5) {
                                let m = mirrored ? ow - 1 - u : u
                                let (x, y): (Int, Int) = switch orientation {
                                case .landscapeRight: (m, v)
                                case .portrait: (v, h - 1 - m)
                                case .landscapeLeft: (w - 1 - m, h - 1 - v)
                                case .portraitUpsideDown: (w - 1 - v, m)
                                }
                                if received[v * ow + u] != source[y * w + x] { wrong += 1 }
                            }
                        }
                        #expect(wrong == 0, "\(orientation) mirrored \(mirrored)")
                    }
                }
            }
        }
    }

    @Test func twoStreamsOfOneVariantShareOneConversionAndAnotherVariantGetsItsOwn() async throws {
        try await withCamera { device, _ in
            let nv12 = CaptureVideoDataOutput.VideoSettings(pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            let bgra = CaptureVideoDataOutput.VideoSettings(pixelFormatType: kCVPixelFormatType_32BGRA, width: 320, height: 240)
            try await withStreamingSession(device, configure: { output, _ in output.videoSettings = nv12 }) { _, _, a in
                try await withStreamingSession(device, configure: { output, _ in output.videoSettings = nv12 }) { _, _, b in
                    try await withStreamingSession(device, configure: { output, _ in output.videoSettings = bgra }) { _, _, c in
                        for _ in 0..<20 {
                            _ = try await a.nextFrame()
                            _ = try await b.nextFrame()
                            _ = try await c.nextFrame()
                        }
                        let statistics = try await CaptureDaemon.statistics(for: device)
                        #expect(statistics.streams == 3)
                        #expect(statistics.variants.count == 2)
                        let shared = try #require(statistics.variants.first { $0.pixelFormat == FourCharCode("NV12") })
                        let own = try #require(statistics.variants.first { $0.pixelFormat == FourCharCode("AR24") })
                        #expect(shared.streams == 2 && own.streams == 1)
                        #expect(shared.poolID != own.poolID)
                        #expect(shared.framesMade <= statistics.framesCaptured, "made once per frame, not once per stream")
                        #expect(shared.framesMade >= 20)
                        #expect(own.conversions <= statistics.framesCaptured && own.conversions >= 20)
                    }
                }
            }
        }
    }

    @Test func inlineDeliveryCarriesTheSameFrames() async throws {
        try await withCamera { device, _ in
            try await withStreamingSession(device, configure: { output, _ in
                output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_32BGRA)
                output.delivery = .inline
            }) { _, _, frames in
                for _ in 0..<5 {
                    let sample = try await frames.nextFrame()
                    #expect(try bytes(of: sample) == Reference.bgra(sourceFrame(of: sample), 640, 480))
                }
            }
        }
    }

    /// Frames in order, each number between two of them in a drop report that
    /// came between them (a loaded machine may make this client late), and
    /// capture timestamps 1/60 s per number apart.
    @Test func framesArriveInOrderAtTheCamerasRateAndEndWhenReleased() async throws {
        try await withCamera(fps: 60) { device, _ in
            try await withStreamingSession(device) { _, _, frames in
                var previous: SampleBuffer?
                let count = await frames.forEachFrame(60) { sample, reported in
                    #expect(abs(sample.duration.seconds - 1.0 / 60) < 1e-6, "durations travel in nanoseconds")
                    if let previous {
                        let step = sample.sequenceNumber - previous.sequenceNumber
                        #expect(step >= 1 && Int(step) - 1 == reported, "in order; \(reported) reported for \(step - 1) missing")
                        let interval = sample.presentationTimeStamp.value - previous.presentationTimeStamp.value
                        #expect(abs(Double(interval) - Double(step) * 1e9 / 60) < 1e3, "capture timestamps are 1/60 s apart")
                    }
                    sample.invalidate()
                    #expect(sample.imageBuffer?.baseAddress == nil, "released buffers have no memory")
                    previous = sample
                }
                #expect(count == 60)
            }
        }
    }

    /// Read in a task that prefers the output's sampleBufferExecutor, frames come
    /// on the thread that read them from the socket (CaptureKit's connection
    /// thread), in order, every sequence number accounted, intact.
    @Test func framesReadOnTheSampleBufferExecutorComeOnTheConnectionThread() async throws {
        func threadName() -> String {
            (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        }
        try await withCamera { device, _ in
            try await withStreamingSession(device) { _, output, frames in
                let (count, threads) = await withTaskExecutorPreference(output.sampleBufferExecutor) {
                    var threads = Set<String>()
                    var previous: UInt64?
                    let count = await frames.forEachFrame(30) { sample, reported in
                        threads.insert(threadName())
                        if let previous {
                            #expect(sample.sequenceNumber == previous + 1 + UInt64(reported), "in order, gaps reported")
                        }
                        previous = sample.sequenceNumber
                        let received = sample.imageBuffer.flatMap { try? $0.withUnsafeBytes { Array($0) } }
                        #expect(received == sourceFrame(of: sample), "frame \(sample.sequenceNumber) intact")
                        sample.invalidate()
                    }
                    return (count, threads)
                }
                #expect(count == 30)
                #expect(threads == ["CaptureKit"])
                #expect(threadName() != "CaptureKit")
            }
        }
    }

    /// Every fourth frame of 60 fps is offered: two frames are never closer, and
    /// exactly four apart unless a drop report came between them (an offered
    /// frame this client was late for, or frames the camera skipped); the three
    /// frames skipped on purpose are not reported.
    @Test func minFrameDurationSkipsFramesInTheDaemon() async throws {
        try await withCamera(fps: 60) { device, _ in
            try await withStreamingSession(device, configure: { output, _ in
                output.minFrameDuration = CMTime(value: 1, timescale: 15)
            }) { _, _, frames in
                var previous: SampleBuffer?
                let count = await frames.forEachFrame(10) { sample, reported in
                    if let previous {
                        let step = sample.sequenceNumber - previous.sequenceNumber
                        #expect(reported == 0 ? step == 4 : step >= 4, "every fourth frame of 60 fps (\(reported) reported)")
                    }
                    previous = sample
                }
                #expect(count == 10)
            }
        }
    }

    @Test func aClientHoldingItsFramesGetsLateDropsAndItsQueueWhenAskedFor() async throws {
        try await withCamera(fps: 60) { device, _ in
            for keep in [false, true] {
                try await withStreamingSession(device, configure: { output, _ in
                    output.alwaysDiscardsLateVideoFrames = !keep
                    output.maxFramesInFlight = 2
                }) { _, _, frames in
                    var held: [SampleBuffer] = []
                    var drops: [SampleBuffer.DroppedFrameReason: Int] = [:]
                    while held.count < 2 || drops.isEmpty {
                        guard let sample = await frames.next() else { break }
                        if let reason = sample.attachments.droppedFrameReason {
                            drops[reason, default: 0] += sample.attachments.droppedFrameCount
                        } else {
                            held.append(sample)
                        }
                        if held.count == 2 && drops.isEmpty {
                            // Five more frames while both are held: the first is late; the
                            // queue of three takes three, the fifth finds it full. Then
                            // release one, so the report can come ahead of the next frame.
                            let captured = try await CaptureDaemon.statistics(for: device).framesCaptured
                            #expect(try await waitUntil { try await CaptureDaemon.statistics(for: device).framesCaptured >= captured + 5 })
                            held.removeFirst().invalidate()
                        }
                    }
                    #expect(drops[keep ? .outOfBuffers : .frameWasLate, default: 0] > 0, "keep late frames: \(keep), drops \(drops)")
                }
            }
        }
    }

    @Test func aDelegateGetsEveryFrameInOrderOnItsQueue() async throws {
        final class Recorder: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
            let queue = DispatchQueue(label: "recorder")
            private(set) var sequences: [UInt64] = []
            private(set) var onQueue = true
            let done = AsyncStream<Void>.makeStream()

            func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
                dispatchPrecondition(condition: .onQueue(queue))
                sequences.append(sampleBuffer.sequenceNumber)
                if sequences.count == 30 { done.continuation.yield() }
            }
        }
        try await withCamera(fps: 60) { device, _ in
            let recorder = Recorder()
            // Delegate only: an unread sampleBuffers sequence would hold the frames.
            let (session, output) = try sessionWithVideoOutput(device)
            output.setSampleBufferDelegate(recorder, queue: recorder.queue)
            #expect(output.sampleBufferDelegate === recorder)
            try await session.start()
            var done = recorder.done.stream.makeAsyncIterator()
            await done.next()
            await session.stopRunning()
            let sequences = recorder.queue.sync { recorder.sequences }
            #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 })
            #expect(sequences.count >= 30)
        }
    }

    /// A delegate that records what it gets, keeping the frames while asked to.
    final class KeepingRecorder: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        let queue = DispatchQueue(label: "keeping recorder")
        var keeping = false
        private(set) var kept: [SampleBuffer] = []
        /// Frames and drop reports in order: (sequence, frames it stands for, is a frame).
        private(set) var log: [(sequence: UInt64, count: Int, frame: Bool)] = []

        func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
            log.append((sampleBuffer.sequenceNumber, 1, true))
            if keeping { kept.append(sampleBuffer) }
        }

        func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
            log.append((sampleBuffer.sequenceNumber, sampleBuffer.attachments.droppedFrameCount, false))
        }

        func letGo() { queue.sync { keeping = false; kept.removeAll() } }
        var frames: Int { queue.sync { log.filter(\.frame).count } }
        var droppedFrames: Int { queue.sync { log.filter { !$0.frame }.map(\.count).reduce(0, +) } }
        var entries: [(sequence: UInt64, count: Int, frame: Bool)] { queue.sync { log } }
    }

    /// Issue 16's fourth point: looking at `sampleBuffers` (or iterating it a
    /// little and stopping) does not hold frames back from the delegate.
    @Test func readingSampleBuffersWithoutIteratingLeavesTheDelegateAlone() async throws {
        try await withCamera(fps: 60) { device, _ in
            let recorder = KeepingRecorder()
            let (session, output) = try sessionWithVideoOutput(device)
            output.setSampleBufferDelegate(recorder, queue: recorder.queue)
            _ = output.sampleBuffers
            let unread = output.sampleBuffers
            try await session.start()
            do {
                var frames = unread.makeAsyncIterator()
                _ = await frames.next()
            }  // iteration over: its frames go back
            _ = output.sampleBuffers
            #expect(await waitUntil(timeout: .seconds(60)) { recorder.frames >= 60 }, "the delegate got \(recorder.frames) frames")
            await session.stopRunning()
        }
    }

    /// As AVFoundation's delegate, one that keeps every buffer hears of each
    /// frame it then misses (frameWasLate) as it goes, not silence; once it
    /// lets go, frames come again, and every sequence number is a frame or in a report.
    @Test func aDelegateThatKeepsItsBuffersHearsOfEachFrameItMisses() async throws {
        try await withCamera(fps: 60) { device, _ in
            let recorder = KeepingRecorder()
            recorder.keeping = true
            let (session, output) = try sessionWithVideoOutput(device)
            output.setSampleBufferDelegate(recorder, queue: recorder.queue)
            try await session.start()
            #expect(await waitUntil(timeout: .seconds(60)) { recorder.droppedFrames >= 10 }, "drops reported while holding")
            #expect(recorder.frames == output.maxFramesInFlight, "it holds all it may")
            let held = recorder.frames
            recorder.letGo()
            #expect(await waitUntil(timeout: .seconds(60)) { recorder.frames >= held + 10 }, "frames come again")
            await session.stopRunning()

            // Between two frames, the reports add up to the gap, each within it.
            let entries = recorder.entries
            let firstFrame = try #require(entries.firstIndex { $0.frame })
            var previous = entries[firstFrame].sequence
            var reported = 0
            for entry in entries[(firstFrame + 1)...] {
                if entry.frame {
                    #expect(entry.sequence - previous - 1 == UInt64(reported), "#\(previous) to #\(entry.sequence): \(reported) reported")
                    (previous, reported) = (entry.sequence, 0)
                } else {
                    #expect(entry.sequence > previous, "a report after #\(previous) covers later numbers")
                    reported += entry.count
                }
            }
            #expect(entries.contains { !$0.frame && $0.count == 1 }, "reported frame by frame while held")
        }
    }

    @Test func anOutputNobodyReadsGivesEachFrameBackAsItComes() async throws {
        try await withCamera(fps: 60) { device, _ in
            // No delegate and no sequence: each frame is let go of as it is
            // delivered, on the event loop's thread, inside the stream's delivery.
            let (session, output) = try sessionWithVideoOutput(device)
            try await session.start()
            // With at most three frames held, twenty frames made mean frames went back.
            #expect(await waitUntil {
                ((try? await CaptureDaemon.statistics(for: device))?.variants.first?.framesMade ?? 0) >= 20
            })
            // The connection still works: a sequence asked for now gets frames.
            var frames = output.sampleBuffers.makeAsyncIterator()
            #expect(await frames.next()?.imageBuffer != nil)
            await session.stopRunning()
        }
    }

    @Test func changingSettingsWhileRunningAppliesThemAtOnce() async throws {
        try await withCamera { device, _ in
            try await withStreamingSession(device) { session, output, frames in
                #expect(try await frames.nextFrame().imageBuffer?.width == 640)
                session.beginConfiguration()
                output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_32BGRA, width: 160, height: 120)
                output.connection(with: .video)?.videoOrientation = .portrait
                session.commitConfiguration()
                var sample = try await frames.nextFrame()
                for _ in 0..<10 where sample.imageBuffer?.pixelFormatType != kCVPixelFormatType_32BGRA {
                    sample = try await frames.nextFrame()
                }
                let pixels = try #require(sample.imageBuffer)
                #expect(pixels.pixelFormatType == kCVPixelFormatType_32BGRA)
                #expect((pixels.width, pixels.height) == (120, 160), "portrait turns the asked size")
            }
        }
    }

    @Test func removingTheDeviceInterruptsTheSessionWithDeviceDisconnected() async throws {
        try await withCamera { device, _ in
            let (session, output) = try sessionWithVideoOutput(device)
            var events = session.events().makeAsyncIterator()
            let frames = FrameReader(output.sampleBuffers)
            try await session.start()
            #expect(session.isRunning)
            _ = try await frames.nextFrame()
            try await CaptureDaemon.removeVirtualCamera(uniqueID: device.uniqueID)
            var seen: [String] = []
            while let event = await events.next() {
                switch event {
                case .didStartRunning: continue
                case .wasInterrupted(let reason): seen.append("interrupted \(reason)")
                case .runtimeError(let error): seen.append("error \(error.code)")
                case .didStopRunning: seen.append("stopped")
                case .interruptionEnded: seen.append("ended")
                }
                if seen.contains("stopped") { break }
            }
            #expect(seen == ["interrupted videoDeviceNotAvailable", "error deviceDisconnected", "stopped"])
            #expect(!session.isRunning && !session.isInterrupted, "stopped: no longer interrupted")
            while await frames.next() != nil {}  // the sequence ends
        }
    }

    /// The race `camctl stream` lost on vivid: the run ends (its device goes)
    /// between `start()` and the first look at `sampleBuffers`. The sequence
    /// asked for then is that run's, already ended, not one for a run that is
    /// not coming; the next run gets a new one.
    @Test func aSequenceAskedForAfterTheRunEndedByItselfHasEnded() async throws {
        try await withCamera { device, _ in
            let (session, output) = try sessionWithVideoOutput(device)
            let events = EventLog(session)
            try await session.start()
            try await CaptureDaemon.removeVirtualCamera(uniqueID: device.uniqueID)
            try #require(await events.wait(for: ["stopped"], timeout: .seconds(30)), "events: \(events.names)")
            let late = output.sampleBuffers
            #expect(await finishes(within: .seconds(30)) { for await _ in late {} }, "the ended run's sequence ends")

            _ = try await CaptureDaemon.addVirtualCamera(index: 0, options: .init(pixelFormat: FourCharCode("NV12"), width: 640, height: 480))
            let frames = FrameReader(output.sampleBuffers)
            try await session.start()
            _ = try await frames.nextFrame()
            await session.stopRunning()
        }
    }

    /// One output's stream ends (another process switched an MJPEG camera to
    /// YUYV, which that output's passthrough cannot follow): the session does
    /// not go on half running. Every stream closes and it stops. (Were the
    /// switch this process's own, its session would follow the new format.)
    @Test func aSessionWhoseOneOutputLosesItsStreamStopsAsAWhole() async throws {
        try await withCaptureKitDaemon(virtualCameras: 0) { daemon in
            let device = try await CaptureDaemon.addVirtualCamera(options: .init(pixelFormat: FourCharCode("MJPG"), width: 640, height: 480))
            let session = CaptureSession()
            let passthrough = CaptureVideoDataOutput()
            let converted = CaptureVideoDataOutput()
            converted.videoSettings = .init(pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            session.addInput(try CaptureDeviceInput(device: device))
            session.addOutput(passthrough)
            session.addOutput(converted)
            let events = EventLog(session)
            let convertedFrames = FrameReader(converted.sampleBuffers)
            _ = passthrough.sampleBuffers
            try await session.start()
            _ = try await convertedFrames.nextFrame()
            let set = try await camctl(["set", device.uniqueID, "--format", "YUYV:640x480"], socket: daemon.socketPath)
            #expect(set.status == 0, "\(set.standardError)")
            #expect(await events.wait(for: ["error unsupportedFormat", "stopped"]), "events: \(events.names)")
            #expect(!session.isRunning && !session.isInterrupted)
            #expect(try await waitUntil { try await CaptureDaemon.statistics(for: device).streams == 0 }, "both streams closed")
        }
    }

    @Test func aSessionThatAsksToResumeGetsItsStreamBackWhenTheDeviceReturns() async throws {
        try await withCamera { device, _ in
            try await Self.resumeAfterRemoval(device)
        }
    }

    static func resumeAfterRemoval(_ device: CaptureDevice) async throws {
        let (session, output) = try sessionWithVideoOutput(device)
        session.automaticallyResumesAfterInterruption = true
        let events = EventLog(session)
        let frames = FrameReader(output.sampleBuffers)
        try await session.start()
        let before = try await frames.nextFrame()
        try await CaptureDaemon.removeVirtualCamera(uniqueID: device.uniqueID)
        #expect(await events.wait(for: ["interrupted videoDeviceNotAvailable", "error deviceDisconnected"]))
        #expect(session.isInterrupted && !session.isRunning)
        _ = try await CaptureDaemon.addVirtualCamera(index: 0, options: .init(pixelFormat: FourCharCode("NV12"), width: 640, height: 480))
        #expect(await events.wait(for: ["interruption ended"]))
        #expect(session.isRunning && !session.isInterrupted)
        let after = try await frames.nextFrame()
        #expect(after.imageBuffer?.width == before.imageBuffer?.width, "frames flow again, as before")
        #expect(after.presentationTimeStamp > before.presentationTimeStamp)
        #expect(!events.names.contains("stopped"))
        await session.stopRunning()
        #expect(await events.wait(for: ["stopped"]))
    }

    @Test func aSessionThatAsksToResumeComesBackWithARestartedDaemon() async throws {
        try await withTemporarySocketPath { path in
            var daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "1"])
            CaptureDaemon.socketPath = path
            defer { CaptureDaemon.disconnect() }
            let (session, output) = try sessionWithVideoOutput(try #require(try await CaptureDevice.default(for: .video)))
            session.automaticallyResumesAfterInterruption = true
            let events = EventLog(session)
            let frames = FrameReader(output.sampleBuffers)
            try await session.start()
            _ = try await frames.nextFrame()
            await daemon.stop()
            #expect(await events.wait(for: ["interrupted daemonNotAvailable", "error shuttingDown"]))
            daemon = try await DaemonProcess(socketPath: path, arguments: ["--virtual-cameras", "1"])
            #expect(await events.wait(for: ["interruption ended"]))
            _ = try await frames.nextFrame()
            await session.stopRunning()
            await daemon.stop()
        }
    }

    @Test func aDisabledConnectionClosesItsStreamAndEnablingReopensIt() async throws {
        try await withCamera { device, _ in
            try await withStreamingSession(device) { _, output, frames in
                _ = try await frames.nextFrame()
                let connection = try #require(output.connection(with: .video))
                connection.isEnabled = false
                #expect(try await Self.streams(on: device, becomes: 0))
                #expect(!connection.isActive)
                connection.isEnabled = true
                #expect(try await Self.streams(on: device, becomes: 1))
                #expect(connection.isActive)
                _ = try await frames.nextFrame()
            }
        }
    }

    static func streams(on device: CaptureDevice, becomes count: Int) async throws -> Bool {
        try await waitUntil { try await CaptureDaemon.statistics(for: device).streams == count }
    }

    @Test func presetsAreSetWhereTheDeviceSupportsThem() async throws {
        try await withCamera { device, _ in
            let session = CaptureSession()
            #expect(session.sessionPreset == .high, "AVFoundation's default")
            #expect(session.canSetSessionPreset(.hd4K3840x2160), "with no input any preset will do")
            session.addInput(try CaptureDeviceInput(device: device))
            #expect(session.canSetSessionPreset(.hd1920x1080))
            #expect(!session.canSetSessionPreset(.hd4K3840x2160))
            #expect(!session.canAddInput(try CaptureDeviceInput(device: device)), "one camera per session")
            // Issue 16's second point: a preset chosen before the input rules out a device without it.
            let fourK = CaptureSession()
            fourK.sessionPreset = .hd4K3840x2160
            #expect(!fourK.canAddInput(try CaptureDeviceInput(device: device)), "a 640x480 camera has no 4K mode")
            fourK.sessionPreset = .hd1920x1080
            #expect(fourK.canAddInput(try CaptureDeviceInput(device: device)), "a virtual camera renders 1080p")
            let output = CaptureVideoDataOutput()
            session.addOutput(output)
            #expect(!session.canAddOutput(output))
            session.sessionPreset = .medium
            let frames = FrameReader(output.sampleBuffers)
            try await session.start()
            let sample = try await frames.nextFrame()
            #expect(sample.imageBuffer.map { ($0.width, $0.height) } ?? (0, 0) == (480, 360), ".medium is 480x360, scaled by the daemon")
            await session.stopRunning()
        }
    }

    @Test func aBadOutputSizeFailsToStartWithItsReason() async throws {
        try await withCamera { device, _ in
            let (session, output) = try sessionWithVideoOutput(device)
            output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, width: 321, height: 241)
            let error = await #expect(throws: CaptureError.self) { try await session.start() }
            #expect(error?.code == .unsupportedFormat)
            #expect(error?.message.contains("even") == true)
            #expect(!session.isRunning)
        }
    }

    /// Issue 16's seventh point: the CoreMedia and CoreVideo calls a seed's
    /// delegate makes (the dictionary form of videoSettings, the image buffer,
    /// lock, planes, times, the format description) read a real frame.
    @Test func seedStyleCoreMediaCallsReadARealFrame() async throws {
        try await withCamera { device, _ in
            try await withStreamingSession(device, configure: { output, _ in
                output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: Int(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)]
            }) { _, output, frames in
                #expect(output.videoSettings.pixelFormatType == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
                let sampleBuffer: CMSampleBuffer = try await frames.nextFrame()
                let imageBuffer = try #require(CMSampleBufferGetImageBuffer(sampleBuffer))
                #expect(CVPixelBufferLockBaseAddress(imageBuffer, .readOnly) == kCVReturnSuccess)
                #expect(CVPixelBufferIsPlanar(imageBuffer) && CVPixelBufferGetPlaneCount(imageBuffer) == 2)
                #expect(CVPixelBufferGetPixelFormatType(imageBuffer) == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
                // The planes, row by row at their strides, are the frame the camera made.
                var frame: [UInt8] = []
                for plane in 0..<CVPixelBufferGetPlaneCount(imageBuffer) {
                    let base = try #require(CVPixelBufferGetBaseAddressOfPlane(imageBuffer, plane))
                    let stride = CVPixelBufferGetBytesPerRowOfPlane(imageBuffer, plane)
                    let rowBytes = CVPixelBufferGetWidthOfPlane(imageBuffer, plane) * (plane == 0 ? 1 : 2)
                    for row in 0..<CVPixelBufferGetHeightOfPlane(imageBuffer, plane) {
                        frame += UnsafeRawBufferPointer(start: base + row * stride, count: rowBytes)
                    }
                }
                #expect((CVPixelBufferGetWidth(imageBuffer), CVPixelBufferGetHeight(imageBuffer)) == (640, 480))
                #expect(frame == sourceFrame(of: sampleBuffer))
                #expect(CMSampleBufferInvalidate(sampleBuffer) == 0)
                #expect(CVPixelBufferGetBaseAddress(imageBuffer) != nil, "a locked buffer stays readable after its release")
                CVPixelBufferUnlockBaseAddress(imageBuffer, .readOnly)
                #expect(CVPixelBufferGetBaseAddress(imageBuffer) == nil && !CMSampleBufferIsValid(sampleBuffer))
                #expect(CVPixelBufferLockBaseAddress(imageBuffer, []) == kCVReturnInvalidArgument, "released: nothing to lock")

                let pts = CMSampleBufferGetPresentationTimeStamp(sampleBuffer)
                let next = CMTimeAdd(pts, CMSampleBufferGetDuration(sampleBuffer))
                #expect(CMTimeCompare(pts, kCMTimeZero) == 1 && CMTimeCompare(next, pts) == 1 && CMTimeCompare(pts, pts) == 0)
                #expect(abs(CMTimeGetSeconds(CMTimeSubtract(next, pts)) - 1.0 / 30) < 1e-6)
                let description = try #require(CMSampleBufferGetFormatDescription(sampleBuffer))
                #expect(CMVideoFormatDescriptionGetDimensions(description).width == 640)
                #expect(CMFormatDescriptionGetMediaSubType(description) == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            }
        }
    }

    /// Issue 16's first point: a pixel format CaptureKit cannot deliver ('x420',
    /// 10-bit NV12, which a seed names: camerad's sources are 8-bit) is refused,
    /// never swapped silently for the device's own — at the start, and when set
    /// while running.
    @Test func aPixelFormatCaptureKitCannotDeliverIsRefusedNotIgnored() async throws {
        let tenBitNV12: OSType = 0x7834_3230  // 'x420', kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange
        try await withCamera { device, _ in
            let (session, output) = try sessionWithVideoOutput(device)
            let events = EventLog(session)
            output.videoSettings = .init(pixelFormatType: tenBitNV12)
            let error = await #expect(throws: CaptureError.self) { try await session.start() }
            #expect(error?.code == .unsupportedFormat)
            #expect(error?.message.contains("'x420'") == true && error?.message.contains("'420v'") == true, "\(String(describing: error))")
            #expect(!session.isRunning)
            #expect(try await CaptureDaemon.statistics(for: device).streams == 0, "nothing was opened")
            // The dictionary form refuses what it does not know, naming it.
            output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA, "AVVideoCodecKey": "jpeg"]
            let unknownKey = await #expect(throws: CaptureError.self) { try await session.start() }
            #expect(unknownKey?.code == .unsupportedFormat && unknownKey?.message.contains("AVVideoCodecKey") == true,
                    "\(String(describing: unknownKey))")

            output.videoSettings = .init(pixelFormatType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            try await session.start()
            let frames = FrameReader(output.sampleBuffers)
            #expect(try await frames.nextFrame().imageBuffer?.pixelFormatType == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
            output.videoSettings = .init(pixelFormatType: tenBitNV12)
            #expect(await waitUntil { events.names.filter { $0 == "error unsupportedFormat" }.count == 3 }, "events: \(events.names)")
            #expect(try await waitUntil { try await CaptureDaemon.statistics(for: device).streams == 0 }, "its stream closed")
            await session.stopRunning()
        }
    }

    @Test func startingAndStoppingAHundredTimesLeavesNothingBehindInTheDaemon() async throws {
        try await withCamera(fps: 60, environment: Self.allocatorWithoutCaches) { device, daemon in
            try await Self.startAndStopAHundredTimes(device, daemon)
        }
    }

    /// glibc keeps memory that is not a leak and hides one: the stacks of ended
    /// threads (each capture start is a thread) in a cache of up to 40 MiB, and
    /// freed frame-sized blocks in whichever per-thread arena they came from once
    /// its dynamic mmap threshold has risen (resident memory then wanders between
    /// 11 and 45 MB in 3 MB steps). Both are turned off for the daemon here.
    static let allocatorWithoutCaches = DaemonFootprint.allocatorWithoutCaches

    /// A hundred rounds to warm up (the allocator keeps some memory after the
    /// first rounds), then a hundred measured ones: a leak grows with every round.
    static func startAndStopAHundredTimes(_ device: CaptureDevice, _ daemon: DaemonProcess) async throws {
        for _ in 0..<100 { try await streamOneFrame(device) }
        #expect(try await waitUntil { try await !CaptureDaemon.statistics(for: device).isCapturing }, "the device stops")
        let descriptors = daemon.openDescriptorCount
        let threads = threadCount(daemon.pid)
        let memory = residentKilobytes(daemon.pid)
        for _ in 0..<100 { try await streamOneFrame(device) }
        var statistics = try await CaptureDaemon.statistics(for: device)
        _ = try await waitUntil {
            statistics = try await CaptureDaemon.statistics(for: device)
            return !statistics.isCapturing && daemon.openDescriptorCount <= descriptors && threadCount(daemon.pid) <= threads
        }
        let leftDescriptors = daemon.openDescriptorCount
        #expect(threadCount(daemon.pid) <= threads, "threads left in the daemon (capture threads and variant workers end with their stream)")
        let grownKilobytes = residentKilobytes(daemon.pid) - memory
        #expect(!statistics.isCapturing && statistics.streams == 0 && statistics.variants.isEmpty)
        #expect(leftDescriptors <= descriptors, "descriptors left in the daemon")
        #expect(grownKilobytes < 8 * 1024, "memory grew by \(grownKilobytes) KiB over a hundred sessions")
    }

    /// Starts a session, takes one frame, stops.
    static func streamOneFrame(_ device: CaptureDevice) async throws {
        let (session, output) = try sessionWithVideoOutput(device)
        let frames = FrameReader(output.sampleBuffers)
        try await session.start()
        let frame = try await frames.nextFrame()
        frame.invalidate()
        await session.stopRunning()
    }
}
}
