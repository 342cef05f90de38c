internal import CSwresample

/// PCM from one ``AudioLayout`` to another — rate, channel count, sample
/// format — through FFmpeg's libswresample, interleaved in and out: what a
/// microphone's variant node makes once per period for all its listeners
/// (issue 34).
///
/// A channel count change mixes so that nothing clips: stereo to mono is
/// the average of the two, mono to stereo the one channel in both.
///
/// It keeps state between calls: its filter's delay, and whatever did not fit
/// the output, come out with the next calls, so periods converted one after
/// the other are one continuous signal. One thread at a time.
public final class AudioResampler {
    public let source: AudioLayout
    public let target: AudioLayout
    private var context: OpaquePointer?

    /// - Throws: ``ConversionError`` when libswresample refuses the pair.
    public init(from source: AudioLayout, to target: AudioLayout) throws(ConversionError) {
        self.source = source
        self.target = target
        var input = AVChannelLayout()
        var output = AVChannelLayout()
        av_channel_layout_default(&input, Int32(source.channels))
        av_channel_layout_default(&output, Int32(target.channels))
        defer {
            av_channel_layout_uninit(&input)
            av_channel_layout_uninit(&output)
        }
        var context: OpaquePointer?
        var result = swr_alloc_set_opts2(&context, &output, Self.format(target.sampleFormat), Int32(target.sampleRate),
                                         &input, Self.format(source.sampleFormat), Int32(source.sampleRate), 0, nil)
        // Channels mixed so that no output can clip: stereo to mono is the two
        // channels' average (FFmpeg's default, each at −3 dB, can exceed full scale).
        if result >= 0 { result = av_opt_set_double(UnsafeMutableRawPointer(context), "rematrix_maxval", 1, 0) }
        if result >= 0 { result = swr_init(context) }
        guard result >= 0, context != nil else {
            swr_free(&context)
            throw ConversionError(message: "libswresample cannot convert \(source) to \(target) (\(result))")
        }
        self.context = context
    }

    deinit { swr_free(&context) }

    /// The most frames converting `frames` more may give: size the output with it.
    public func maximumOutputFrames(forInput frames: Int) -> Int {
        Int(swr_get_out_samples(context, Int32(frames)))
    }

    /// Converts `input` (whole frames of ``source``) and writes the frames
    /// ready into `output` (up to as many as fit); the rest wait for the next call.
    ///
    /// - Returns: the frames written.
    /// - Throws: ``ConversionError`` when libswresample fails.
    public func convert(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(ConversionError) -> Int {
        var from: UnsafePointer<UInt8>? = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var to: UnsafeMutablePointer<UInt8>? = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let inputFrames = Int32(input.count / source.bytesPerFrame)
        let room = Int32(output.count / target.bytesPerFrame)
        let written = swr_convert(context, &to, room, &from, inputFrames)
        guard written >= 0 else { throw ConversionError(message: "libswresample failed converting \(source) to \(target) (\(written))") }
        return Int(written)
    }

    /// Frames of ``target`` it holds: given, not yet written (its filter's
    /// delay and what did not fit), as libswresample counts them.
    public var delayedFrames: Int { Int(swr_get_delay(context, Int64(target.sampleRate))) }

    /// Stretches (or shrinks) the next `distance` output frames by `delta`
    /// frames — libswresample's soft compensation, a ratio changed by
    /// `delta ÷ distance`, inaudible at the ppm a sound card's clock is off —
    /// then converts at the nominal ratio again. A new call replaces the last.
    /// The first call changes a conversion at one rate into a resampling one
    /// (a few frames of filter delay, counted in ``delayedFrames``).
    ///
    /// - Throws: ``ConversionError`` when libswresample refuses.
    public func compensate(by delta: Int, over distance: Int) throws(ConversionError) {
        precondition(distance > 0 && abs(delta) < distance, "\(delta) frames over \(distance)")
        let result = swr_set_compensation(context, Int32(delta), Int32(distance))
        guard result >= 0 else { throw ConversionError(message: "libswresample cannot compensate \(delta) frames over \(distance) (\(result))") }
    }

    private static func format(_ format: AudioLayout.SampleFormat) -> AVSampleFormat {
        switch format {
        case .s16: AV_SAMPLE_FMT_S16
        case .s32: AV_SAMPLE_FMT_S32
        case .f32: AV_SAMPLE_FMT_FLT
        }
    }
}
