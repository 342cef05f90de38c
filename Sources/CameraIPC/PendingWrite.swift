/// One framed message waiting to be written: its length prefix and payload in
/// one buffer, how much of it is written, and the descriptors that go with its
/// first byte (dropped once sent).
final class PendingWrite: @unchecked Sendable {
    private let bytes: UnsafeMutableRawBufferPointer
    private(set) var offset = 0
    /// Not yet handed to the kernel; empty once they were.
    var descriptors: [OwnedFD]

    /// A frame whose payload is `head` and then `body`, both copied.
    ///
    /// - Precondition: the payload fits a frame (``SocketConnection/send(_:_:descriptors:droppingAbove:)`` checks).
    init(head: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, descriptors: [OwnedFD]) {
        let length = head.count + body.count
        precondition(length <= Frame.maxPayloadLength, "frame of \(length) bytes exceeds the limit")
        precondition(descriptors.count <= SCMRights.maxDescriptorsPerMessage, "too many descriptors for one message")
        bytes = .allocate(byteCount: Frame.headerLength + length, alignment: 1)
        Frame.writeHeader(length: length, into: bytes)
        UnsafeMutableRawBufferPointer(rebasing: bytes[Frame.headerLength...]).copyMemory(from: head)
        UnsafeMutableRawBufferPointer(rebasing: bytes[(Frame.headerLength + head.count)...]).copyMemory(from: body)
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
