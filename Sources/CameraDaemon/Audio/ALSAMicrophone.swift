import CALSA
import CameraIPC
import CameraMedia
import Foundation
import Glibc
import Logging
import Synchronization

/// An ALSA capture PCM (`hw:CARD=Loopback,DEV=1`, a USB microphone's): found at
/// start or plugged in later (``ALSADiscovery``), opened by camerad while anyone listens, read on a
/// capture thread of its own (``ALSACapture``). Its own format is what the
/// device takes closest to 48 kHz stereo S16 in 10 ms periods, probed once.
final class ALSAMicrophone: MicrophoneBackend {
    let uniqueID: String
    /// The card's and the PCM's numbers now (`/dev/snd/pcmC<card>D<device>c`):
    /// what a node's removal names, while it is plugged in.
    let card: Int32
    let device: Int32
    /// "hw:CARD=<id>,DEV=<n>": by the card's id, which survives reordering.
    let devicePath: String
    let localizedName: String
    let manufacturer: String
    let audio: AudioCapabilities
    let usbDevice: String?
    /// Its card's capture volume, when it has one.
    private let gainControl: ALSAInputGain?
    /// The gain as camerad last set or read it.
    private let gain: OrderedMutex<Float?>

    init(uniqueID: String, card: Int32, device: Int32, devicePath: String, localizedName: String, manufacturer: String,
         usbDevice: String?, gainControl: ALSAInputGain? = nil, native: AudioLayout) {
        self.uniqueID = uniqueID
        self.usbDevice = usbDevice
        self.gainControl = gainControl
        gain = OrderedMutex(.cameraState, gainControl.flatMap { $0.read() })
        self.card = card
        self.device = device
        self.devicePath = devicePath
        self.localizedName = localizedName
        self.manufacturer = manufacturer
        audio = AudioCapabilities(native: native)
    }

    func describe() -> DeviceDescription {
        .microphone(uniqueID: uniqueID, modelID: "alsa", localizedName: localizedName, manufacturer: manufacturer,
                    backend: .alsa, devicePath: devicePath, audio: audio)
    }

    var inputGain: Float? {
        guard gainControl != nil else { return nil }
        return gain.withLock { $0 } ?? 0
    }

    func setInputGain(_ value: Float) throws(CameraError) {
        guard let gainControl else {
            throw CameraError(.unsupported, "\(uniqueID)'s card has no capture volume to set (isInputGainSettable is false)")
        }
        try gainControl.set(value)
        let now = gainControl.read() ?? value
        gain.withLock { $0 = now }
    }

    func startCapture(budget: ClientBudget, logger: Logger,
                      onFailure: @escaping @Sendable (CameraError) -> Void) throws(CameraError) -> any AudioCapture {
        let pcm = try ALSAPCM.open(devicePath)
        do throws(CameraError) {
            let layout = try pcm.configure(audio.native)
            guard layout == audio.native else {
                throw CameraError(.deviceBusy, "\(devicePath) runs \(layout) now, not \(audio.native); another program set it")
            }
        } catch {
            pcm.close()
            throw error
        }
        return try ALSACapture(pcm: pcm, layout: audio.native, name: uniqueID, budget: budget, logger: logger, onFailure: onFailure)
    }
}

/// One open capture PCM, closed by ``close()`` or when the last reference
/// goes. Not Sendable: it is handed over whole (`sending`), from the executor
/// that sets it up to the capture thread that reads and closes it.
final class ALSAPCM {
    let handle: OpaquePointer
    let path: String
    private var isClosed = false

    private init(handle: OpaquePointer, path: String) {
        self.handle = handle
        self.path = path
    }

    /// Opens `path` for capture, non-blocking.
    ///
    /// - Throws: DEVICE_BUSY when another program holds it, DEVICE_NOT_FOUND when it is gone.
    static func open(_ path: String) throws(CameraError) -> ALSAPCM {
        calsa_silence_errors()
        var handle: OpaquePointer?
        let result = snd_pcm_open(&handle, path, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        guard result == 0, let handle else { throw error(result, "opening \(path)") }
        return ALSAPCM(handle: handle, path: path)
    }

    /// Closes it (once: later calls do nothing).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        snd_pcm_close(handle)
    }

    deinit { close() }

    /// Sets the hardware and software parameters nearest `wanted`: interleaved
    /// access, its sample format if the device has it (else S16, S32, FLOAT),
    /// its channels (else the nearest), its rate (nearest), its period (nearest)
    /// and a buffer of a second (a thread held up that long loses nothing;
    /// latency is a period whatever the buffer); timestamps on CLOCK_MONOTONIC.
    /// Returns what the device took.
    func configure(_ wanted: AudioLayout) throws(CameraError) -> AudioLayout {
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(handle, hw), "reading its parameters")
        try check(snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "asking for interleaved samples")
        let candidates = [wanted.sampleFormat] + [AudioLayout.SampleFormat.s16, .s32, .f32].filter { $0 != wanted.sampleFormat }
        guard let format = candidates.first(where: { snd_pcm_hw_params_test_format(handle, hw, Self.alsaFormat($0)) == 0 }) else {
            throw CameraError(.unsupportedFormat, "\(path) captures none of S16_LE, S32_LE, FLOAT_LE")
        }
        try check(snd_pcm_hw_params_set_format(handle, hw, Self.alsaFormat(format)), "setting its format")
        var channels = UInt32(wanted.channels)
        try check(snd_pcm_hw_params_set_channels_near(handle, hw, &channels), "setting its channels")
        var rate = UInt32(wanted.sampleRate)
        try check(snd_pcm_hw_params_set_rate_near(handle, hw, &rate, nil), "setting its rate")
        var period = snd_pcm_uframes_t(wanted.framesPerPeriod)
        try check(snd_pcm_hw_params_set_period_size_near(handle, hw, &period, nil), "setting its period")
        var buffer = snd_pcm_uframes_t(rate)
        try check(snd_pcm_hw_params_set_buffer_size_near(handle, hw, &buffer), "setting its buffer")
        try check(snd_pcm_hw_params(handle, hw), "applying its parameters")

        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(handle, sw), "reading its software parameters")
        try check(snd_pcm_sw_params_set_avail_min(handle, sw, period), "setting its wake-up")
        try check(snd_pcm_sw_params_set_tstamp_mode(handle, sw, SND_PCM_TSTAMP_ENABLE), "enabling timestamps")
        try check(snd_pcm_sw_params_set_tstamp_type(handle, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC), "timestamps on CLOCK_MONOTONIC")
        try check(snd_pcm_sw_params(handle, sw), "applying its software parameters")
        return AudioLayout(sampleRate: Int(rate), channels: Int(channels), sampleFormat: format, framesPerPeriod: Int(period))
    }

    /// The descriptor to poll for captured frames (a hw device has one).
    var pollDescriptor: Int32 {
        var poll = pollfd()
        return snd_pcm_poll_descriptors(handle, &poll, 1) == 1 ? poll.fd : -1
    }

    static func alsaFormat(_ format: AudioLayout.SampleFormat) -> snd_pcm_format_t {
        switch format {
        case .s16: SND_PCM_FORMAT_S16_LE
        case .s32: SND_PCM_FORMAT_S32_LE
        case .f32: SND_PCM_FORMAT_FLOAT_LE
        }
    }

    func check(_ result: Int32, _ what: String) throws(CameraError) {
        guard result >= 0 else { throw Self.error(result, "\(what) on \(path)") }
    }

    /// A libasound result as camerad's error.
    static func error(_ result: Int32, _ what: String) -> CameraError {
        let reason = String(cString: snd_strerror(result))
        switch -result {
        case EBUSY: return CameraError(.deviceBusy, "\(what): it is in use by another program (\(reason)); close it there first")
        case ENODEV, ENOENT, ENXIO: return CameraError(.deviceDisconnected, "\(what): the device was disconnected (\(reason)); it is served again when it is back")
        default: return CameraError(.internalError, "\(what) failed: \(reason)")
        }
    }
}
