import CaptureKit
import Foundation

/// A RIFF WAVE file being written: the header with the format, then the
/// samples as they come; the sizes are filled in when it is closed (a file cut
/// short says 0, which players read as "to the end").
final class WAVFile {
    private let handle: FileHandle
    private var dataBytes = 0

    /// Starts a WAV file on `handle` for samples of `description`: the header, sizes 0 until ``finish()``.
    init(handle: FileHandle, description: AudioStreamBasicDescription) {
        self.handle = handle
        let isFloat = description.mFormatFlags & kAudioFormatFlagIsFloat != 0
        var header = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { header.append(contentsOf: $0) } }
        header.append(contentsOf: Array("RIFF".utf8))
        append(UInt32(0))
        header.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16))
        // WAVE_FORMAT_PCM, or WAVE_FORMAT_IEEE_FLOAT for float samples.
        append(UInt16(isFloat ? 3 : 1))
        append(UInt16(description.mChannelsPerFrame))
        append(UInt32(description.mSampleRate))
        append(UInt32(description.mSampleRate) * description.mBytesPerFrame)
        append(UInt16(description.mBytesPerFrame))
        append(UInt16(description.mBitsPerChannel))
        header.append(contentsOf: Array("data".utf8))
        append(UInt32(0))
        handle.write(header)
    }

    func write(_ bytes: UnsafeRawBufferPointer) {
        handle.write(Data(bytes))
        dataBytes += bytes.count
    }

    /// Writes the sizes where the file can seek back; on a pipe they stay 0 ("to the end").
    func finish() {
        func patch(_ offset: UInt64, _ value: UInt32) throws {
            try handle.seek(toOffset: offset)
            withUnsafeBytes(of: value.littleEndian) { handle.write(Data($0)) }
        }
        guard (try? handle.offset()) != nil else { return }
        try? patch(4, UInt32(clamping: 36 + dataBytes))
        try? patch(40, UInt32(clamping: dataBytes))
    }
}
