/// One framed message waiting to be written: its length prefix and payload in
/// one buffer, how much of it is written, and the descriptors that go with its
/// first byte (dropped once sent).
final class PendingWrite: @unchecked Sendable {
    private let bytes: UnsafeMutableRawBufferPointer
    private(set) var offset = 0
    /// Not yet handed to the kernel; empty once they were.
    var descriptors: [OwnedFD]

    /// - Precondition: the payload fits a frame (``SocketConnection/send(_:descriptors:droppingAbove:)`` checks).
    init(payload: some Collection<UInt8>, descriptors: [OwnedFD]) {
        precondition(payload.count <= Frame.maxPayloadLength, "frame of \(payload.count) bytes exceeds the limit")
        precondition(descriptors.count <= SCMRights.maxDescriptorsPerMessage, "too many descriptors for one message")
        bytes = .allocate(byteCount: Frame.headerLength + payload.count, alignment: 1)
        let length = UInt32(payload.count)
        bytes[0] = UInt8(truncatingIfNeeded: length >> 24)
        bytes[1] = UInt8(truncatingIfNeeded: length >> 16)
        bytes[2] = UInt8(truncatingIfNeeded: length >> 8)
        bytes[3] = UInt8(truncatingIfNeeded: length)
        UnsafeMutableRawBufferPointer(rebasing: bytes[Frame.headerLength...]).copyBytes(from: payload)
        self.descriptors = descriptors
    }

    deinit { bytes.deallocate() }

    /// The whole frame's size, header included.
    var count: Int { bytes.count }
    var remaining: Int { bytes.count - offset }
    var unwritten: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[offset...]) }

    func advance(by count: Int) {
        precondition(count <= remaining)
        offset += count
    }
}
