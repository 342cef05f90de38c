import CameraProtocol
import Dispatch
import Foundation
import Synchronization

/// AVCaptureAudioDataOutputSampleBufferDelegate. AVFoundation's has only
/// `didOutput`; `didDrop` (Linux) hears of periods this output did not get:
/// the sample buffer's `droppedFrameCount` periods of ``CaptureAudioDataOutput/framesPerPeriod``
/// frames each, the last of them its `sequenceNumber`.
public protocol CaptureAudioDataOutputSampleBufferDelegate: CaptureDataOutputSampleBufferDelegate {}

/// AVCaptureAudioDataOutput: a microphone's samples in periods, converted by
/// camerad to this output's ``audioSettings`` (once for every process that
/// asks for the same), in shared memory.
///
/// Periods reach a delegate on its serial queue, and iterations of
/// ``CaptureDataOutput/sampleBuffers``; both may be used. While the session runs, its
/// connection's ``CaptureConnection/audioChannels`` follow the microphone's levels
/// (from the first time they are read).
public final class CaptureAudioDataOutput: CaptureDataOutput, @unchecked Sendable {
    /// AVCaptureAudioDataOutput.audioSettings, typed, in AVFoundation's
    /// dictionary form too: `[AVFormatIDKey: kAudioFormatLinearPCM,
    /// AVSampleRateKey: 16_000, AVNumberOfChannelsKey: 1, AVLinearPCMBitDepthKey: 16]`.
    /// A field left nil is the device's own.
    public struct AudioSettings: Equatable, Sendable, ExpressibleByDictionaryLiteral {
        public var sampleRate: Int?
        public var channels: Int?
        public var sampleFormat: AudioCapabilities.SampleFormat?
        /// What the dictionary form asked that CaptureKit does not give: the
        /// session refuses to run, naming it.
        public private(set) var unsupported: [String] = []

        /// The device's own format.
        public init() {}

        public init(sampleRate: Int? = nil, channels: Int? = nil, sampleFormat: AudioCapabilities.SampleFormat? = nil) {
            self.sampleRate = sampleRate
            self.channels = channels
            self.sampleFormat = sampleFormat
        }

        /// AVFoundation's keys: ``AVFormatIDKey`` (only ``kAudioFormatLinearPCM``),
        /// ``AVSampleRateKey``, ``AVNumberOfChannelsKey``, ``AVLinearPCMBitDepthKey``
        /// (16 or 32), ``AVLinearPCMIsFloatKey`` (32-bit), ``AVLinearPCMIsNonInterleaved``
        /// and ``AVLinearPCMIsBigEndianKey`` (false only: periods are interleaved little-endian).
        public init(_ dictionary: [String: Any]) {
            func number(_ key: String) -> Double? {
                guard let value = dictionary[key] else { return nil }
                if let number = value as? NSNumber { return number.doubleValue }
                if let number = value as? any BinaryInteger { return Double(Int(number)) }
                if let number = value as? any BinaryFloatingPoint { return Double(number) }
                unsupported.append("\(key) (a \(type(of: value)), not a number)")
                return nil
            }
            func flag(_ key: String) -> Bool? {
                guard let value = dictionary[key] else { return nil }
                if let flag = value as? Bool { return flag }
                return number(key).map { $0 != 0 }
            }
            if let format = number(AVFormatIDKey), UInt32(exactly: format) != kAudioFormatLinearPCM {
                unsupported.append("AVFormatIDKey \(format) (only kAudioFormatLinearPCM: camerad gives PCM)")
            }
            if let rate = number(AVSampleRateKey) {
                if let whole = Int(exactly: rate) { sampleRate = whole } else { unsupported.append("AVSampleRateKey \(rate) (whole hertz)") }
            }
            if let count = number(AVNumberOfChannelsKey) {
                if let whole = Int(exactly: count) { channels = whole } else { unsupported.append("AVNumberOfChannelsKey \(count)") }
            }
            let isFloat = flag(AVLinearPCMIsFloatKey) ?? false
            let depth = number(AVLinearPCMBitDepthKey).flatMap { Int(exactly: $0) }
            switch (isFloat, depth) {
            case (true, nil), (true, 32?): sampleFormat = .float32
            case (false, 16?): sampleFormat = .int16
            case (false, 32?): sampleFormat = .int32
            case (false, nil): sampleFormat = nil
            case (_, let depth?): unsupported.append("AVLinearPCMBitDepthKey \(depth)\(isFloat ? " as float" : "") (16 or 32; float is 32)")
            }
            if flag(AVLinearPCMIsNonInterleaved) == true { unsupported.append("AVLinearPCMIsNonInterleaved (periods are interleaved)") }
            if flag(AVLinearPCMIsBigEndianKey) == true { unsupported.append("AVLinearPCMIsBigEndianKey (periods are little-endian)") }
            let known = [AVFormatIDKey, AVSampleRateKey, AVNumberOfChannelsKey, AVLinearPCMBitDepthKey, AVLinearPCMIsFloatKey,
                         AVLinearPCMIsNonInterleaved, AVLinearPCMIsBigEndianKey]
            unsupported += dictionary.keys.filter { !known.contains($0) }.sorted()
        }

        public init(dictionaryLiteral elements: (String, Any)...) {
            self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
        }
    }

    private struct Settings {
        var audioSettings = AudioSettings()
        var framesPerPeriod: Int?
        var delivery = CaptureVideoDataOutput.Delivery.sharedMemory
        var maxPeriodsInFlight = 8
        var delegate: SampleBufferDelegateBox?
    }
    private let settings = Mutex(Settings())

    public override init() {
        super.init()
    }

    override var mediaType: MediaType { .audio }

    /// The format of the periods; changing it while running reopens the stream.
    public var audioSettings: AudioSettings {
        get { settings.withLock { $0.audioSettings } }
        set { change { $0.audioSettings = newValue } }
    }

    /// AVCaptureAudioDataOutput.recommendedAudioSettingsForAssetWriter: the
    /// format the device captures in (no conversion), as a dictionary.
    public func recommendedAudioSettingsForAssetWriter(writingTo fileType: String = "") -> [String: Any]? {
        guard let native = connections.first?.input.device.audioCapabilities?.native else { return nil }
        return [AVFormatIDKey: kAudioFormatLinearPCM, AVSampleRateKey: Double(native.sampleRate),
                AVNumberOfChannelsKey: native.channels, AVLinearPCMBitDepthKey: native.sampleFormat.bytes * 8,
                AVLinearPCMIsFloatKey: native.sampleFormat == .float32, AVLinearPCMIsNonInterleaved: false]
    }

    /// Frames in each period (Linux only: the latency of the samples); nil: 10 ms at the rate.
    public var framesPerPeriod: Int? {
        get { settings.withLock { $0.framesPerPeriod } }
        set { change { $0.framesPerPeriod = newValue } }
    }

    /// Shared memory (default) or inline bytes. Linux only.
    public var delivery: CaptureVideoDataOutput.Delivery {
        get { settings.withLock { $0.delivery } }
        set { change { $0.delivery = newValue } }
    }

    /// Periods this output may hold unreleased, 1 to 16 (default 8). Linux only.
    public var maxPeriodsInFlight: Int {
        get { settings.withLock { $0.maxPeriodsInFlight } }
        set { change { $0.maxPeriodsInFlight = min(16, max(1, newValue)) } }
    }

    /// Calls `delegate` on `queue` (a serial queue) with every period, in order. Pass nil to stop.
    public func setSampleBufferDelegate(_ delegate: (any CaptureAudioDataOutputSampleBufferDelegate)?, queue: DispatchQueue?) {
        settings.withLock { settings in
            settings.delegate = delegate.map { SampleBufferDelegateBox(delegate: $0, queue: queue ?? DispatchQueue(label: "CaptureAudioDataOutput")) }
        }
    }

    public var sampleBufferDelegate: (any CaptureAudioDataOutputSampleBufferDelegate)? {
        settings.withLock { $0.delegate?.delegate } as? any CaptureAudioDataOutputSampleBufferDelegate
    }

    public var sampleBufferCallbackQueue: DispatchQueue? {
        settings.withLock { $0.delegate?.queue }
    }

    private func change(_ body: (inout Settings) -> Void) {
        settings.withLock { body(&$0) }
        connections.first?.session?.configurationDidChange()
    }

    // MARK: - Session hooks

    override func streamSettings(for connection: CaptureConnection) throws(CaptureError) -> Camerad_V1_OutputSettings? {
        guard connection.isEnabled else { return nil }
        let current = settings.withLock { $0 }
        return Self.transport(inline: current.delivery == .inline, inFlight: current.maxPeriodsInFlight)
    }

    override func audioFormat() throws(CaptureError) -> Camerad_V1_AudioFormat {
        let current = settings.withLock { $0 }
        guard current.audioSettings.unsupported.isEmpty else {
            throw CaptureError(.unsupportedFormat, "audioSettings has what CaptureKit does not give: "
                + current.audioSettings.unsupported.joined(separator: ", "))
        }
        var format = Camerad_V1_AudioFormat()
        format.sampleRate = UInt32(clamping: current.audioSettings.sampleRate ?? 0)
        format.channels = UInt32(clamping: current.audioSettings.channels ?? 0)
        format.sampleFormat = current.audioSettings.sampleFormat?.proto ?? .unspecified
        format.periodFrames = UInt32(clamping: current.framesPerPeriod ?? 0)
        return format
    }

    /// On the event loop's thread: hands the event to the delegate's queue and
    /// the sequence, and never blocks.
    override func deliver(_ event: FrameStream.Event, from connection: CaptureConnection) {
        let buffer: SampleBuffer
        switch event {
        case .frame(let period):
            buffer = period
        case .dropped(let reason, let count, let lastSequence):
            buffer = SampleBuffer(dropped: reason, count: count, lastSequence: lastSequence)
        case .formatChanged:
            return
        }
        yieldToReaders(buffer)
        guard let delegate = settings.withLock({ $0.delegate }) else { return }
        delegate.queue.async { [self] in
            if buffer.dataBuffer != nil {
                delegate.delegate?.captureOutput(self, didOutput: buffer, from: connection)
            } else {
                delegate.delegate?.captureOutput(self, didDrop: buffer, from: connection)
            }
        }
    }
}

/// AVFoundation's audio settings keys (AVAudioSettings.h).
public let AVFormatIDKey = "AVFormatIDKey"
public let AVSampleRateKey = "AVSampleRateKey"
public let AVNumberOfChannelsKey = "AVNumberOfChannelsKey"
public let AVLinearPCMBitDepthKey = "AVLinearPCMBitDepthKey"
public let AVLinearPCMIsBigEndianKey = "AVLinearPCMIsBigEndianKey"
public let AVLinearPCMIsFloatKey = "AVLinearPCMIsFloatKey"
public let AVLinearPCMIsNonInterleaved = "AVLinearPCMIsNonInterleaved"
