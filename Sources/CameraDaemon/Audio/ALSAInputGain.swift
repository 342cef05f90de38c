import CALSA
import Glibc

/// A card's capture volume, as `amixer` sees it: the simple mixer element
/// that has one ("Capture" first, then "Mic", then any other), read and set
/// as AVAudioSession's input gain — 0 to 1, linear over the element's raw
/// range, every channel alike. The mixer is opened for each use and closed
/// again: nothing held between a client's changes, and another program's
/// mixer stays its own.
struct ALSAInputGain: Sendable {
    /// "hw:CARD=<id>": the card's control device.
    let card: String
    /// The simple element's name and index ("Capture", 0).
    let element: String
    let index: UInt32
    /// Its raw range.
    let minimum: Int
    let maximum: Int

    /// The card's capture volume; nil when it has none (snd-aloop, most cameras' microphones have one).
    static func find(card: String) -> ALSAInputGain? {
        withMixer(card) { mixer in
            var candidates: [(name: String, index: UInt32, minimum: Int, maximum: Int)] = []
            var element = snd_mixer_first_elem(mixer)
            while let current = element {
                defer { element = snd_mixer_elem_next(current) }
                guard snd_mixer_selem_is_active(current) != 0, snd_mixer_selem_has_capture_volume(current) != 0 else { continue }
                var low = 0, high = 0
                guard snd_mixer_selem_get_capture_volume_range(current, &low, &high) == 0, high > low else { continue }
                candidates.append((String(cString: snd_mixer_selem_get_name(current)), snd_mixer_selem_get_index(current), low, high))
            }
            let rank = { (name: String) in ["Capture", "Mic"].firstIndex(of: name) ?? 2 }
            return candidates.min { rank($0.name) < rank($1.name) }.map {
                ALSAInputGain(card: card, element: $0.name, index: $0.index, minimum: $0.minimum, maximum: $0.maximum)
            }
        } ?? nil
    }

    /// The gain now (the first channel's), 0 to 1; nil when the mixer cannot be read.
    func read() -> Float? {
        withElement { element in
            var value = 0
            guard snd_mixer_selem_get_capture_volume(element, SND_MIXER_SCHN_FRONT_LEFT, &value) == 0 else { return nil }
            return Float(value - minimum) / Float(maximum - minimum)
        } ?? nil
    }

    /// Sets every channel to `gain` (0 to 1) of the range.
    ///
    /// - Throws: DEVICE_DISCONNECTED when the card went, INTERNAL_ERROR when ALSA refuses.
    func set(_ gain: Float) throws(CameraError) {
        let raw = minimum + Int((Float(maximum - minimum) * gain).rounded())
        let result = withElement { snd_mixer_selem_set_capture_volume_all($0, raw) }
        guard let result else {
            throw CameraError(.deviceDisconnected, "\(card)'s mixer has no '\(element)' capture volume now; the card went")
        }
        guard result == 0 else { throw ALSAPCM.error(result, "setting \(card)'s '\(element)' capture volume to \(raw)") }
    }

    /// Runs `body` with the element, the mixer open; nil when the card or the element is not there.
    private func withElement<T>(_ body: (OpaquePointer) -> T) -> T? {
        Self.withMixer(card) { mixer -> T? in
            var id: OpaquePointer?
            guard snd_mixer_selem_id_malloc(&id) == 0, let id else { return nil }
            defer { snd_mixer_selem_id_free(id) }
            snd_mixer_selem_id_set_name(id, element)
            snd_mixer_selem_id_set_index(id, index)
            guard let element = snd_mixer_find_selem(mixer, id) else { return nil }
            return body(element)
        } ?? nil
    }

    /// Runs `body` with `card`'s simple mixer, loaded; nil when it cannot be opened.
    private static func withMixer<T>(_ card: String, _ body: (OpaquePointer) -> T) -> T? {
        calsa_silence_errors()
        var mixer: OpaquePointer?
        guard snd_mixer_open(&mixer, 0) == 0, let mixer else { return nil }
        defer { snd_mixer_close(mixer) }
        guard snd_mixer_attach(mixer, card) == 0, snd_mixer_selem_register(mixer, nil, nil) == 0, snd_mixer_load(mixer) == 0 else {
            return nil
        }
        return body(mixer)
    }
}
