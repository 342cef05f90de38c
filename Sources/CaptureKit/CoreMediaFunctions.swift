// CoreMedia's and CoreVideo's C-style vocabulary over CaptureKit's types, so
// that code written for AVFoundation ports with few changes:
// `CMSampleBufferGetImageBuffer`, `CVPixelBufferLockBaseAddress`,
// `CVPixelBufferGetBaseAddressOfPlane`, `CMTimeCompare`, and the rest a
// capture delegate uses. Each is the method or property it names; the
// differences Linux forces are said where they are.

// MARK: - Types

/// CMSampleBuffer: a ``SampleBuffer``.
public typealias CMSampleBuffer = SampleBuffer
/// CVPixelBuffer: a ``PixelBuffer``.
public typealias CVPixelBuffer = PixelBuffer
/// CVImageBuffer: on Linux every image buffer is a ``PixelBuffer``.
public typealias CVImageBuffer = PixelBuffer
/// CMFormatDescription (of video): a ``FormatDescription``.
public typealias CMFormatDescription = FormatDescription
/// CMVideoFormatDescription: a ``FormatDescription``.
public typealias CMVideoFormatDescription = FormatDescription
/// CMAudioFormatDescription: a ``FormatDescription``.
public typealias CMAudioFormatDescription = FormatDescription
/// CMBlockBuffer: a ``BlockBuffer``.
public typealias CMBlockBuffer = BlockBuffer
/// CoreMedia's and CoreAudio's result codes.
public typealias OSStatus = Int32

/// MacTypes' noErr, an `Int` in Swift as on Apple's platforms: what seed code
/// compares an `NSError`'s code with (`(error as NSError).code != noErr`).
public let noErr = 0
public let kCMBlockBufferNoErr: OSStatus = 0
public let kCMBlockBufferBadOffsetParameterErr: OSStatus = -12703
public let kCMBlockBufferBadLengthParameterErr: OSStatus = -12704
/// Here also: the buffer was released.
public let kCMBlockBufferBadPointerParameterErr: OSStatus = -12705
/// CoreVideo's result codes.
public typealias CVReturn = Int32

public let kCVReturnSuccess: CVReturn = 0
/// CoreVideo's kCVReturnInvalidArgument: here, a buffer already released.
public let kCVReturnInvalidArgument: CVReturn = -6661

/// CVPixelBufferLockFlags. Frames are camerad's shared memory, mapped read-only
/// in every client: locking is for reading whatever the flags say.
public struct CVPixelBufferLockFlags: OptionSet, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static let readOnly = CVPixelBufferLockFlags(rawValue: 1)
}

/// The keys of ``CaptureVideoDataOutput/VideoSettings`` in its dictionary form
/// (`[kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]`).
public let kCVPixelBufferPixelFormatTypeKey = "PixelFormatType"
public let kCVPixelBufferWidthKey = "Width"
public let kCVPixelBufferHeightKey = "Height"

// MARK: - CMSampleBuffer

public func CMSampleBufferGetImageBuffer(_ sampleBuffer: CMSampleBuffer) -> CVImageBuffer? { sampleBuffer.imageBuffer }
public func CMSampleBufferGetPresentationTimeStamp(_ sampleBuffer: CMSampleBuffer) -> CMTime { sampleBuffer.presentationTimeStamp }
public func CMSampleBufferGetDuration(_ sampleBuffer: CMSampleBuffer) -> CMTime { sampleBuffer.duration }
public func CMSampleBufferGetFormatDescription(_ sampleBuffer: CMSampleBuffer) -> CMFormatDescription? { sampleBuffer.formatDescription }
/// 1 for a frame, an audio period's frames (a sample per channel each), 0 for a drop report.
public func CMSampleBufferGetNumSamples(_ sampleBuffer: CMSampleBuffer) -> Int { sampleBuffer.numSamples }
/// An audio period's samples; nil for video and drop reports.
public func CMSampleBufferGetDataBuffer(_ sampleBuffer: CMSampleBuffer) -> CMBlockBuffer? { sampleBuffer.dataBuffer }
public func CMSampleBufferIsValid(_ sampleBuffer: CMSampleBuffer) -> Bool { sampleBuffer.isValid }
/// Gives the frame back to camerad now rather than when the last reference goes.
public func CMSampleBufferInvalidate(_ sampleBuffer: CMSampleBuffer) -> Int32 {
    sampleBuffer.invalidate()
    return 0
}

// MARK: - CMFormatDescription

public func CMFormatDescriptionGetMediaSubType(_ description: CMFormatDescription) -> OSType { description.mediaSubType }
/// A stable pointer, as CoreMedia's; nil for video.
public func CMAudioFormatDescriptionGetStreamBasicDescription(
    _ description: CMAudioFormatDescription
) -> UnsafePointer<AudioStreamBasicDescription>? {
    description.audioStreamBasicDescription.map(StreamDescriptions.pointer(to:))
}

public func CMFormatDescriptionGetMediaType(_ description: CMFormatDescription) -> MediaType { description.mediaType }

// MARK: - CMBlockBuffer

public func CMBlockBufferGetDataLength(_ buffer: CMBlockBuffer) -> Int { buffer.dataLength }

/// The bytes from `offset` on. The memory is camerad's, mapped read-only: the
/// pointer is mutable only to match CoreMedia's signature — never write through it.
public func CMBlockBufferGetDataPointer(
    _ buffer: CMBlockBuffer, atOffset offset: Int, lengthAtOffsetOut: UnsafeMutablePointer<Int>?,
    totalLengthOut: UnsafeMutablePointer<Int>?, dataPointerOut: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> OSStatus {
    guard (0..<max(1, buffer.dataLength)).contains(offset) else { return kCMBlockBufferBadOffsetParameterErr }
    guard let start = buffer.dataPointer else { return kCMBlockBufferBadPointerParameterErr }
    lengthAtOffsetOut?.pointee = buffer.dataLength - offset
    totalLengthOut?.pointee = buffer.dataLength
    dataPointerOut?.pointee = UnsafeMutablePointer(mutating: (start + offset).assumingMemoryBound(to: CChar.self))
    return kCMBlockBufferNoErr
}

/// Copies `dataLength` bytes from `offset` into `destination`.
public func CMBlockBufferCopyDataBytes(
    _ buffer: CMBlockBuffer, atOffset offset: Int, dataLength: Int, destination: UnsafeMutableRawPointer
) -> OSStatus {
    guard offset >= 0, offset <= buffer.dataLength else { return kCMBlockBufferBadOffsetParameterErr }
    guard dataLength >= 0, dataLength <= buffer.dataLength - offset else { return kCMBlockBufferBadLengthParameterErr }
    guard dataLength > 0 else { return kCMBlockBufferNoErr }
    do {
        try buffer.withUnsafeBytes { bytes in
            destination.copyMemory(from: bytes.baseAddress! + offset, byteCount: dataLength)
        }
        return kCMBlockBufferNoErr
    } catch {
        return kCMBlockBufferBadPointerParameterErr
    }
}

public func CMVideoFormatDescriptionGetDimensions(_ description: CMVideoFormatDescription) -> CMVideoDimensions { description.dimensions }

// MARK: - CVPixelBuffer

/// Keeps the frame's memory readable until the matching unlock, even if the
/// sample buffer is released meanwhile; locks nest. kCVReturnInvalidArgument
/// for a buffer already released.
@discardableResult
public func CVPixelBufferLockBaseAddress(_ pixelBuffer: CVPixelBuffer, _ lockFlags: CVPixelBufferLockFlags) -> CVReturn {
    pixelBuffer.lockBaseAddress()
    return pixelBuffer.baseAddress == nil ? kCVReturnInvalidArgument : kCVReturnSuccess
}

@discardableResult
public func CVPixelBufferUnlockBaseAddress(_ pixelBuffer: CVPixelBuffer, _ unlockFlags: CVPixelBufferLockFlags) -> CVReturn {
    pixelBuffer.unlockBaseAddress()
    return kCVReturnSuccess
}

/// Read-only, unlike CoreVideo's mutable pointer: the memory is camerad's,
/// shared with every client of the stream, and mapped read-only (a write faults).
public func CVPixelBufferGetBaseAddress(_ pixelBuffer: CVPixelBuffer) -> UnsafeRawPointer? { pixelBuffer.baseAddress }
public func CVPixelBufferGetBaseAddressOfPlane(_ pixelBuffer: CVPixelBuffer, _ planeIndex: Int) -> UnsafeRawPointer? {
    pixelBuffer.baseAddress(ofPlane: planeIndex)
}
public func CVPixelBufferGetBytesPerRow(_ pixelBuffer: CVPixelBuffer) -> Int { pixelBuffer.bytesPerRow }
public func CVPixelBufferGetBytesPerRowOfPlane(_ pixelBuffer: CVPixelBuffer, _ planeIndex: Int) -> Int {
    pixelBuffer.bytesPerRow(ofPlane: planeIndex)
}
public func CVPixelBufferGetWidth(_ pixelBuffer: CVPixelBuffer) -> Int { pixelBuffer.width }
public func CVPixelBufferGetHeight(_ pixelBuffer: CVPixelBuffer) -> Int { pixelBuffer.height }
public func CVPixelBufferGetWidthOfPlane(_ pixelBuffer: CVPixelBuffer, _ planeIndex: Int) -> Int { pixelBuffer.width(ofPlane: planeIndex) }
public func CVPixelBufferGetHeightOfPlane(_ pixelBuffer: CVPixelBuffer, _ planeIndex: Int) -> Int { pixelBuffer.height(ofPlane: planeIndex) }
public func CVPixelBufferGetPlaneCount(_ pixelBuffer: CVPixelBuffer) -> Int { pixelBuffer.planeCount }
public func CVPixelBufferIsPlanar(_ pixelBuffer: CVPixelBuffer) -> Bool { pixelBuffer.isPlanar }
public func CVPixelBufferGetPixelFormatType(_ pixelBuffer: CVPixelBuffer) -> OSType { pixelBuffer.pixelFormatType }
public func CVPixelBufferGetDataSize(_ pixelBuffer: CVPixelBuffer) -> Int { pixelBuffer.dataSize }

// MARK: - CMTime

public let kCMTimeZero = CMTime.zero
public let kCMTimeInvalid = CMTime.invalid

/// -1, 0 or 1, as CoreMedia's.
public func CMTimeCompare(_ time1: CMTime, _ time2: CMTime) -> Int32 { time1 < time2 ? -1 : time1 == time2 ? 0 : 1 }
public func CMTimeGetSeconds(_ time: CMTime) -> Double { time.seconds }
public func CMTimeMakeWithSeconds(_ seconds: Double, preferredTimescale: Int32) -> CMTime {
    CMTime(seconds: seconds, preferredTimescale: preferredTimescale)
}
public func CMTimeAdd(_ lhs: CMTime, _ rhs: CMTime) -> CMTime { lhs + rhs }
public func CMTimeSubtract(_ lhs: CMTime, _ rhs: CMTime) -> CMTime { lhs - rhs }

extension CMTime {
    /// CMTime(seconds:preferredTimescale:): the nearest value in that timescale.
    public init(seconds: Double, preferredTimescale: Int32) {
        self.init(value: Int64((seconds * Double(preferredTimescale)).rounded()), timescale: preferredTimescale)
    }

    /// The sum, in the finer of the two timescales (exact for the timescales
    /// camerad uses); invalid if either is.
    public static func + (lhs: CMTime, rhs: CMTime) -> CMTime {
        guard lhs.isValid, rhs.isValid else { return .invalid }
        let timescale = max(lhs.timescale, rhs.timescale)
        return CMTime(value: lhs.value(in: timescale) + rhs.value(in: timescale), timescale: timescale)
    }

    public static func - (lhs: CMTime, rhs: CMTime) -> CMTime {
        guard rhs.isValid else { return .invalid }
        return lhs + CMTime(value: -rhs.value, timescale: rhs.timescale)
    }

    private func value(in timescale: Int32) -> Int64 {
        timescale == self.timescale ? value : Int64((Double(value) * Double(timescale) / Double(self.timescale)).rounded())
    }
}
