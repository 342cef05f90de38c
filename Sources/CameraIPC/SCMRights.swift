import Glibc
internal import CCameraShims

/// `sendmsg`/`recvmsg` with file descriptors as `SCM_RIGHTS` ancillary data.
public enum SCMRights {
    /// The kernel's SCM_MAX_FD: descriptors one sendmsg may carry.
    static let maxDescriptorsPerMessage = 253
    /// Messages gathered into one sendmsg.
    static let maxGather = 64

    static func controlSpace(for descriptorCount: Int) -> Int {
        CCameraShims_CMSG_SPACE(descriptorCount * MemoryLayout<Int32>.size)
    }

    struct Received {
        /// 0 at end-of-file.
        var byteCount: Int
        var descriptors: [OwnedFD]
        /// `MSG_CTRUNC`: the kernel dropped descriptors that did not fit.
        var truncated: Bool
    }

    /// Receives what is there, adopting any descriptors (close-on-exec); nil when
    /// nothing is (EAGAIN).
    static func receive(
        on socket: OwnedFD, into buffer: UnsafeMutableRawBufferPointer, control: UnsafeMutableRawBufferPointer,
        closer: DescriptorCloser? = nil
    ) throws(SystemError) -> Received? {
        var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var message = msghdr()
        // No room for descriptors: the kernel drops any that came, unopened here.
        message.msg_control = control.count > 0 ? control.baseAddress : nil
        message.msg_controllen = control.count
        let byteCount: Int
        do {
            byteCount = try withUnsafeMutablePointer(to: &vector) { vectorPointer throws(SystemError) in
                message.msg_iov = vectorPointer
                message.msg_iovlen = 1
                return try Syscall.recvmsg(socket.rawValue, &message, Int32(MSG_DONTWAIT) | CCameraShims_MSG_CMSG_CLOEXEC)
            }
        } catch where error.wouldBlock {
            return nil
        }
        var descriptors: [OwnedFD] = []
        var header = CCameraShims_CMSG_FIRSTHDR(&message)
        while let current = header {
            if current.pointee.cmsg_level == SOL_SOCKET && current.pointee.cmsg_type == Int32(SCM_RIGHTS) {
                let dataLength = Int(current.pointee.cmsg_len) - CCameraShims_CMSG_LEN(0)
                let data = UnsafeRawPointer(CCameraShims_CMSG_DATA(current)!)
                for index in 0..<dataLength / MemoryLayout<Int32>.size {
                    let fd = data.loadUnaligned(fromByteOffset: index * MemoryLayout<Int32>.size, as: Int32.self)
                    descriptors.append(OwnedFD(adopting: fd, closer: closer))
                }
            }
            header = CCameraShims_CMSG_NXTHDR(&message, current)
        }
        let truncated = message.msg_flags & Int32(MSG_CTRUNC) != 0
        return Received(byteCount: byteCount, descriptors: descriptors, truncated: truncated)
    }

    /// Writes from the front of `writes` in one sendmsg, gathering several
    /// messages. A message with descriptors is only ever the first of a
    /// sendmsg, whose first byte is its own: that is how the receiver tells
    /// which message descriptors came with (``DescriptorQueue``). They are let
    /// go of once the kernel has them.
    ///
    /// - Returns: the bytes written.
    static func send(_ writes: ArraySlice<PendingWrite>, on socket: OwnedFD) throws(SystemError) -> Int {
        let gathered = min(writes.count, maxGather)
        return try withTemporaryVectors(gathered) { vectors throws(SystemError) in
            var count = 0
            var carrier: PendingWrite?
            for write in writes.prefix(gathered) {
                if !write.descriptors.isEmpty {
                    guard count == 0 else { break }
                    carrier = write
                }
                let unwritten = write.unwritten
                vectors[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: unwritten.baseAddress), iov_len: unwritten.count)
                count += 1
            }
            let written = try send(UnsafeMutableBufferPointer(rebasing: vectors[..<count]),
                                   descriptors: carrier?.descriptors ?? [], on: socket)
            if written > 0 { carrier?.descriptors = [] }
            return written
        }
    }

    /// One sendmsg of `bytes`, `descriptors` riding on the first byte, as a
    /// test's client sends what it likes.
    ///
    /// - Returns: the bytes written.
    public static func send(_ bytes: [UInt8], descriptors: [OwnedFD], on socket: OwnedFD) throws(SystemError) -> Int {
        try bytes.withUnsafeBytes { bytes in
            Result { () throws(SystemError) in try send(bytes, descriptors: descriptors, on: socket) }
        }.get()
    }

    /// One sendmsg of `parts`, in order, `descriptors` riding on the first byte.
    ///
    /// - Returns: the bytes written.
    static func send(_ parts: UnsafeRawBufferPointer..., descriptors: [OwnedFD], on socket: OwnedFD) throws(SystemError) -> Int {
        try withTemporaryVectors(parts.count) { vectors throws(SystemError) in
            for (index, part) in parts.enumerated() {
                vectors[index] = iovec(iov_base: UnsafeMutableRawPointer(mutating: part.baseAddress), iov_len: part.count)
            }
            return try send(vectors, descriptors: descriptors, on: socket)
        }
    }

    /// One sendmsg of `vectors`, never blocking, `descriptors` as SCM_RIGHTS.
    private static func send(
        _ vectors: UnsafeMutableBufferPointer<iovec>, descriptors: [OwnedFD], on socket: OwnedFD
    ) throws(SystemError) -> Int {
        var message = msghdr()
        message.msg_iov = vectors.baseAddress
        message.msg_iovlen = vectors.count
        let flags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
        guard !descriptors.isEmpty else { return try Syscall.sendmsg(socket.rawValue, &message, flags) }
        let control = UnsafeMutableRawBufferPointer.allocate(byteCount: controlSpace(for: descriptors.count), alignment: 8)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0)
        message.msg_control = control.baseAddress
        message.msg_controllen = control.count
        let header = CCameraShims_CMSG_FIRSTHDR(&message)!
        header.pointee.cmsg_level = SOL_SOCKET
        header.pointee.cmsg_type = Int32(SCM_RIGHTS)
        header.pointee.cmsg_len = CCameraShims_CMSG_LEN(descriptors.count * MemoryLayout<Int32>.size)
        let data = UnsafeMutableRawPointer(CCameraShims_CMSG_DATA(header)!)
        for (index, descriptor) in descriptors.enumerated() {
            data.storeBytes(of: descriptor.rawValue, toByteOffset: index * MemoryLayout<Int32>.size, as: Int32.self)
        }
        return try Syscall.sendmsg(socket.rawValue, &message, flags)
    }

    /// Room for `count` iovecs on the stack: no allocation per message.
    private static func withTemporaryVectors<Result>(
        _ count: Int, _ body: (UnsafeMutableBufferPointer<iovec>) throws(SystemError) -> Result
    ) throws(SystemError) -> Result {
        let result = withUnsafeTemporaryAllocation(of: iovec.self, capacity: max(count, 1)) { vectors in
            Swift.Result { () throws(SystemError) in try body(vectors) }
        }
        return try result.get()
    }
}
