import CALSA
import CameraMedia
import Foundation
import Glibc
import Logging

/// Finds the machine's ALSA capture PCMs: every card's at start, then each
/// one ``DeviceHotplug`` sees come (`/dev/snd/pcmC<card>D<device>c`), each a
/// ``ALSAMicrophone`` in the registry until its node goes. Each is opened once
/// to learn the format it takes; one another program holds is left out, and
/// the log says so.
final class ALSADiscovery: Sendable {
    /// The format asked of every device: what a virtual microphone has, at S16 (what USB microphones take).
    static let wanted = AudioLayout(sampleRate: 48_000, channels: 2, sampleFormat: .s16, framesPerPeriod: 480)

    private let registry: DeviceRegistry
    private let logger: Logger
    /// Where sysfs is, for a USB device's identity ("/sys"; a test's tree).
    private let sysfs: String

    init(registry: DeviceRegistry, logger: Logger, sysfs: String = "/sys") {
        self.registry = registry
        self.logger = logger
        self.sysfs = sysfs
        calsa_silence_errors()
    }

    /// Serves every capture PCM of every card now, in card and device order; returns the microphones added.
    @discardableResult
    func scan() -> [ALSAMicrophone] {
        var added: [ALSAMicrophone] = []
        var card: Int32 = -1
        while snd_card_next(&card) == 0, card >= 0 {
            for device in Self.captureDevices(card: card) {
                if let microphone = add(card: card, device: device) { added.append(microphone) }
            }
        }
        return added
    }

    /// Probes one capture PCM and serves it; nil when it is none, cannot be
    /// opened now, or is served already.
    @discardableResult
    func add(card: Int32, device: Int32) -> ALSAMicrophone? {
        let microphone: ALSAMicrophone
        do {
            guard let found = try Self.microphone(card: card, device: device, sysfs: sysfs) else { return nil }
            microphone = found
        } catch {
            logger.notice("hw:\(card),\(device) is not served: \(error.message)")
            return nil
        }
        do {
            try registry.add(microphone: microphone)
        } catch {
            logger.debug("\(microphone.devicePath): \(microphone.uniqueID) is already served; skipped")
            return nil
        }
        logger.info("serving \(microphone.devicePath) as \(microphone.uniqueID): \(microphone.audio.native)")
        return microphone
    }

    /// With kernel or inotify events the node may not answer for a moment (udev
    /// still sets its permissions): try for a second.
    func addWhenReady(card: Int32, device: Int32) {
        for _ in 0..<10 {
            if add(card: card, device: device) != nil || served(card: card, device: device) != nil { return }
            usleep(100_000)
        }
    }

    /// Removes the microphone of a capture PCM whose node went: its listeners end as disconnected.
    func remove(card: Int32, device: Int32) {
        guard let microphone = served(card: card, device: device) else { return }
        logger.info("\(microphone.devicePath): \(microphone.uniqueID) unplugged")
        registry.remove(microphone.uniqueID)
    }

    private func served(card: Int32, device: Int32) -> ALSAMicrophone? {
        registry.microphones.lazy.compactMap { $0.microphone as? ALSAMicrophone }.first { $0.card == card && $0.device == device }
    }

    // MARK: - Probing

    /// The devices of `card` that capture.
    static func captureDevices(card: Int32) -> [Int32] {
        var control: OpaquePointer?
        guard snd_ctl_open(&control, "hw:\(card)", 0) == 0, let control else { return [] }
        defer { snd_ctl_close(control) }
        var devices: [Int32] = []
        var device: Int32 = -1
        while snd_ctl_pcm_next_device(control, &device) == 0, device >= 0 {
            if pcmName(control, device: device) != nil { devices.append(device) }
        }
        return devices
    }

    /// The capture PCM `hw:card,device` as a microphone, its format probed; nil when it does not capture.
    ///
    /// - Throws: the device's error when it cannot be opened or set (another program holds it).
    static func microphone(card: Int32, device: Int32, sysfs: String = "/sys") throws(CameraError) -> ALSAMicrophone? {
        var control: OpaquePointer?
        guard snd_ctl_open(&control, "hw:\(card)", 0) == 0, let control else { return nil }
        defer { snd_ctl_close(control) }
        var info: OpaquePointer?
        snd_ctl_card_info_malloc(&info)
        defer { snd_ctl_card_info_free(info) }
        guard snd_ctl_card_info(control, info) == 0, let pcmName = pcmName(control, device: device) else { return nil }
        let cardID = String(cString: snd_ctl_card_info_get_id(info))
        let cardName = String(cString: snd_ctl_card_info_get_name(info))
        let driver = String(cString: snd_ctl_card_info_get_driver(info))
        let path = "hw:CARD=\(cardID),DEV=\(device)"
        let native = try probe(path)
        let name = pcmName.isEmpty || pcmName == cardName ? cardName : "\(cardName): \(pcmName)"
        let usb = USBParent.of(sysfs + "/class/sound/card\(card)")
        return ALSAMicrophone(uniqueID: uniqueID(usb: usb, cardID: cardID, device: device), card: card, device: device,
                              devicePath: path, localizedName: name, manufacturer: usb?.manufacturer ?? driver, usbDevice: usb?.path,
                              gainControl: ALSAInputGain.find(card: "hw:CARD=\(cardID)"), native: native)
    }

    /// The name of `device`'s first capture subdevice on the card `control` opens; nil when it has none.
    private static func pcmName(_ control: OpaquePointer, device: Int32) -> String? {
        var pcmInfo: OpaquePointer?
        snd_pcm_info_malloc(&pcmInfo)
        defer { snd_pcm_info_free(pcmInfo) }
        snd_pcm_info_set_device(pcmInfo, UInt32(device))
        snd_pcm_info_set_subdevice(pcmInfo, 0)
        snd_pcm_info_set_stream(pcmInfo, SND_PCM_STREAM_CAPTURE)
        guard snd_ctl_pcm_info(control, pcmInfo) == 0 else { return nil }
        return String(cString: snd_pcm_info_get_name(pcmInfo))
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
    static func uniqueID(usb: USBParent?, cardID: String, device: Int32) -> String {
        guard let usb else { return "alsa-\(cardID)-\(device)" }
        return "usb-\(usb.model)\(usb.place)-audio-\(device)"
    }
}
