import CameraEncoding
import CameraMedia
import CameraTestSupport
import Foundation
import Glibc
import Testing

/// H.264 through libx264 into fragmented MP4 on a descriptor, judged by
/// programs nobody here wrote: ffprobe reads the file, ffmpeg decodes it back,
/// and every frame's stamp reads in order.
@Suite struct MovieWriterTests {
    static let width = 320, height = 240, frameRate = 30
    /// A capture clock that does not start at 0: the file's time starts at its first packet.
    static let start: Int64 = 5_000_000_000

    /// Encodes `frames` stamped frames (sequence 0, 1, …) and writes them to `path`;
    /// `finish` false leaves the writer as a killed process would.
    static func record(_ path: String, frames: Int, keyframeInterval: Int, fragmentInterval: Double, container: MovieWriter.Container = .mp4,
                       finish: Bool = true) throws -> (keyframes: [Int], bytes: Int64) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let encoder = try VideoEncoder(.init(width: width, height: height, frameRate: frameRate, keyframeInterval: keyframeInterval))
        let writer = try MovieWriter(descriptor: descriptor, container: container, video: encoder.parameters, fragmentInterval: fragmentInterval,
                                     metadata: ["location": "+48.8584+002.2945/", "make": "camerad", "model": "virtual camera"])
        let pattern = TestPattern(width: width, height: height)
        var frame = [UInt8](repeating: 0, count: pattern.frameSize(.i420))
        var keyframes: [Int] = []
        var written = 0
        func write(_ packets: [EncodedPacket]) throws {
            for packet in packets {
                if packet.isKeyframe { keyframes.append(written) }
                written += 1
                try writer.write(packet, to: .video)
            }
        }
        for index in 0..<frames {
            let timestamp = start + Int64(index) * 1_000_000_000 / Int64(frameRate)
            frame.withUnsafeMutableBytes {
                pattern.render(FrameStamp(sequence: UInt32(index), timestampNanoseconds: timestamp), format: .i420, into: $0)
            }
            try write(try frame.withUnsafeBytes { try encoder.encode($0, timestampNanoseconds: timestamp) })
        }
        guard finish else { return (keyframes, writer.bytesWritten) }
        try write(try encoder.flush())
        try writer.finishWriting()
        return (keyframes, writer.bytesWritten)
    }

    @Test(arguments: MovieWriter.Container.allCases)
    func aMovieIsWhatFFprobeReadsAndEveryFrameDecodesInOrder(container: MovieWriter.Container) async throws {
        try await withTemporaryDirectory { folder in
            let path = folder + "/movie.\(container.rawValue)"
            let (keyframes, bytes) = try Self.record(path, frames: 90, keyframeInterval: 30, fragmentInterval: 1, container: container)
            #expect(keyframes == [0, 30, 60], "a keyframe first, then every keyframe interval")
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64
            #expect(size == bytes, "the writer counts what reached the file")
            // A clean finish ends the file with its index of keyframes: an MP4's or MOV's mfra, closed by its
            // mfro box; a Matroska file's Cues (element 0x1C53BB6B), the segment's size filled in (no longer unknown).
            let file = try Data(contentsOf: URL(fileURLWithPath: path))
            if container == .matroska {
                #expect(file.range(of: Data([0x1C, 0x53, 0xBB, 0x6B])) != nil, "an index")
                let segment = try #require(file.range(of: Data([0x18, 0x53, 0x80, 0x67])), "a segment")
                #expect(file[segment.upperBound] != 0x01 || file[(segment.upperBound + 1)...].prefix(7) != Data(repeating: 0xFF, count: 7),
                        "the segment's size written at the finish")
            } else {
                #expect(file.suffix(16).range(of: Data("mfro".utf8)) != nil, "an index at the end")
            }

            let stream = try await MovieProbe.videoStream(path)
            #expect(stream["codec_name"] as? String == "h264")
            #expect(stream["width"] as? Int == Self.width && stream["height"] as? Int == Self.height)
            #expect(stream["nb_read_frames"] as? String == "90", "\(stream)")
            #expect(stream["avg_frame_rate"] as? String == "30/1" || stream["r_frame_rate"] as? String == "30/1", "\(stream)")
            let format = stream["format"] as? [String: Any]
            let duration = Double(format?["duration"] as? String ?? "") ?? 0
            #expect(abs(duration - 3) < 0.05, "three seconds: \(duration)")
            // Matroska's tags read back in capitals.
            let tags = format?["tags"] as? [String: Any] ?? [:]
            #expect(tags.first { $0.key.lowercased() == "location" }?.value as? String == "+48.8584+002.2945/", "\(tags)")

            let stamps = try await MovieProbe.stamps(path, width: Self.width, height: Self.height, in: folder).map { $0?.sequence }
            #expect(stamps == (0..<90).map { UInt32($0) }, "every frame, in order, its stamp intact")
        }
    }

    /// A writer that never finishes — its process killed — leaves a file that
    /// plays up to its last whole fragment: nothing after the header is lost
    /// but the fragment under way.
    @Test func aMovieNeverFinishedPlaysUpToItsLastFragment() async throws {
        try await withTemporaryDirectory { folder in
            let path = folder + "/killed.mp4"
            _ = try Self.record(path, frames: 90, keyframeInterval: 15, fragmentInterval: 0.5, finish: false)
            let stream = try await MovieProbe.videoStream(path)
            let frames = MovieProbe.frames(stream)
            // Fragments of 15 frames (a keyframe every half second): at most the one under way is lost.
            #expect(frames >= 90 - 15 && frames < 90, "\(frames) frames of 90 written: \(stream)")
            print("a movie never finished: \(frames) frames of 90 play")
            let stamps = try await MovieProbe.stamps(path, width: Self.width, height: Self.height, in: folder).map { $0?.sequence }
            #expect(stamps == (0..<frames).map { UInt32($0) }, "every frame of the whole fragments, in order")
        }
    }

    /// Video and AAC audio from one clock into one file: the audio decoded
    /// back carries the stamp's blocks each at its own sample on the video's
    /// clock (the AAC encoder's priming placed before time 0 by the file's edit
    /// list), so a sound and a picture made at one instant play at one.
    @Test func videoAndAudioFromOneClockPlayTogether() async throws {
        try await withTemporaryDirectory { folder in
            let path = folder + "/movie.mp4"
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            defer { close(descriptor) }
            let video = try VideoEncoder(.init(width: Self.width, height: Self.height, frameRate: Self.frameRate))
            let audio = try AudioEncoder(.init(sampleRate: 48_000, channels: 2))
            let writer = try MovieWriter(descriptor: descriptor, container: .mp4, video: video.parameters, audio: audio.parameters,
                                         startNanoseconds: Self.start, fragmentInterval: 1)
            let pattern = TestPattern(width: Self.width, height: Self.height)
            var frame = [UInt8](repeating: 0, count: pattern.frameSize(.i420))
            var period = [Float](repeating: 0, count: 480 * 2)
            var periodsWritten = 0
            for index in 0..<90 {
                let timestamp = Self.start + Int64(index) * 1_000_000_000 / Int64(Self.frameRate)
                // The periods captured by this frame's time, before it.
                while Int64(periodsWritten) * 10_000_000 <= timestamp - Self.start {
                    period.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: 2, from: UInt64(periodsWritten * 480)) }
                    let packets = try period.withUnsafeBufferPointer {
                        try audio.encode(interleaved: $0, timestampNanoseconds: Self.start + Int64(periodsWritten) * 10_000_000)
                    }
                    for packet in packets { try writer.write(packet, to: .audio) }
                    periodsWritten += 1
                }
                frame.withUnsafeMutableBytes { pattern.render(FrameStamp(sequence: UInt32(index), timestampNanoseconds: timestamp), format: .i420, into: $0) }
                for packet in try frame.withUnsafeBytes({ try video.encode($0, timestampNanoseconds: timestamp) }) {
                    try writer.write(packet, to: .video)
                }
            }
            for packet in try video.flush() { try writer.write(packet, to: .video) }
            for packet in try audio.flush() { try writer.write(packet, to: .audio) }
            try writer.finishWriting()

            let streams = try await MovieProbe.streams(path)
            #expect(streams.map { $0["codec_name"] as? String } == ["h264", "aac"], "\(streams)")
            let sound = try #require(streams.last)
            #expect(sound["sample_rate"] as? String == "48000" && sound["channels"] as? Int == 2)
            // The video starts at 0; the audio a frame of AAC earlier, the encoder's priming before 0 (its edit list).
            let starts = streams.compactMap { Double($0["start_time"] as? String ?? "") }
            #expect(starts.count == 2 && starts[0] == 0 && abs(starts[1] + 1024.0 / 48_000) < 0.0001, "\(starts)")

            let samples = try await MovieProbe.monoAudio(path, rate: 48_000, in: folder)
            let blocks = AudioStamp.decode(samples, sampleRate: 48_000)
            #expect(blocks.count >= 140, "most of the 150 blocks of three seconds survive AAC: \(blocks.count)")
            #expect(zip(blocks, blocks.dropFirst()).allSatisfy { $0.number < $1.number }, "in order")
            // Decoded from the audio's start: sample i plays at start_time + i / 48 kHz, so block n
            // (made at the video's first frame + n × 20 ms) lies at n × 960 + 1024.
            let offsets = blocks.map { $0.offset - Int($0.number) * AudioStamp.blockFrames - 1024 }
            #expect(offsets.allSatisfy { abs($0) <= 2 }, "each block at its sample, on the video's clock: \(Set(offsets))")
        }
    }

    /// Half a second of sound lost — periods before the encoder (an overrun),
    /// which it fills with silence, or packets after it (a recorder behind),
    /// which leave a gap in the timestamps a player plays as silence: every
    /// block after the gap is still at its own sample, as a player places it.
    @Test(arguments: [true, false]) func aGapInTheSoundIsSilenceAndWhatFollowsKeepsItsTime(lostBeforeTheEncoder: Bool) async throws {
        try await withTemporaryDirectory { folder in
            let path = folder + "/sound.mp4"
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            defer { close(descriptor) }
            let audio = try AudioEncoder(.init(sampleRate: 48_000, channels: 2))
            let writer = try MovieWriter(descriptor: descriptor, container: .mp4, video: nil, audio: audio.parameters,
                                         startNanoseconds: Self.start, fragmentInterval: 1)
            var period = [Float](repeating: 0, count: 480 * 2)
            let lost = Self.start + 1_000_000_000..<Self.start + 1_500_000_000
            for index in 0..<300 {
                let time = Self.start + Int64(index) * 10_000_000
                if lostBeforeTheEncoder && lost.contains(time) { continue }
                period.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: 2, from: UInt64(index * 480)) }
                let packets = try period.withUnsafeBufferPointer { try audio.encode(interleaved: $0, timestampNanoseconds: time) }
                for packet in packets where lostBeforeTheEncoder || !lost.contains(packet.presentationTimeNanoseconds) {
                    try writer.write(packet, to: .audio)
                }
            }
            for packet in try audio.flush() { try writer.write(packet, to: .audio) }
            try writer.finishWriting()

            let samples = try await MovieProbe.monoAudio(path, rate: 48_000, in: folder, placedByTimestamps: true)
            let blocks = AudioStamp.decode(samples, sampleRate: 48_000)
            #expect(blocks.contains { $0.number < 50 } && blocks.contains { $0.number >= 76 }, "blocks before and after the gap")
            #expect(!blocks.contains { (51..<74).contains($0.number) }, "none in the gap")
            // Sample i plays at start_time (−1024 / 48 kHz, the priming) + i / 48 kHz: block n lies at n × 960 + 1024.
            let offsets = blocks.map { $0.offset - Int($0.number) * AudioStamp.blockFrames - 1024 }
            #expect(offsets.allSatisfy { abs($0) <= 2 }, "each block at its sample, before and after the gap: \(Set(offsets))")
        }
    }

    /// The picture held back for 12 s (an encoder starved on a loaded
    /// machine) while the sound flows, and the sound starting 9.9 s after the
    /// picture: the file still puts every sound where it was captured.
    @Test func soundWrittenWhileThePictureIsHeldBackKeepsItsPlace() async throws {
        try await withTemporaryDirectory { folder in
            let path = folder + "/movie.mp4"
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            defer { close(descriptor) }
            let video = try VideoEncoder(.init(width: Self.width, height: Self.height, frameRate: Self.frameRate))
            let audio = try AudioEncoder(.init(sampleRate: 48_000, channels: 2))
            let writer = try MovieWriter(descriptor: descriptor, container: .mp4, video: video.parameters, audio: audio.parameters,
                                         startNanoseconds: Self.start, fragmentInterval: 1)
            let pattern = TestPattern(width: Self.width, height: Self.height)
            var frame = [UInt8](repeating: 0, count: pattern.frameSize(.i420))
            func picture(_ index: Int) throws {
                let timestamp = Self.start + Int64(index) * 1_000_000_000 / Int64(Self.frameRate)
                frame.withUnsafeMutableBytes { pattern.render(FrameStamp(sequence: UInt32(index), timestampNanoseconds: timestamp), format: .i420, into: $0) }
                for packet in try frame.withUnsafeBytes({ try video.encode($0, timestampNanoseconds: timestamp, keyframe: true) }) {
                    try writer.write(packet, to: .video)
                }
            }
            var period = [Float](repeating: 0, count: 480 * 2)
            func sound(_ periods: Range<Int>) throws {
                for index in periods {
                    period.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: 2, from: UInt64(index * 480)) }
                    let packets = try period.withUnsafeBufferPointer {
                        try audio.encode(interleaved: $0, timestampNanoseconds: Self.start + Int64(index) * 10_000_000)
                    }
                    for packet in packets { try writer.write(packet, to: .audio) }
                }
            }
            try picture(0)
            try sound(990..<1200)
            for index in 360..<390 { try picture(index) }
            try sound(1200..<1300)
            for packet in try video.flush() { try writer.write(packet, to: .video) }
            for packet in try audio.flush() { try writer.write(packet, to: .audio) }
            try writer.finishWriting()

            let streams = try await MovieProbe.streams(path)
            let audioStart = try #require(Double(streams.last?["start_time"] as? String ?? ""))
            #expect(abs(audioStart - (9.9 - 1024.0 / 48_000)) < 0.0001, "the sound starts where it was captured: \(audioStart)")
            let samples = try await MovieProbe.monoAudio(path, rate: 48_000, in: folder)
            let blocks = AudioStamp.decode(samples, sampleRate: 48_000)
            #expect(blocks.count >= 100, "\(blocks.count) blocks")
            let offsets = blocks.map { Double($0.offset) - (Double($0.number) * 0.02 - audioStart) * 48_000 }
            #expect(offsets.allSatisfy { abs($0) <= 2 }, "each block at its sample: \(Set(offsets.map { Int($0) }))")
        }
    }

    @Test func settingsH264CannotTakeAreRefusedSayingWhy() {
        #expect(throws: EncodingError.self) { try VideoEncoder(.init(width: 321, height: 240, frameRate: 30)) }
        #expect(throws: EncodingError.self) { try VideoEncoder(.init(width: 320, height: 240, frameRate: 0)) }
        #expect(throws: EncodingError.self) { try MovieWriter(descriptor: -1, container: .mp4, video: nil) }
        #expect(throws: EncodingError.self) { try AudioEncoder(.init(sampleRate: 48_000, channels: 3)) }
    }
}
