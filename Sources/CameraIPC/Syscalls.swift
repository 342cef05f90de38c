import Glibc
internal import CCameraShims

/// The raw system calls of CameraIPC, each retried on `EINTR` and turned into
/// a ``SystemError``. Everything else in the module calls these.
///
/// `EBADF` and `EFAULT` mean a bug in camerad (a descriptor or buffer we got
/// wrong), so they stop the process instead of being thrown.
enum Syscall {
    @inline(__always)
    static func check<T: FixedWidthInteger>(_ operation: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            guard result == -1 else { return result }
            let error = Glibc.errno
            if error == EINTR { continue }
            precondition(error != EBADF && error != EFAULT, "\(operation) failed with errno \(error): a camerad bug")
            throw SystemError(operation, errno: error)
        }
    }

    static func close(_ fd: Int32) {
        // Linux closes the descriptor even when close() reports EINTR: never retry.
        let result = Glibc.close(fd)
        precondition(result == 0 || Glibc.errno != EBADF, "close(\(fd)) of a descriptor not open: a camerad bug")
    }

    static func socket(_ domain: Int32, _ type: Int32, _ proto: Int32) throws(SystemError) -> Int32 {
        try check("socket") { Glibc.socket(domain, type, proto) }
    }

    static func socketpair(_ domain: Int32, _ type: Int32, _ proto: Int32) throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try check("socketpair") { Glibc.socketpair(domain, type, proto, &fds) }
        return (fds[0], fds[1])
    }

    static func bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws(SystemError) {
        _ = try check("bind") { Glibc.bind(fd, address, length) }
    }

    static func listen(_ fd: Int32, _ backlog: Int32) throws(SystemError) {
        _ = try check("listen") { Glibc.listen(fd, backlog) }
    }

    static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws(SystemError) {
        _ = try check("connect") { Glibc.connect(fd, address, length) }
    }

    static func accept4(_ fd: Int32, _ flags: Int32) throws(SystemError) -> Int32 {
        try check("accept4") { CCameraShims_accept4(fd, flags) }
    }

    static func shutdown(_ fd: Int32, _ how: Int32) {
        // ENOTCONN only means the peer went first.
        _ = Glibc.shutdown(fd, how)
    }

    static func sendmsg(_ fd: Int32, _ message: UnsafePointer<msghdr>, _ flags: Int32) throws(SystemError) -> Int {
        try check("sendmsg") { Glibc.sendmsg(fd, message, flags) }
    }

    /// `send(MSG_DONTWAIT | MSG_NOSIGNAL)`: what the socket takes now.
    static func sendWithoutWaiting(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        try check("send") { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
    }

    static func recvmsg(_ fd: Int32, _ message: UnsafeMutablePointer<msghdr>, _ flags: Int32) throws(SystemError) -> Int {
        try check("recvmsg") { Glibc.recvmsg(fd, message, flags) }
    }

    static func fcntl(_ fd: Int32, _ command: Int32, _ argument: Int32) throws(SystemError) -> Int32 {
        try check("fcntl") { Glibc.fcntl(fd, command, argument) }
    }

    static func peerCredentials(_ fd: Int32) throws(SystemError) -> (pid_t, uid_t, gid_t) {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        _ = try check("getsockopt(SO_PEERCRED)") { CCameraShims_peer_credentials(fd, &pid, &uid, &gid) }
        return (pid, uid, gid)
    }

    static func setSocketOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(SystemError) {
        var value = value
        _ = try check("setsockopt") {
            Glibc.setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    static func epollCreate() throws(SystemError) -> Int32 {
        try check("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    static func epollControl(
        _ epoll: Int32, _ operation: Int32, _ fd: Int32, _ event: inout epoll_event
    ) throws(SystemError) {
        _ = try check("epoll_ctl") { epoll_ctl(epoll, operation, fd, &event) }
    }

    static func epollWait(
        _ epoll: Int32, _ events: UnsafeMutablePointer<epoll_event>, _ count: Int32, _ timeout: Int32
    ) throws(SystemError) -> Int32 {
        try check("epoll_wait") { epoll_wait(epoll, events, count, timeout) }
    }

    static func eventfd(_ flags: Int32) throws(SystemError) -> Int32 {
        try check("eventfd") { CCameraShims.eventfd(0, flags) }
    }

    static func eventfdWrite(_ fd: Int32) {
        var one: UInt64 = 1
        // EAGAIN means the counter is already non-zero: the loop will wake anyway.
        _ = Glibc.write(fd, &one, 8)
    }

    static func eventfdDrain(_ fd: Int32) {
        var value: UInt64 = 0
        _ = Glibc.read(fd, &value, 8)
    }

    static func memfdCreate(_ name: String, _ flags: UInt32) throws(SystemError) -> Int32 {
        try check("memfd_create") { CCameraShims_memfd_create(name, flags) }
    }

    static func ftruncate(_ fd: Int32, _ length: Int) throws(SystemError) {
        _ = try check("ftruncate") { Glibc.ftruncate(fd, off_t(length)) }
    }

    static func fstatSize(_ fd: Int32) throws(SystemError) -> Int {
        var info = stat()
        _ = try check("fstat") { Glibc.fstat(fd, &info) }
        return Int(info.st_size)
    }

    /// Whether the descriptor is a dma-buf: a device's buffer (`VIDIOC_EXPBUF`),
    /// whose size is fixed for its life.
    static func isDMABuf(_ fd: Int32) -> Bool { CCameraShims_is_dmabuf(fd) != 0 }

    /// A dma-buf's size: `lseek(SEEK_END)`, as the kernel documents it.
    static func dmaBufSize(_ fd: Int32) throws(SystemError) -> Int {
        let size = try check("lseek") { Glibc.lseek(fd, 0, SEEK_END) }
        _ = Glibc.lseek(fd, 0, SEEK_SET)
        return Int(size)
    }

    static func mmap(_ length: Int, _ protection: Int32, _ fd: Int32) throws(SystemError) -> UnsafeMutableRawPointer {
        guard let address = Glibc.mmap(nil, length, protection, MAP_SHARED, fd, 0), address != MAP_FAILED else {
            throw SystemError("mmap", errno: Glibc.errno)
        }
        return address
    }

    static func munmap(_ address: UnsafeMutableRawPointer, _ length: Int) {
        let result = Glibc.munmap(address, length)
        precondition(result == 0, "munmap of a region we did not map: a camerad bug")
    }
}
