import CameraMedia
import Foundation

/// A movie file as programs nobody here wrote see it: ffprobe's fields, and
/// the frames ffmpeg decodes, each one's stamp read back.
public enum MovieProbe {
    /// ffprobe's view of the first video stream (frames counted), with the file's format under "format".
    public static func videoStream(_ path: String) async throws -> [String: Any] {
        let result = try await runProcess("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                               "-show_streams", "-show_format", "-of", "json", path], timeout: .seconds(120))
        guard result.status == 0 else { throw DaemonFailure("ffprobe \(path): \(result.standardError)") }
        let json = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        var stream = ((json?["streams"] as? [[String: Any]])?.first) ?? [:]
        stream["format"] = json?["format"]
        return stream
    }

    /// The frames ffprobe counted in a ``videoStream(_:)``; 0 when it counted none.
    public static func frames(_ stream: [String: Any]) -> Int {
        Int(stream["nb_read_frames"] as? String ?? "") ?? 0
    }

    /// Every frame ffmpeg decodes from `path` (`width`×`height`), its stamp in
    /// order (nil where it does not read); decoded into `folder`,
    /// each frame once (no frame repeated to fill a gap at a constant rate).
    public static func stamps(_ path: String, width: Int, height: Int, in folder: String) async throws -> [FrameStamp?] {
        try await lumaFrames(path, width: width, height: height, in: folder).map { frame in
            frame.withUnsafeBytes { FrameStampDecoder.decode(luma: $0, width: width, height: height, bytesPerRow: width).stamp }
        }
    }

    /// Every frame ffmpeg decodes from `path` (`width`×`height`), in order, as
    /// its luma (`width` bytes a row); decoded into `folder`, each frame once.
    public static func lumaFrames(_ path: String, width: Int, height: Int, in folder: String) async throws -> [Data] {
        let raw = folder + "/\(UUID().uuidString).gray"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let result = try await runProcess("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", path, "-map", "0:v", "-fps_mode", "passthrough", "-f", "rawvideo",
                                                              "-pix_fmt", "gray", raw], timeout: .seconds(120))
        guard result.status == 0 else { throw DaemonFailure("ffmpeg \(path): \(result.standardError)") }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: raw))
        let size = width * height
        return stride(from: 0, to: bytes.count - size + 1, by: size).map { bytes[$0..<$0 + size] }
    }

    /// Each video frame's presentation time in seconds, as ffprobe decodes them
    /// (in the order ``lumaFrames(_:width:height:in:)`` gives them).
    public static func frameTimes(_ path: String) async throws -> [Double] {
        let result = try await runProcess("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                               "frame=best_effort_timestamp_time", "-of", "csv=p=0", path], timeout: .seconds(120))
        guard result.status == 0 else { throw DaemonFailure("ffprobe \(path): \(result.standardError)") }
        return result.standardOutput.split(whereSeparator: \.isNewline).compactMap {
            Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ", ")))
        }
    }
}

extension MovieProbe {
    /// ffprobe's streams of `path`, each its fields.
    public static func streams(_ path: String) async throws -> [[String: Any]] {
        let result = try await runProcess("/usr/bin/ffprobe", ["-v", "error", "-show_streams", "-of", "json", path], timeout: .seconds(120))
        guard result.status == 0 else { throw DaemonFailure("ffprobe \(path): \(result.standardError)") }
        return (try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])?["streams"] as? [[String: Any]] ?? []
    }

    /// The first audio stream of `path` decoded by ffmpeg to mono 32-bit float at `rate`, from the stream's
    /// start (its start_time): its packets one after another — or, `placedByTimestamps`, as a player places
    /// them, so that sample i plays at start_time + i / `rate` even after a gap between packets (silence).
    public static func monoAudio(_ path: String, rate: Int, in folder: String, placedByTimestamps: Bool = false) async throws -> [Float] {
        let raw = folder + "/\(UUID().uuidString).f32"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let placing = placedByTimestamps ? ["-af", "aresample=async=1:min_hard_comp=0.01"] : []
        let result = try await runProcess("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", path, "-map", "0:a", "-ac", "1", "-ar", "\(rate)"]
                                              + placing + ["-f", "f32le", raw], timeout: .seconds(120))
        guard result.status == 0 else { throw DaemonFailure("ffmpeg \(path): \(result.standardError)") }
        return try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}
