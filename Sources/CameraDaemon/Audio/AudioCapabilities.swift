import CameraMedia

/// What a microphone captures, and what a listener may ask of it
/// (device.proto's `AudioCapabilities`): its own format, and the rates,
/// channel counts, sample formats and period durations its variants can be
/// made in (``AudioVariant``: libswresample converts, once per distinct format).
struct AudioCapabilities: Sendable, Hashable {
    /// The rates a listener may ask for: the usual ones, 8 to 96 kHz.
    static let sampleRates = [8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000]
    static let sampleFormats: [AudioLayout.SampleFormat] = [.s16, .s32, .f32]
    /// A period's shortest and longest duration, in microseconds: shorter costs
    /// a wake-up per listener a millisecond, longer holds half a second of memory a slot.
    static let periodMicroseconds = 1_000...500_000
    /// The period a listener gets when it does not say, in microseconds (10 ms).
    static let defaultPeriodMicroseconds = 10_000

    /// The device's own format: its periods, as it captures them.
    let native: AudioLayout

    /// Channels a listener may ask for: the device's, or stereo from a mono device.
    var maxChannels: Int { max(2, native.channels) }

    /// The layout a listener's request asks for, a field 0 (or nil) being the
    /// device's own and the period 10 ms of the rate.
    ///
    /// - Throws: INVALID_ARGUMENT for what the device does not offer, listing what it does.
    func layout(sampleRate: Int, channels: Int, sampleFormat: AudioLayout.SampleFormat?, framesPerPeriod: Int) throws(CameraError) -> AudioLayout {
        let rate = sampleRate == 0 ? native.sampleRate : sampleRate
        guard Self.sampleRates.contains(rate) else {
            throw CameraError(.invalidArgument, "\(rate) Hz is not offered; ask for one of \(Self.sampleRates.map(String.init).joined(separator: ", ")) Hz")
        }
        let channels = channels == 0 ? native.channels : channels
        guard (1...maxChannels).contains(channels) else {
            throw CameraError(.invalidArgument, "\(channels) channels are not offered; ask for 1 to \(maxChannels)")
        }
        let frames = framesPerPeriod == 0 ? rate * Self.defaultPeriodMicroseconds / 1_000_000 : framesPerPeriod
        let shortest = (rate * Self.periodMicroseconds.lowerBound + 999_999) / 1_000_000
        let longest = rate * Self.periodMicroseconds.upperBound / 1_000_000
        guard (shortest...longest).contains(frames) else {
            throw CameraError(.invalidArgument,
                              "a period of \(frames) frames at \(rate) Hz is outside 1 ms to 500 ms; ask for \(shortest) to \(longest) frames")
        }
        return AudioLayout(sampleRate: rate, channels: channels, sampleFormat: sampleFormat ?? native.sampleFormat,
                           framesPerPeriod: frames)
    }
}

extension AudioLayout {
    /// Slots an audio node's pool starts with: a few listeners' worth (each
    /// holds up to 16 periods), within about 1 MiB — 64 periods of 10 ms at
    /// 48 kHz stereo, fewer long ones (at least 16). It grows as listeners come
    /// (``MediaNode/subscribe(_:policy:for:)``).
    var poolSlots: Int { max(16, min(64, (1 << 20) / max(1, capacity))) }
}
