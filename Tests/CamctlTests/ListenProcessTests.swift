import CameraMedia
import CameraTestSupport
import Foundation
import Testing

/// A virtual microphone heard by camctl processes at once, as arecord could
/// not (a hw: device answers the second with EBUSY): each in its own format,
/// every period heard or reported, the stamp's blocks in order and in place;
/// the WAV file one of them writes read back by ffprobe and decoded by ffmpeg.
@Suite struct ListenProcessTests {
    static let microphone = ["--virtual-microphones", "1"]

    @Test func twoProcessesHearOneMicrophoneAtOnceInTheirOwnFormats() async throws {
        try await withRunningDaemon(arguments: Self.microphone) { daemon in
            try await withTemporaryDirectory { folder in
                let wav = folder + "/heard.wav"
                async let native = camctl(["listen", "--duration", "4", "--json", "--check"], socket: daemon.socketPath,
                                          timeout: .seconds(60))
                async let converted = camctl(["listen", "virtual-microphone-0", "--rate", "16000", "--channels", "1", "--format", "s16",
                                              "--duration", "4", "--output", wav, "--json", "--check"],
                                             socket: daemon.socketPath, timeout: .seconds(60))
                let reports = [try StreamReport(try await native), try StreamReport(try await converted)]
                for (report, (rate, frames)) in zip(reports, [(48_000, 480), (16_000, 160)]) {
                    print("two listeners, one of them: \(report); \(String(describing: report.audioCheck))")
                    #expect(report.frames >= 10 && report.framesPerPeriod == frames)
                    #expect(report.accountsForEveryFrame, "\(report)")
                    #expect(report.samples == report.frames * frames && report.samplesDropped == report.totalDrops * frames)
                    let check = try #require(report.audioCheck)
                    #expect(check.outOfOrder == 0 && check.misplaced == 0, "\(check)")
                    // A block every 20 ms, less the part blocks at each run's ends.
                    #expect(check.blocks >= report.frames * frames * 50 / rate - 2 * check.runs, "\(check)")
                }

                // ffprobe's reading of the file, and ffmpeg's decoding of it.
                let probe = try await runProcess("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels",
                                                                      "-of", "default=noprint_wrappers=1", wav])
                #expect(probe.lines.sorted() == ["channels=1", "codec_name=pcm_s16le", "sample_rate=16000"], "\(probe)")
                let raw = folder + "/heard.f32"
                let decoded = try await runProcess("/usr/bin/ffmpeg", ["-v", "error", "-i", wav, "-f", "f32le", "-acodec", "pcm_f32le", raw])
                #expect(decoded.status == 0, "\(decoded.standardError)")
                let bytes = try Data(contentsOf: URL(fileURLWithPath: raw))
                let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
                #expect(samples.count == reports[1].samples, "every sample received is in the file")
                let blocks = AudioStamp.decode(samples, sampleRate: 16_000)
                let jumps = zip(blocks, blocks.dropFirst()).filter { $1.number != $0.number + 1 }.count
                #expect(blocks.count >= samples.count / 320 - 2 * (reports[1].audioCheck?.runs ?? 1))
                #expect(jumps <= (reports[1].audioCheck?.runs ?? 1) - 1, "blocks jump only where periods were dropped")
            }
        }
    }

    @Test func levelsOfAKnownTone() async throws {
        try await withRunningDaemon(virtualCameras: 0) { daemon in
            let added = try await camctl(["virtual", "add", "--audio", "--tone", "0.5"], socket: daemon.socketPath)
            #expect(added.lines == ["virtual-microphone-0"], "\(added)")
            let result = try await camctl(["levels", "--json"], socket: daemon.socketPath)
            #expect(result.status == 0, "\(result.standardError)")
            struct Reading: Decodable {
                struct Channel: Decodable {
                    let averagePowerLevel: Float
                    let peakHoldLevel: Float
                }
                let uniqueID: String
                let channels: [Channel]
            }
            let reading = try JSONDecoder().decode(Reading.self, from: Data(try #require(result.lines.last).utf8))
            #expect(reading.uniqueID == "virtual-microphone-0" && reading.channels.count == 2)
            for channel in reading.channels {
                #expect(abs(channel.averagePowerLevel - -9.03) <= 0.5 && abs(channel.peakHoldLevel - -6.02) <= 0.5, "\(channel)")
            }
        }
    }

    /// camctl as arecord's and ffmpeg's users expect it (issue 48, point 3):
    /// arecord's -D -f -r -c -t spellings (its -d is --duration: -d is camctl's device), the samples on standard output
    /// (`-o -`, or no --output into a file or pipe), no file written over
    /// without --force and never a link's target; FILE alone for record and
    /// snapshot (the first camera); a microphone refused by stream, a movie by
    /// its extension. ffprobe judges the files.
    @Test(.timeLimit(.minutes(4))) func camctlSpeaksArecordAndWritesOverNothing() async throws {
        try await withRunningDaemon(arguments: Self.microphone) { daemon in
            try await withTemporaryDirectory { folder in
                let wav = folder + "/cd.wav"
                let listen = ["listen", "-D", "virtual-microphone-0", "--duration", "1", "-f", "cd", "-o", wav]
                let first = try await camctl(listen, socket: daemon.socketPath, timeout: .seconds(60))
                #expect(first.status == 0, "\(first.standardError)")
                let probe = try await runProcess("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels",
                                                                     "-of", "compact=p=0", wav])
                #expect(probe.lines == ["codec_name=pcm_s16le|sample_rate=44100|channels=2"], "\(probe.standardOutput)")
                let heard = try Data(contentsOf: URL(fileURLWithPath: wav))

                // There already: kept, unless --force; a link is never written through, even forced.
                let again = try await camctl(listen, socket: daemon.socketPath, timeout: .seconds(60))
                #expect(again.status != 0 && again.standardError.contains("--force"), "\(again)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: wav)) == heard, "the file is as it was")
                let raw = folder + "/mono.raw"
                let forced = try await camctl(["listen", "--duration", "0.5", "-r", "16000", "-c", "1", "-f", "S16_LE", "-t", "raw", "-o", raw],
                                              socket: daemon.socketPath, timeout: .seconds(60))
                #expect(forced.status == 0, "\(forced.standardError)")
                let rawBytes = (try? FileManager.default.attributesOfItem(atPath: raw)[.size] as? Int) ?? 0
                #expect(rawBytes > 0 && rawBytes % 2 == 0 && rawBytes <= 16_000 * 2, "raw: samples alone, \(rawBytes) bytes")
                let replaced = try await camctl(listen.map { $0 == "1" ? "0.5" : $0 } + ["--force"], socket: daemon.socketPath, timeout: .seconds(60))
                let replacedBytes = try Data(contentsOf: URL(fileURLWithPath: wav))
                #expect(replaced.status == 0 && replacedBytes != heard, "\(replaced.standardError)")
                let kept = folder + "/kept.txt"
                try Data("kept".utf8).write(to: URL(fileURLWithPath: kept))
                #expect(symlink(kept, folder + "/link.wav") == 0)
                let throughLink = try await camctl(["listen", "--duration", "0.5", "-o", folder + "/link.wav", "--force"], socket: daemon.socketPath)
                #expect(throughLink.status != 0 && throughLink.standardError.contains("symbolic link"), "\(throughLink)")
                #expect(try String(contentsOfFile: kept, encoding: .utf8) == "kept")

                // Standard output, into a pipe: '-', or no --output when it is no terminal.
                for output in ["-o -", ""] {
                    let piped = try await runProcess("/bin/sh", ["-c", "\"$0\" --socket \"$1\" listen --duration 0.5 \(output) | head -c 12",
                                                                 Binaries.camctl, daemon.socketPath], timeout: .seconds(60))
                    #expect(piped.standardOutput.hasPrefix("RIFF") && piped.standardOutput.hasSuffix("WAVE"), "'\(output)': \(piped)")
                }

                // FILE alone: the first camera, as the help says.
                let movie = folder + "/first.mp4"
                let recorded = try await camctl(["record", movie, "--duration", "0.5", "--size", "320x240"], socket: daemon.socketPath,
                                                timeout: .seconds(60))
                #expect(recorded.status == 0, "\(recorded.standardError)")
                #expect(MovieProbe.frames(try await MovieProbe.videoStream(movie)) > 0)
                let photo = try await camctl(["snapshot", folder + "/first.jpg"], socket: daemon.socketPath, timeout: .seconds(60))
                #expect(photo.status == 0 && FileManager.default.fileExists(atPath: folder + "/first.jpg"), "\(photo.standardError)")

                // A microphone has no picture; a movie is no WAV file.
                let streamed = try await camctl(["stream", "virtual-microphone-0", "--count", "1"], socket: daemon.socketPath)
                #expect(streamed.status != 0 && streamed.standardError.contains("is a microphone"), "\(streamed)")
                let wrongType = try await camctl(["record", "virtual-0", folder + "/movie.wav", "--duration", "0.5"], socket: daemon.socketPath)
                #expect(wrongType.status != 0 && wrongType.standardError.contains(".mp4"), "\(wrongType)")
                #expect(!FileManager.default.fileExists(atPath: folder + "/movie.wav"))
            }
        }
    }

    @Test func aCameraIsNoMicrophone() async throws {
        try await withRunningDaemon(arguments: Self.microphone) { daemon in
            for command in [["listen", "virtual-0", "--duration", "1"], ["levels", "virtual-0", "--json"]] {
                let result = try await camctl(command, socket: daemon.socketPath)
                #expect(result.status != 0 && result.standardError.contains("is a camera"), "\(result)")
            }
            let refused = try await camctl(["listen", "--rate", "12345", "--duration", "1"], socket: daemon.socketPath)
            #expect(refused.status != 0 && refused.standardError.contains("44100"), "\(refused)")
        }
    }
}

/// A minute of a microphone at two formats at once: every sample heard or
/// reported lost with a reason, the stamp in order and in place throughout.
@Suite struct MinuteOfAudioTests {
    @Test func everySampleOfAMinuteIsAccountedFor() async throws {
        try await withRunningDaemon(virtualCameras: 0, arguments: ["--virtual-microphones", "1"]) { daemon in
            async let native = camctl(["listen", "--duration", "60", "--json", "--check"], socket: daemon.socketPath,
                                      timeout: .seconds(180))
            async let converted = camctl(["listen", "--rate", "44100", "--channels", "1", "--format", "s16", "--duration", "60",
                                          "--json", "--check"], socket: daemon.socketPath, timeout: .seconds(180))
            let reports = [try StreamReport(try await native), try StreamReport(try await converted)]
            for (report, rate) in zip(reports, [48_000, 44_100]) {
                print("a minute of audio: \(report); \(String(describing: report.audioCheck))")
                let frames = try #require(report.framesPerPeriod)
                #expect(report.accountsForEveryFrame, "\(report)")
                #expect(report.samples == report.frames * frames && report.samplesDropped == report.totalDrops * frames)
                // A minute of the microphone's clock: every period from the first to the last is here or reported.
                #expect(Double(report.accounting.span * frames) / Double(rate) >= 59, "\(report)")
                let check = try #require(report.audioCheck)
                #expect(check.outOfOrder == 0 && check.misplaced == 0, "\(check)")
                #expect(check.blocks >= report.frames * frames * 50 / rate - 2 * check.runs, "\(check)")
            }
        }
    }
}
