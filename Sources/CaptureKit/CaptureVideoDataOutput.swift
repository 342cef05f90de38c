import Foundation
import CameraProtocol
import Dispatch
import Synchronization

/// AVCaptureVideoDataOutputSampleBufferDelegate. Both methods are optional.
public protocol CaptureVideoDataOutputSampleBufferDelegate: CaptureDataOutputSampleBufferDelegate {}

/// What the video and the audio data outputs' delegates share, as in
/// AVFoundation, where one class often adopts both: one `didOutput` for
/// frames and periods alike (tell them apart by `output`), and `didDrop`;
/// each optional (empty by default, once, so adopting both compiles).
public protocol CaptureDataOutputSampleBufferDelegate: AnyObject {
    /// A frame or a period, on the delegate's queue, in order.
    func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection)
    /// Frames or periods that did not arrive: `sampleBuffer.attachments.droppedFrameReason` says why.
    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection)
}

extension CaptureDataOutputSampleBufferDelegate {
    public func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {}
    public func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection) {}
}

/// AVCaptureVideoDataOutput: every frame, converted by camerad to this output's
/// pixel format and size, in shared memory.
///
/// Frames reach a delegate on its serial queue, and iterations of the
/// ``CaptureDataOutput/sampleBuffers`` sequence; both may be used.
public final class CaptureVideoDataOutput: CaptureDataOutput, @unchecked Sendable {
    /// AVCaptureVideoDataOutput.videoSettings, typed: the pixel format (nil: the
    /// device's own) and an output size (nil: the session preset's, else the
    /// device's). The size is before the connection's rotation: a portrait
    /// connection swaps it, as in AVFoundation.
    ///
    /// AVFoundation's dictionary form works too: `output.videoSettings =
    /// [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]`.
    public struct VideoSettings: Equatable, Sendable, ExpressibleByDictionaryLiteral {
        public var pixelFormatType: OSType?
        public var width: Int?
        public var height: Int?
        /// Keys of the dictionary form CaptureKit does not take (or values of
        /// the wrong type): the session refuses to run, naming them.
        public private(set) var unsupportedKeys: [String] = []

        /// The device's own format and size.
        public init() {}

        public init(pixelFormatType: OSType? = nil, width: Int? = nil, height: Int? = nil) {
            self.pixelFormatType = pixelFormatType
            self.width = width
            self.height = height
        }

        /// The dictionary form: ``kCVPixelBufferPixelFormatTypeKey`` (an OSType,
        /// any integer, or an `NSNumber` holding one), ``kCVPixelBufferWidthKey``
        /// and ``kCVPixelBufferHeightKey``.
        public init(_ dictionary: [String: Any]) {
            func integer(_ key: String) -> Int? {
                guard let value = dictionary[key] else { return nil }
                // AVFoundation's code often wraps the value: NSNumber(value: kCVPixelFormatType_32BGRA).
                if let number = value as? NSNumber, Double(number.int64Value) == number.doubleValue {
                    return Int(exactly: number.int64Value)
                }
                guard let number = value as? any BinaryInteger, let integer = Int(exactly: number) else {
                    unsupportedKeys.append("\(key) (a \(type(of: value)), not an integer)")
                    return nil
                }
                return integer
            }
            pixelFormatType = integer(kCVPixelBufferPixelFormatTypeKey).map { OSType(truncatingIfNeeded: $0) }
            width = integer(kCVPixelBufferWidthKey)
            height = integer(kCVPixelBufferHeightKey)
            let known = [kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey, kCVPixelBufferHeightKey]
            unsupportedKeys += dictionary.keys.filter { !known.contains($0) }.sorted()
        }

        public init(dictionaryLiteral elements: (String, Any)...) {
            let dictionary: [String: Any] = Dictionary(elements, uniquingKeysWith: { _, last in last })
            self.init(dictionary)
        }

        /// The dictionary form of these settings.
        public var dictionary: [String: Any] {
            var dictionary: [String: Any] = [:]
            if let pixelFormatType { dictionary[kCVPixelBufferPixelFormatTypeKey] = pixelFormatType }
            if let width { dictionary[kCVPixelBufferWidthKey] = width }
            if let height { dictionary[kCVPixelBufferHeightKey] = height }
            return dictionary
        }
    }

    /// How frames travel (Linux only).
    public enum Delivery: Sendable {
        /// Shared memory, zero-copy: the default.
        case sharedMemory
        /// Frame bytes copied into each message, for clients that cannot map memory.
        case inline
    }

    private struct Settings {
        var videoSettings = VideoSettings()
        var alwaysDiscardsLateVideoFrames = true
        var minFrameDuration = CMTime.invalid
        var delivery = Delivery.sharedMemory
        var maxFramesInFlight = 3
        var delegate: SampleBufferDelegateBox?
        var delegateBusy = 0
    }
    private let settings = Mutex(Settings())

    public override init() {
        super.init()
    }

    /// The pixel format and size; changing it while running reopens the stream.
    public var videoSettings: VideoSettings {
        get { settings.withLock { $0.videoSettings } }
        set { change { $0.videoSettings = newValue } }
    }

    /// The formats ``videoSettings`` may ask for (the device's own is also
    /// available, as a nil pixel format).
    public var availableVideoPixelFormatTypes: [OSType] { PixelFormats.convertible }

    /// True (the default): frames arriving while the delegate is still busy with
    /// one, or while this process holds as many frames as it may, are dropped
    /// (`frameWasLate`). False: they wait, up to a bound, then `outOfBuffers`.
    public var alwaysDiscardsLateVideoFrames: Bool {
        get { settings.withLock { $0.alwaysDiscardsLateVideoFrames } }
        set { change { $0.alwaysDiscardsLateVideoFrames = newValue } }
    }

    /// At most one frame per this long (invalid: every frame). The daemon skips the others.
    public var minFrameDuration: CMTime {
        get { settings.withLock { $0.minFrameDuration } }
        set { change { $0.minFrameDuration = newValue } }
    }

    /// Shared memory (default) or inline bytes. Linux only.
    public var delivery: Delivery {
        get { settings.withLock { $0.delivery } }
        set { change { $0.delivery = newValue } }
    }

    /// Frames this output may hold unreleased, 1 to 8 (default 3). Linux only.
    public var maxFramesInFlight: Int {
        get { settings.withLock { $0.maxFramesInFlight } }
        set { change { $0.maxFramesInFlight = min(8, max(1, newValue)) } }
    }

    /// Calls `delegate` on `queue` (a serial queue) with every frame, in order.
    /// Pass nil to stop.
    public func setSampleBufferDelegate(_ delegate: (any CaptureVideoDataOutputSampleBufferDelegate)?, queue: DispatchQueue?) {
        settings.withLock { settings in
            settings.delegate = delegate.map { SampleBufferDelegateBox(delegate: $0, queue: queue ?? DispatchQueue(label: "CaptureVideoDataOutput")) }
        }
    }

    public var sampleBufferDelegate: (any CaptureVideoDataOutputSampleBufferDelegate)? {
        settings.withLock { $0.delegate?.delegate } as? any CaptureVideoDataOutputSampleBufferDelegate
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
        guard current.videoSettings.unsupportedKeys.isEmpty else {
            throw CaptureError(.unsupportedFormat, "videoSettings has what CaptureKit does not take: "
                + current.videoSettings.unsupportedKeys.joined(separator: ", ")
                + "; use kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey and kCVPixelBufferHeightKey")
        }
        guard let pixelFormat = PixelFormats.output(current.videoSettings.pixelFormatType) else {
            // AVFoundation raises at the setter; a Swift setter cannot throw, so the run refuses.
            let asked = current.videoSettings.pixelFormatType.map(PixelFormats.name) ?? "?"
            throw CaptureError(.unsupportedFormat, "videoSettings asks for pixel format '\(asked)', which CaptureKit cannot deliver; "
                + "use one of availableVideoPixelFormatTypes (" + availableVideoPixelFormatTypes.map { "'\(PixelFormats.name($0))'" }
                    .joined(separator: ", ") + ") or nil for the device's own")
        }
        var request = Self.transport(inline: current.delivery == .inline, inFlight: current.maxFramesInFlight)
        request.pixelFormat = pixelFormat
        request.width = UInt32(max(0, current.videoSettings.width ?? 0))
        request.height = UInt32(max(0, current.videoSettings.height ?? 0))
        if current.minFrameDuration.isValid && current.minFrameDuration.value > 0 {
            request.minFrameDuration.numerator = UInt32(clamping: current.minFrameDuration.value)
            request.minFrameDuration.denominator = UInt32(current.minFrameDuration.timescale)
        }
        request.orientation = connection.videoOrientation.proto
        request.mirrored = connection.isVideoMirrored
        request.alwaysDiscardsLateVideoFrames = current.alwaysDiscardsLateVideoFrames
        return request
    }

    /// On the event loop's thread: hands the event to the delegate's queue and
    /// the sequence, and never blocks.
    override func deliver(_ event: FrameStream.Event, from connection: CaptureConnection) {
        let buffer: SampleBuffer
        let isFrame: Bool
        switch event {
        case .frame(let frame):
            buffer = frame
            isFrame = true
        case .dropped(let reason, let count, let lastSequence):
            buffer = SampleBuffer(dropped: reason, count: count, lastSequence: lastSequence)
            isFrame = false
        case .formatChanged(let note):
            guard let note else { return }
            connection.setModeNote(note)
            // Not on the event loop's thread, where this runs: observers run inside post.
            let input = connection.input
            DispatchQueue.global().async {
                NotificationCenter.default.post(name: CaptureInput.Port.formatDescriptionDidChangeNotification, object: input)
            }
            return
        }
        yieldToReaders(buffer)
        let (delegate, late) = settings.withLock { settings in
            let late = isFrame && settings.delegate != nil && settings.alwaysDiscardsLateVideoFrames && settings.delegateBusy > 0
            if isFrame && settings.delegate != nil && !late { settings.delegateBusy += 1 }
            return (settings.delegate, late)
        }
        guard let delegate else { return }
        if late {
            // AVFoundation's rule: a frame that comes while the delegate is busy is dropped.
            delegate.queue.async {
                let late = SampleBuffer(dropped: .frameWasLate, count: 1, lastSequence: buffer.sequenceNumber)
                delegate.delegate?.captureOutput(self, didDrop: late, from: connection)
            }
            return
        }
        delegate.queue.async { [self] in
            if isFrame {
                delegate.delegate?.captureOutput(self, didOutput: buffer, from: connection)
                settings.withLock { $0.delegateBusy -= 1 }
            } else {
                delegate.delegate?.captureOutput(self, didDrop: buffer, from: connection)
            }
        }
    }
}
