import CameraEncoding
import CameraMedia
import Foundation
import Glibc

/// Issue 35's first figure: camerad's H.264 encoding (CameraEncoding:
/// libx264 through libavcodec, muxed in fragments) against `ffmpeg -f rawvideo
/// … -c:v libx264` encoding the same NV12 frames (as a camera sends them) with the same x264 settings
/// (preset veryfast, CRF 23, no B-frames, a keyframe every 2 s, fragmented
/// MP4), each a process of its own, measured by its CPU time (user + system)
/// from start to exit. Goal: at most 1.05× ffmpeg's.
enum EncodingRow {
    static let width = 1920, height = 1080, frameRate = 30

    struct Figures {
        var camerad: Double = 0
        var ffmpeg: Double = 0
        var frames = 0
    }

    /// Renders `frames` stamped 1080p NV12 frames into a raw file, then encodes it
    /// `rounds` times on each side in turn.
    static func measure(frames: Int, rounds: Int) throws -> Figures {
        let folder = NSTemporaryDirectory() + "camerad-bench-encoding-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let raw = folder + "/frames.yuv"
        let pattern = TestPattern(width: width, height: height)
        var frame = [UInt8](repeating: 0, count: pattern.frameSize(.nv12))
        guard FileManager.default.createFile(atPath: raw, contents: nil), let file = FileHandle(forWritingAtPath: raw) else {
            throw BenchError("cannot write \(raw)")
        }
        for index in 0..<frames {
            frame.withUnsafeMutableBytes {
                pattern.render(FrameStamp(sequence: UInt32(index), timestampNanoseconds: Int64(index) * 33_333_333), format: .nv12, into: $0)
            }
            file.write(Data(frame))
        }
        try file.close()
        var figures = Figures(frames: frames)
        for _ in 0..<rounds {
            figures.camerad += try childCPU(CommandLine.arguments[0], ["--encode-raw", raw, folder + "/camerad.mp4"])
            figures.ffmpeg += try childCPU("/usr/bin/ffmpeg", [
                "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "nv12", "-s", "\(width)x\(height)", "-r", "\(frameRate)", "-i", raw,
                "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-bf", "0", "-g", "\(frameRate * 2)",
                "-movflags", "frag_keyframe+empty_moov+default_base_moof", folder + "/ffmpeg.mp4",
            ])
        }
        return figures
    }

    /// Runs a process to its end; its CPU seconds (its children's rusage, before and after).
    static func childCPU(_ executable: String, _ arguments: [String]) throws -> Double {
        func children() -> Double {
            var usage = rusage()
            getrusage(RUSAGE_CHILDREN.rawValue, &usage)
            return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        }
        let before = children()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw BenchError("\(executable) failed (\(process.terminationStatus)): \(said)")
        }
        return children() - before
    }

    /// `camerad-bench --encode-raw IN OUT`: camerad's side, in a process of its own.
    static func encodeRaw(_ input: String, _ output: String) throws {
        var settings = VideoEncoder.Settings(width: width, height: height, frameRate: frameRate)
        settings.input = .nv12
        let encoder = try VideoEncoder(settings)
        let descriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BenchError("cannot write \(output)") }
        defer { close(descriptor) }
        let writer = try MovieWriter(descriptor: descriptor, container: .mp4, video: encoder.parameters, fragmentInterval: 2)
        let file = open(input, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw BenchError("cannot read \(input)") }
        defer { close(file) }
        // One buffer read into for every frame, as ffmpeg's rawvideo demuxer reads.
        var frame = [UInt8](repeating: 0, count: width * height * 3 / 2)
        var index: Int64 = 0
        while true {
            let filled = frame.withUnsafeMutableBytes { buffer -> Int in
                var done = 0
                while done < buffer.count {
                    let count = read(file, buffer.baseAddress! + done, buffer.count - done)
                    if count <= 0 { break }
                    done += count
                }
                return done
            }
            guard filled == frame.count else { break }
            let packets = try frame.withUnsafeBytes { try encoder.encode($0, timestampNanoseconds: index * 1_000_000_000 / Int64(frameRate)) }
            for packet in packets { try writer.write(packet, to: .video) }
            index += 1
        }
        for packet in try encoder.flush() { try writer.write(packet, to: .video) }
        try writer.finishWriting()
    }
}

/// Prints the encoding row.
func printEncoding(rounds: Int) throws -> EncodingRow.Figures {
    let frames = 150
    print("Encoding: \(frames) frames of 1080p NV12 (\(Double(frames) / Double(EncodingRow.frameRate)) s), H.264 by libx264 at preset veryfast,")
    print("CRF 23, no B-frames, a keyframe every 2 s, into fragmented MP4: camerad's encoder and muxer (CameraEncoding) against")
    print("ffmpeg -f rawvideo … -c:v libx264 with the same settings, each its own process, \(rounds) runs each in turn:")
    let figures = try EncodingRow.measure(frames: frames, rounds: rounds)
    let seconds = Double(frames * rounds) / Double(EncodingRow.frameRate)
    print(String(format: "  camerad: %.3f s of CPU per second of video;  ffmpeg: %.3f;  camerad ÷ ffmpeg = %.2f (the goal: at most 1.05)",
                 figures.camerad / seconds, figures.ffmpeg / seconds, figures.ffmpeg > 0 ? figures.camerad / figures.ffmpeg : 0))
    return figures
}
