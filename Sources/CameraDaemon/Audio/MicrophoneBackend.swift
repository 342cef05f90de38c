import CameraMedia
import Logging

/// One microphone as the daemon drives it, whatever it is underneath: a
/// virtual microphone or (next) an ALSA capture PCM — the audio side of
/// ``CameraBackend``. Its ``MicrophoneStreamer`` starts it when the first
/// listener comes and stops it when the last goes.
protocol MicrophoneBackend: AnyObject, Sendable {
    /// Stable across reboots and re-plugging; never hw:N.
    var uniqueID: String { get }

    /// The sysfs folder of the USB device it hangs from (``USBParent/path``):
    /// a webcam's microphone and camera share it, and are linked. Nil when it is not on USB.
    var usbDevice: String? { get }

    /// The device as clients see it now.
    func describe() -> DeviceDescription

    /// Its own format and what listeners may ask of it.
    var audio: AudioCapabilities { get }

    /// AVAudioSession.inputGain: 0 to 1 over its capture volume, as camerad set
    /// it last (or found it); nil when it has none to set.
    var inputGain: Float? { get }

    /// Sets ``inputGain`` (0 to 1); on its executor.
    ///
    /// - Throws: UNSUPPORTED when it has no capture volume; the device's error.
    func setInputGain(_ gain: Float) throws(CameraError)

    /// Starts capturing: its periods, in ``AudioCapabilities/native``'s layout,
    /// published by the capture's node until it is stopped; a device that fails
    /// ends the node with an interruption and calls `onFailure`.
    ///
    /// - Throws: RESOURCE_EXHAUSTED (no pool or thread), or the device's error.
    func startCapture(budget: ClientBudget, logger: Logger,
                      onFailure: @escaping @Sendable (CameraError) -> Void) throws(CameraError) -> any AudioCapture
}

extension MicrophoneBackend {
    var usbDevice: String? { nil }
    var inputGain: Float? { nil }

    func setInputGain(_ gain: Float) throws(CameraError) {
        throw CameraError(.unsupported, "\(uniqueID) has no capture volume to set (isInputGainSettable is false)")
    }
}

/// A microphone capturing: its periods are ``node``'s buffers.
protocol AudioCapture: AnyObject, Sendable {
    /// The source node of the graph its listeners, variants and meter read.
    var node: MediaNode { get }
    /// Stops capturing, waits for its thread, and ends the node (as asked: no error).
    func stop()
}
