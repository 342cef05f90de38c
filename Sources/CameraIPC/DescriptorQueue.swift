/// File descriptors received on a connection and not yet claimed, oldest first.
///
/// Descriptors ride on the `sendmsg` that starts with the first byte of the
/// message they belong to, so when a message is complete its descriptors are at
/// the front of this queue. The framing layer takes as many as the message says;
/// then any that arrived no later than the message's last byte belong to no later
/// message and are closed at once (``closeUnclaimed(arrivedBy:)``). Any left when
/// the connection ends are closed too.
public struct DescriptorQueue: Sendable {
    /// The most descriptors a client may have waiting for their message at
    /// camerad; past it the connection closes. No request carries more.
    public static let limit = 4

    /// The most a client lets camerad's messages bring: a frame pool's memory,
    /// a memfd of its own and each of the device's buffers (V4L2 gives at most
    /// 32, `VIDEO_MAX_FRAME`), for two pools at once.
    public static let clientLimit = 2 * (1 + 32)

    /// Each descriptor with the stream offset its recvmsg read up to.
    private var descriptors: [(fd: OwnedFD, arrivedBy: Int)] = []
    private var head = 0

    public init() {}

    /// Descriptors waiting to be claimed.
    public var count: Int { descriptors.count - head }

    /// A descriptor that arrived with the bytes up to stream offset `arrivedBy`.
    mutating func append(_ descriptor: OwnedFD, arrivedBy: Int) {
        descriptors.append((descriptor, arrivedBy))
    }

    /// Closes the descriptors at the front that arrived with bytes no later
    /// than `offset`, the end of the message just handled: no later message
    /// can claim them.
    ///
    /// - Returns: how many were closed.
    @discardableResult
    mutating func closeUnclaimed(arrivedBy offset: Int) -> Int {
        var closed = 0
        while head < descriptors.count, descriptors[head].arrivedBy <= offset {
            head += 1
            closed += 1
        }
        compact()
        return closed
    }

    private mutating func compact() {
        if head == descriptors.count {
            descriptors.removeAll(keepingCapacity: true)
            head = 0
        }
    }

    /// The next `count` descriptors, in the order they arrived.
    ///
    /// - Throws: ``FramingError/missingDescriptors(claimed:available:)`` when fewer arrived.
    public mutating func take(_ count: Int) throws(FramingError) -> [OwnedFD] {
        guard count > 0 else { return [] }
        guard count <= self.count else { throw .missingDescriptors(claimed: count, available: self.count) }
        let taken = descriptors[head..<head + count].map(\.fd)
        head += count
        compact()
        return taken
    }

    mutating func removeAll() {
        descriptors.removeAll()
        head = 0
    }
}
