import CALSA
import CameraMedia
import Foundation
import Glibc
import Logging

/// Finds the machine's ALSA capture PCMs at start, each a ``ALSAMicrophone``
/// (not yet followed through hotplug: a card that comes later is served after
/// a restart). Each is opened once to learn the format it takes; one another
/// program holds is left out, and the log says so.
enum ALSADiscovery {
    /// The format asked of every device: what a virtual microphone has, at S16 (what USB microphones take).
    static let wanted = AudioLayout(sampleRate: 48_000, channels: 2, sampleFormat: .s16, framesPerPeriod: 480)

    /// Every capture PCM of every card, probed.
    static func scan(logger: Logger) -> [ALSAMicrophone] {
        calsa_silence_errors()
        var microphones: [ALSAMicrophone] = []
        var card: Int32 = -1
        while snd_card_next(&card) == 0, card >= 0 {
            var control: OpaquePointer?
            guard snd_ctl_open(&control, "hw:\(card)", 0) == 0, let control else { continue }
            defer { snd_ctl_close(control) }
            var info: OpaquePointer?
            snd_ctl_card_info_malloc(&info)
            defer { snd_ctl_card_info_free(info) }
            guard snd_ctl_card_info(control, info) == 0 else { continue }
            let cardID = String(cString: snd_ctl_card_info_get_id(info))
            let cardName = String(cString: snd_ctl_card_info_get_name(info))
            let driver = String(cString: snd_ctl_card_info_get_driver(info))
            var device: Int32 = -1
            while snd_ctl_pcm_next_device(control, &device) == 0, device >= 0 {
                var pcmInfo: OpaquePointer?
                snd_pcm_info_malloc(&pcmInfo)
                defer { snd_pcm_info_free(pcmInfo) }
                snd_pcm_info_set_device(pcmInfo, UInt32(device))
                snd_pcm_info_set_subdevice(pcmInfo, 0)
                snd_pcm_info_set_stream(pcmInfo, SND_PCM_STREAM_CAPTURE)
                guard snd_ctl_pcm_info(control, pcmInfo) == 0 else { continue }
                let pcmName = String(cString: snd_pcm_info_get_name(pcmInfo))
                let path = "hw:CARD=\(cardID),DEV=\(device)"
                do {
                    let native = try probe(path)
                    let name = pcmName.isEmpty || pcmName == cardName ? cardName : "\(cardName): \(pcmName)"
                    microphones.append(ALSAMicrophone(uniqueID: uniqueID(card: card, cardID: cardID, device: device),
                                                      devicePath: path, localizedName: name, manufacturer: driver, native: native))
                } catch {
                    logger.notice("\(path) is not served: \(error.message)")
                }
            }
        }
        return microphones
    }

    /// The format `path` takes nearest ``wanted``: opened, set, closed.
    static func probe(_ path: String) throws(CameraError) -> AudioLayout {
        let pcm = try ALSAPCM.open(path)
        defer { pcm.close() }
        return try pcm.configure(wanted)
    }

    /// Stable across reboots and re-plugging, never hw:N: a USB device's
    /// vendor, product and serial (or its port), as a camera's; else the
    /// card's id ("Loopback"); with the PCM's device number.
    static func uniqueID(card: Int32, cardID: String, device: Int32) -> String {
        let sysfs = URL(fileURLWithPath: "/sys/class/sound/card\(card)/device").resolvingSymlinksInPath()
        var directory = sysfs
        while directory.path.count > 1 {
            let vendor = try? String(contentsOfFile: directory.path + "/idVendor", encoding: .utf8)
            let product = try? String(contentsOfFile: directory.path + "/idProduct", encoding: .utf8)
            if let vendor, let product {
                let ids = "\(vendor.trimmingCharacters(in: .whitespacesAndNewlines)):\(product.trimmingCharacters(in: .whitespacesAndNewlines))"
                if let serial = try? String(contentsOfFile: directory.path + "/serial", encoding: .utf8) {
                    return "usb-\(ids)-\(serial.trimmingCharacters(in: .whitespacesAndNewlines))-audio-\(device)"
                }
                return "usb-\(ids)@\(directory.lastPathComponent)-audio-\(device)"
            }
            directory.deleteLastPathComponent()
        }
        return "alsa-\(cardID)-\(device)"
    }
}
