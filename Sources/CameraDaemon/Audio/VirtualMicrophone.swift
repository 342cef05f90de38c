import CameraMedia
import Logging
import Synchronization

/// A virtual microphone, "virtual-microphone-<index>" (`camerad
/// --virtual-microphones N`, `camctl virtual add --audio`): 48 kHz stereo
/// float in 10 ms periods, hearing the ``AudioStamp`` signal — a test decodes
/// it to check every sample's place — a plain tone of a known level, or
/// clicks at the instants virtual cameras flash (``SyncMarks``). Its clock
/// runs on CLOCK_MONOTONIC, or `driftPPM` off it (`--drift-ppm`), as a sound
/// card's crystal does: what sound kept on the picture's clock is tested with.
/// Each capture is a ``VirtualMicrophoneCapture``.
final class VirtualMicrophone: MicrophoneBackend {
    /// What it hears.
    enum Signal: Sendable, Equatable {
        /// ``AudioStamp``: a tone under marks naming each block's place.
        case stamp
        /// A 1 kHz sine alone, its peak `amplitude` (0–1): a known level.
        case tone(amplitude: Float)
        /// ``SyncMarks``' clicks at every whole second of CLOCK_MONOTONIC, over
        /// a quiet tone: the instants a camera with sync marks flashes.
        case syncClicks
    }

    /// Its format: AudioStamp's rate, stereo float, 10 ms periods.
    static let layout = AudioLayout(sampleRate: AudioStamp.sampleRate, channels: 2, sampleFormat: .f32, framesPerPeriod: 480)

    let index: Int
    let uniqueID: String
    let localizedName: String
    let signal: Signal
    /// How far its clock runs fast (slow, below 0) of CLOCK_MONOTONIC, in parts per million.
    let driftPPM: Int
    let audio = AudioCapabilities(native: VirtualMicrophone.layout)
    /// Its input gain, 0 to 1: what it hears, scaled (1, the signal as made, at first).
    let gain = Gain()

    /// A gain read by the capture thread each period and set by the executor.
    final class Gain: Sendable {
        private let bits = Atomic<UInt32>(Float(1).bitPattern)
        var value: Float { Float(bitPattern: bits.load(ordering: .relaxed)) }
        func set(_ value: Float) { bits.store(value.bitPattern, ordering: .relaxed) }
    }

    /// Drift a virtual microphone may be given: ±1 %, far past a real card's tens of ppm.
    static let driftRange = -10_000...10_000

    init(index: Int, localizedName: String = "", signal: Signal = .stamp, driftPPM: Int = 0) {
        precondition(Self.driftRange.contains(driftPPM), "a drift of \(driftPPM) ppm")
        self.index = index
        uniqueID = "virtual-microphone-\(index)"
        self.localizedName = localizedName.isEmpty ? "Virtual Microphone \(index)" : localizedName
        self.signal = signal
        self.driftPPM = driftPPM
    }

    func describe() -> DeviceDescription {
        .microphone(uniqueID: uniqueID, modelID: "camerad-virtual-microphone", localizedName: localizedName,
                    manufacturer: "camerad", backend: .virtual, audio: audio)
    }

    var inputGain: Float? { gain.value }

    func setInputGain(_ value: Float) throws(CameraError) { gain.set(value) }

    func startCapture(budget: ClientBudget, logger: Logger,
                      onFailure: @escaping @Sendable (CameraError) -> Void) throws(CameraError) -> any AudioCapture {
        try VirtualMicrophoneCapture(name: uniqueID, layout: audio.native, signal: signal, gain: gain, driftPPM: driftPPM,
                                     budget: budget, logger: logger)
    }
}
