import Synchronization

/// CMBlockBuffer: an audio period's samples, interleaved, in camerad's shared
/// memory (or, for inline delivery, this process's). Valid until released,
/// pinned while read, as a ``PixelBuffer``. Read-only:
/// every listener of the same format reads the same memory.
public final class BlockBuffer: @unchecked Sendable, CustomStringConvertible {
    /// The bytes and their release.
    let memory: SlotBytes
    /// CMBlockBufferGetDataLength: bytes of the period.
    public let dataLength: Int

    init(_ memory: SlotBytes) {
        self.memory = memory
        dataLength = (try? memory.withPinnedBytes("", \.count)) ?? 0
    }

    /// The period's bytes, pinned for as long as `body` runs: a release
    /// meanwhile waits for it.
    ///
    /// - Throws: `invalidState` when the buffer was released.
    public func withUnsafeBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        try memory.withPinnedBytes("the block buffer", body)
    }

    /// The first byte; nil once released. The memory stays for as long as this
    /// object lives, so keep the buffer (or its sample buffer) while you read.
    public var dataPointer: UnsafeRawPointer? { memory.baseAddress() }

    public var description: String { "\(dataLength) bytes" }
}

/// AudioStreamBasicDescription: linear PCM as CoreAudio describes it. camerad's
/// periods are interleaved and packed, little-endian.
public struct AudioStreamBasicDescription: Hashable, Sendable {
    public var mSampleRate: Double
    /// ``kAudioFormatLinearPCM``.
    public var mFormatID: UInt32
    /// ``kAudioFormatFlagIsFloat`` or ``kAudioFormatFlagIsSignedInteger``, with ``kAudioFormatFlagIsPacked``.
    public var mFormatFlags: UInt32
    public var mBytesPerPacket: UInt32
    public var mFramesPerPacket: UInt32
    public var mBytesPerFrame: UInt32
    public var mChannelsPerFrame: UInt32
    public var mBitsPerChannel: UInt32
    public var mReserved: UInt32 = 0

    init(_ format: AudioCapabilities.Format) {
        mSampleRate = Double(format.sampleRate)
        mFormatID = kAudioFormatLinearPCM
        mFormatFlags = (format.sampleFormat == .float32 ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger)
            | kAudioFormatFlagIsPacked
        mBytesPerFrame = UInt32(format.bytesPerFrame)
        mBytesPerPacket = mBytesPerFrame
        mFramesPerPacket = 1
        mChannelsPerFrame = UInt32(format.channels)
        mBitsPerChannel = UInt32(format.sampleFormat.bytes * 8)
    }
}

/// 'lpcm'.
public let kAudioFormatLinearPCM: UInt32 = 0x6C70_636D
public let kAudioFormatFlagIsFloat: UInt32 = 1 << 0
public let kAudioFormatFlagIsBigEndian: UInt32 = 1 << 1
public let kAudioFormatFlagIsSignedInteger: UInt32 = 1 << 2
public let kAudioFormatFlagIsPacked: UInt32 = 1 << 3
public let kAudioFormatFlagIsNonInterleaved: UInt32 = 1 << 5

/// Stable addresses for ``CMAudioFormatDescriptionGetStreamBasicDescription(_:)``,
/// which returns a pointer as CoreMedia's does: one per distinct description,
/// kept for the process's life (a handful at most).
enum StreamDescriptions {
    private static let stored = Mutex<[AudioStreamBasicDescription: UnsafeMutablePointer<AudioStreamBasicDescription>]>([:])

    static func pointer(to description: AudioStreamBasicDescription) -> UnsafePointer<AudioStreamBasicDescription> {
        stored.withLock { stored in
            if let pointer = stored[description] { return UnsafePointer(pointer) }
            let pointer = UnsafeMutablePointer<AudioStreamBasicDescription>.allocate(capacity: 1)
            pointer.initialize(to: description)
            stored[description] = pointer
            return UnsafePointer(pointer)
        }
    }
}
