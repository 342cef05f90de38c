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
            try write(try frame.withUnsafeBytes { try encoder.encode(i420: $0, timestampNanoseconds: timestamp) })
        }
        guard finish else { return (keyframes, writer.bytesWritten) }
        try write(try encoder.flush())
        try writer.finish()
        return (keyframes, writer.bytesWritten)
    }

    /// ffprobe's view of the first video stream: its fields, frames counted.
    static func probe(_ path: String) async throws -> [String: Any] {
        let result = try await runProcess("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                               "-show_streams", "-show_format", "-of", "json", path])
        #expect(result.status == 0, "ffprobe: \(result.standardError)")
        let json = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        var stream = ((json?["streams"] as? [[String: Any]])?.first) ?? [:]
        stream["format"] = json?["format"]
        return stream
    }

    /// Every frame ffmpeg decodes from `path`, its stamp's sequence (nil where it does not read).
    static func decodedStamps(_ path: String, in folder: String) async throws -> [UInt32?] {
        let raw = folder + "/frames.gray"
        let result = try await runProcess("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", raw],
                                          timeout: .seconds(120))
        #expect(result.status == 0, "ffmpeg: \(result.standardError)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: raw))
        let size = width * height
        return stride(from: 0, to: bytes.count - size + 1, by: size).map { offset in
            bytes[offset..<offset + size].withUnsafeBytes {
                FrameStampDecoder.decode(luma: $0, width: width, height: height, bytesPerRow: width).stamp?.sequence
            }
        }
    }

    @Test(arguments: MovieWriter.Container.allCases)
    func aMovieIsWhatFFprobeReadsAndEveryFrameDecodesInOrder(container: MovieWriter.Container) async throws {
        try await withTemporaryDirectory { folder in
            let path = folder + "/movie.\(container.rawValue)"
            let (keyframes, bytes) = try Self.record(path, frames: 90, keyframeInterval: 30, fragmentInterval: 1, container: container)
            #expect(keyframes == [0, 30, 60], "a keyframe first, then every keyframe interval")
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64
            #expect(size == bytes, "the writer counts what reached the file")
            // A clean finish ends the file with its index of keyframes (mfra, closed by its mfro box).
            let tail = try Data(contentsOf: URL(fileURLWithPath: path)).suffix(16)
            #expect(tail.range(of: Data("mfro".utf8)) != nil, "an index at the end")

            let stream = try await Self.probe(path)
            #expect(stream["codec_name"] as? String == "h264")
            #expect(stream["width"] as? Int == Self.width && stream["height"] as? Int == Self.height)
            #expect(stream["nb_read_frames"] as? String == "90", "\(stream)")
            #expect(stream["avg_frame_rate"] as? String == "30/1" || stream["r_frame_rate"] as? String == "30/1", "\(stream)")
            let format = stream["format"] as? [String: Any]
            let duration = Double(format?["duration"] as? String ?? "") ?? 0
            #expect(abs(duration - 3) < 0.05, "three seconds: \(duration)")
            let tags = format?["tags"] as? [String: Any] ?? [:]
            #expect(tags["location"] as? String == "+48.8584+002.2945/", "\(tags)")

            let stamps = try await Self.decodedStamps(path, in: folder)
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
            let stream = try await Self.probe(path)
            let frames = Int(stream["nb_read_frames"] as? String ?? "") ?? 0
            // Fragments of 15 frames (a keyframe every half second): at most the one under way is lost.
            #expect(frames >= 90 - 15 && frames < 90, "\(frames) frames of 90 written: \(stream)")
            print("a movie never finished: \(frames) frames of 90 play")
            let stamps = try await Self.decodedStamps(path, in: folder)
            #expect(stamps == (0..<frames).map { UInt32($0) }, "every frame of the whole fragments, in order")
        }
    }

    @Test func settingsH264CannotTakeAreRefusedSayingWhy() {
        #expect(throws: EncodingError.self) { try VideoEncoder(.init(width: 321, height: 240, frameRate: 30)) }
        #expect(throws: EncodingError.self) { try VideoEncoder(.init(width: 320, height: 240, frameRate: 0)) }
        #expect(throws: EncodingError.self) { try MovieWriter(descriptor: -1, container: .mp4, video: nil) }
    }
}
