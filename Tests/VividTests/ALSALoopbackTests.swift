import CALSA
import CameraMedia
import CameraTestSupport
import Foundation
import Glibc
import Testing

extension VividGuestTests {
    /// ALSA's loopback card (snd-aloop) plugged in the VM: what `aplay` plays
    /// into its first device, camerad captures from its second — found at
    /// start as an audio device — and two `camctl listen` processes hear it at
    /// once, in three formats (its own, read from the capture's slots; 16 kHz
    /// mono and 48 kHz float, each an ``AudioVariant``), where `arecord` on the
    /// same subdevice gets EBUSY. The signal is the virtual microphones' stamp,
    /// rendered into a WAV file: decoded from what each listener heard, every
    /// block follows the one before at the same distance from where its number
    /// puts it (no sample lost or repeated), at 48 kHz exactly.
    @Test func aLoopbackMicrophoneIsHeardByThreeProcessesWhereArecordGetsBusy() async throws {
        let module = try #require(ProcessInfo.processInfo.environment["VIVID_VM_ALOOP_MODULE"])
        let insmod = try await runProcess("/bin/busybox", ["insmod", module])
        try #require(insmod.status == 0, "insmod snd-aloop: \(insmod.standardError)")
        do {
            try Self.addCaptureVolume(card: "hw:CARD=Loopback")
            try await hearTheLoopback()
        } catch {
            _ = try? await runProcess("/bin/busybox", ["rmmod", "snd_aloop"])
            throw error
        }
        // Unplugged again: the suite's other daemons see only vivid.
        _ = try await runProcess("/bin/busybox", ["rmmod", "snd_aloop"])
    }

    private func hearTheLoopback() async throws {
        try await withTemporaryDirectory { folder in
            // Eight seconds of the stamp, 48 kHz stereo S16, as a WAV file.
            let frames = 48_000 * 8
            var samples = [Int16](repeating: 0, count: frames * 2)
            samples.withUnsafeMutableBufferPointer { AudioStamp.render(into: $0, channels: 2, from: 0) }
            let played = folder + "/stamp.wav"
            try Self.wav(samples, rate: 48_000, channels: 2).write(to: URL(fileURLWithPath: played))

            try await Vivid.withDaemon { daemon in
                let list = try await camctl(["list", "--json"], socket: daemon.socketPath)
                let devices = try #require(try Vivid.json(list) as? [[String: Any]], "\(list)")
                let microphones = devices.filter { $0["mediaType"] as? String == "audio" }.compactMap { $0["uniqueID"] as? String }
                #expect(microphones.contains("alsa-Loopback-1"), "\(microphones)")
                let info = try await camctl(["info", "alsa-Loopback-1"], socket: daemon.socketPath)
                #expect(info.standardOutput.contains("hw:CARD=Loopback,DEV=1") && info.standardOutput.contains("RATE:        48000"),
                        "\(info.standardOutput)")

                // The card's capture volume is the microphone's input gain: set through camerad, as amixer reads it.
                #expect(info.standardOutput.contains("Input gain: 0.00"), "\(info.standardOutput)")
                let set = try await camctl(["set", "alsa-Loopback-1", "--input-gain", "0.25"], socket: daemon.socketPath)
                #expect(set.status == 0 && set.standardOutput.contains("input gain: 0.25"), "\(set.standardOutput)\(set.standardError)")
                let amixer = try await runProcess("/usr/bin/amixer", ["-c", "Loopback", "cget", "name=Capture Volume"])
                #expect(amixer.standardOutput.contains(": values=25,25"), "amixer: \(amixer.standardOutput)\(amixer.standardError)")

                // All three listen (the loopback captures silence until aplay plays), each checking the stamp it hears.
                let listeners = try [
                    RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "listen", "alsa-Loopback-1", "--duration", "60",
                                                     "--periods-in-flight", "16", "--check", "--json"]),
                    RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "listen", "alsa-Loopback-1", "--duration", "60",
                                                     "--rate", "16000", "--channels", "1", "--periods-in-flight", "16", "--check", "--json"]),
                    RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "listen", "alsa-Loopback-1", "--duration", "60",
                                                     "--format", "f32", "--periods-in-flight", "16", "--check", "--json"]),
                ]
                #expect(await waitUntil(timeout: .seconds(60)) {
                    (try? String(contentsOfFile: "/proc/asound/Loopback/pcm1c/sub0/status", encoding: .utf8))?.contains("RUNNING") == true
                }, "camerad captures from the loopback for its listeners")
                // camerad holds the capture subdevice: a second program cannot open it.
                let arecord = try await runProcess("/usr/bin/arecord", ["-D", "hw:CARD=Loopback,DEV=1,SUBDEV=0", "-d", "1",
                                                                        "-f", "S16_LE", "-r", "48000", "-c", "2", "/dev/null"])
                #expect(arecord.status != 0 && arecord.standardError.contains("busy"), "\(arecord.standardError)")
                let aplay = try await runProcess("/usr/bin/aplay", ["--buffer-time=1000000", "-D", "hw:CARD=Loopback,DEV=0,SUBDEV=0", played],
                                                 timeout: .seconds(60))
                #expect(aplay.status == 0, "aplay: \(aplay.standardError)")
                let underran = aplay.standardError.contains("underrun")
                for (listener, format) in zip(listeners, ["its own format", "16 kHz mono", "48 kHz f32"]) {
                    let report = try StreamReport(await listener.stop(timeout: .seconds(30)))
                    let check = try #require(report.audioCheck)
                    print(Vivid.figures + "snd-aloop heard in \(format): \(report); \(check); aplay said: \(aplay.standardError)")
                    #expect(report.accountsForEveryFrame, "\(report)")
                    #expect(check.blocks >= 100, "most of the eight seconds played were heard")
                    #expect(check.outOfOrder == 0, "no block repeats or goes back in an unbroken run: \(check)")
                    // Exact across the runs a listener's own drops split (the periods' numbers place them), unless
                    // the device overran — the VM stalled past its second of buffer —, which loses frames measured
                    // to a few samples, not exactly, or aplay underran.
                    if report.drops["discontinuity", default: 0] == 0 && !underran {
                        #expect(check.placementSpread <= 3, "\(check)")
                    }
                }
                for line in daemon.logText.split(separator: "\n") where line.contains("overran") || line.contains("runs at") {
                    print(Vivid.figures + "camerad: \(line)")
                }
            }
        }
    }

    /// snd-aloop loaded while camerad runs: its capture PCMs are served as their
    /// nodes come (the kernel's events through libudev, or inotify on /dev/snd);
    /// a listener ends as disconnected when the card goes under it (unbound from
    /// its driver while camerad reads it: an unplug, as the kernel does it), the
    /// microphones leave the list, and come back with the same uniqueIDs when the
    /// card is bound again.
    @Test(arguments: ["auto", "inotify"])
    func aLoopbackCardPluggedInAndOutIsFollowed(hotplug: String) async throws {
        let module = try #require(ProcessInfo.processInfo.environment["VIVID_VM_ALOOP_MODULE"])
        let loopback: Set = ["alsa-Loopback-0", "alsa-Loopback-1"]
        defer { _ = Glibc.system("/bin/busybox rmmod snd_aloop 2>/dev/null") }
        try await Vivid.withDaemon(arguments: ["--hotplug", hotplug]) { daemon in
            #expect(try await Self.microphones(daemon, become: []), "no sound card yet")
            let insmod = try await runProcess("/bin/busybox", ["insmod", module])
            try #require(insmod.status == 0, "insmod snd-aloop: \(insmod.standardError)")
            #expect(try await Self.microphones(daemon, become: loopback), "served as they came")

            let listener = try RunningProcess(Binaries.camctl, ["--socket", daemon.socketPath, "listen", "alsa-Loopback-1",
                                                                "--duration", "60", "--json"])
            #expect(await waitUntil(timeout: .seconds(60)) {
                (try? String(contentsOfFile: "/proc/asound/Loopback/pcm1c/sub0/status", encoding: .utf8))?.contains("RUNNING") == true
            }, "camerad captures for its listener")
            // The kernel disconnects the card at once, and waits for camerad to close it.
            let unbind = try await runProcess("/bin/sh", ["-c", "echo snd_aloop.0 > /sys/bus/platform/drivers/snd_aloop/unbind"],
                                              timeout: .seconds(60))
            #expect(unbind.status == 0, "unbind: \(unbind.standardError)")
            #expect(await listener.wait(timeout: .seconds(60)) { !$0.process.isRunning }, "the listener ends by itself")
            let ended = await listener.stop()
            #expect(ended.status != 0 && ended.standardError.contains("disconnected"), "camctl ended with \(ended.status): \(ended.standardError)")
            #expect(try await Self.microphones(daemon, become: []), "both gone with the card")

            let bind = try await runProcess("/bin/sh", ["-c", "echo snd_aloop.0 > /sys/bus/platform/drivers/snd_aloop/bind"])
            #expect(bind.status == 0, "bind: \(bind.standardError)")
            #expect(try await Self.microphones(daemon, become: loopback), "back, with the same uniqueIDs")
            let again = try await camctl(["listen", "alsa-Loopback-1", "--duration", "0.5", "--json"], socket: daemon.socketPath)
            #expect(again.status == 0, "heard again: \(again.standardError)")
            #expect(!daemon.hasExited)
            let expected = hotplug == "inotify" ? "following hotplug through inotify on /dev" : "following hotplug through kernel events"
            #expect(daemon.logText.contains(expected), "\(daemon.logText)")
        }
    }

    /// Waits up to a minute until the daemon lists exactly these microphones.
    static func microphones(_ daemon: DaemonProcess, become uniqueIDs: Set<String>) async throws -> Bool {
        try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
            let list = try await camctl(["list", "--json"], socket: daemon.socketPath)
            let devices = (try? Vivid.json(list)) as? [[String: Any]] ?? []
            return Set(devices.filter { $0["mediaType"] as? String == "audio" }.compactMap { $0["uniqueID"] as? String }) == uniqueIDs
        }
    }

    /// Gives a card a "Capture Volume" (stereo, 0 to 100, at 0), as a user
    /// control: snd-aloop has none, a USB microphone has one; amixer and
    /// camerad see it as the card's capture volume either way.
    static func addCaptureVolume(card: String) throws {
        var control: OpaquePointer?
        guard snd_ctl_open(&control, card, 0) == 0, let control else { throw DaemonFailure("cannot open \(card)'s controls") }
        defer { snd_ctl_close(control) }
        var id: OpaquePointer?
        snd_ctl_elem_id_malloc(&id)
        defer { snd_ctl_elem_id_free(id) }
        snd_ctl_elem_id_set_interface(id, SND_CTL_ELEM_IFACE_MIXER)
        snd_ctl_elem_id_set_name(id, "Capture Volume")
        let added = snd_ctl_elem_add_integer(control, id, 2, 0, 100, 1)
        guard added == 0 else { throw DaemonFailure("cannot add a capture volume to \(card): \(String(cString: snd_strerror(added)))") }
    }

    /// A 16-bit PCM WAV file of `samples`.
    static func wav(_ samples: [Int16], rate: Int, channels: Int) -> Data {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8))
        append(UInt32(36 + samples.count * 2))
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16)); append(UInt16(1)); append(UInt16(channels)); append(UInt32(rate))
        append(UInt32(rate * channels * 2)); append(UInt16(channels * 2)); append(UInt16(16))
        data.append(contentsOf: Array("data".utf8))
        append(UInt32(samples.count * 2))
        samples.withUnsafeBytes { data.append(contentsOf: $0) }
        return data
    }
}
