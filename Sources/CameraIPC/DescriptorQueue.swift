/// File descriptors received on a connection and not yet claimed, oldest first.
///
/// Descriptors ride with the first byte of the message they belong to, so when a
/// message is complete its descriptors are at the front of this queue. The
/// framing layer takes as many as the message says; any left when the connection
/// ends are closed.
public struct DescriptorQueue: Sendable {
    /// The most descriptors that may wait unclaimed; past it the connection closes.
    public static let limit = 1024

    private var descriptors: [OwnedFD] = []
    private var head = 0

    public init() {}

    /// Descriptors waiting to be claimed.
    public var count: Int { descriptors.count - head }

    mutating func append(_ descriptor: OwnedFD) {
        descriptors.append(descriptor)
    }

    /// The next `count` descriptors, in the order they arrived.
    ///
    /// - Throws: ``FramingError/missingDescriptors(claimed:available:)`` when fewer arrived.
    public mutating func take(_ count: Int) throws(FramingError) -> [OwnedFD] {
        guard count > 0 else { return [] }
        guard count <= self.count else { throw .missingDescriptors(claimed: count, available: self.count) }
        let taken = Array(descriptors[head..<head + count])
        head += count
        if head == descriptors.count {
            descriptors.removeAll(keepingCapacity: true)
            head = 0
        }
        return taken
    }

    mutating func removeAll() {
        descriptors.removeAll()
        head = 0
    }
}
