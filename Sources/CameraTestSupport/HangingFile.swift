import Foundation
import Glibc
import Synchronization

/// A file whose server stops answering, as a network or FUSE file does when
/// its server hangs: a FUSE filesystem of one file, `movie.mp4`, served by a
/// thread of this process speaking the kernel's protocol on /dev/fuse. It
/// answers until ``hang()``; after, every request the kernel sends — the
/// fstat, statfs or write of whoever holds the file — waits, until
/// ``close()`` aborts the connection (they then fail with ENOTCONN). A
/// descriptor's closing (FLUSH, RELEASE) is still answered — a process that
/// forks while it holds one (a test running ffprobe) closes it again at exec —
/// unless it hangs with `closes`: then every close of the file waits too
/// (hold its descriptors only in a process that never forks meanwhile).
///
/// Attributes are never cached (their validity is 0), so an fstat reaches the
/// server every time. Mounting takes root and /dev/fuse; ``isAvailable`` says
/// whether this machine has them.
public final class HangingFile: Sendable {
    /// The file's path, to open while it still answers.
    public let path: String
    private let mountPoint: String
    private let server = Server()

    /// What the serving thread and its owner share.
    private final class Server: Sendable {
        let answering = Atomic(true)
        let answeringCloses = Atomic(true)
        let stopping = Atomic(false)
        let done = DispatchSemaphore(value: 0)
    }

    /// Whether one can be mounted here (root, /dev/fuse, and a kernel and
    /// container that allow it): tried once.
    public static let isAvailable: Bool = {
        guard geteuid() == 0, access("/dev/fuse", R_OK | W_OK) == 0 else { return false }
        let folder = NSTemporaryDirectory() + "camerad-fuse-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        guard let file = try? HangingFile(at: folder) else { return false }
        file.close()
        return true
    }()

    /// Mounts it on `mountPoint` (made if missing).
    public init(at mountPoint: String) throws {
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let device = open("/dev/fuse", O_RDWR | O_CLOEXEC)
        guard device >= 0 else { throw DaemonFailure("open /dev/fuse: \(String(cString: strerror(errno)))") }
        let options = "fd=\(device),rootmode=40000,user_id=\(geteuid()),group_id=\(getegid())"
        guard mount("camerad-hanging", mountPoint, "fuse", UInt(MS_NOSUID | MS_NODEV), options) == 0 else {
            let error = String(cString: strerror(errno))
            Glibc.close(device)
            throw DaemonFailure("mount a FUSE filesystem on \(mountPoint): \(error)")
        }
        self.mountPoint = mountPoint
        path = mountPoint + "/movie.mp4"
        let server = server
        Thread.detachNewThread {
            Self.serve(device, answering: server.answering, answeringCloses: server.answeringCloses, stopping: server.stopping)
            // The device's last descriptor closed aborts the connection: whatever waits fails.
            Glibc.close(device)
            server.done.signal()
        }
    }

    /// From now on nothing is answered but a descriptor's closing — nor
    /// that, with `closes`.
    public func hang(closes: Bool = false) {
        if closes { server.answeringCloses.store(false, ordering: .relaxed) }
        server.answering.store(false, ordering: .relaxed)
    }

    /// Aborts the connection (every request waiting fails) and unmounts it.
    public func close() {
        guard !server.stopping.exchange(true, ordering: .relaxed) else { return }
        server.done.wait()
        umount2(mountPoint, Int32(MNT_DETACH))
    }

    deinit { close() }

    // MARK: - The kernel's protocol (include/uapi/linux/fuse.h, 7.31)

    private enum Opcode: UInt32 {
        case lookup = 1, forget = 2, getattr = 3, open = 14, write = 16, statfs = 17, release = 18, flush = 25, initialize = 26,
             interrupt = 36, batchForget = 42
    }
    private static let rootNode: UInt64 = 1, fileNode: UInt64 = 2

    private static func serve(_ device: Int32, answering: borrowing Atomic<Bool>, answeringCloses: borrowing Atomic<Bool>,
                              stopping: borrowing Atomic<Bool>) {
        // At least a write's largest payload (max_write) and its header.
        var buffer = [UInt8](repeating: 0, count: 64 * 1024 + 4096)
        while !stopping.load(ordering: .relaxed) {
            var ready = pollfd(fd: device, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(device, $0.baseAddress, $0.count) }
            guard count >= 40 else {
                if count < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT) { continue }
                return
            }
            let request = Array(buffer[0..<count])
            let opcode = Opcode(rawValue: load(UInt32.self, request, 4))
            let unique = load(UInt64.self, request, 8)
            let node = load(UInt64.self, request, 16)
            // FORGET and INTERRUPT are never answered; after hang(), nothing but a descriptor's closing is (nor that, after hang(closes:)).
            if opcode == .forget || opcode == .batchForget || opcode == .interrupt { continue }
            let closing = opcode == .flush || opcode == .release
            let answers = answering.load(ordering: .relaxed) || opcode == .initialize
                || closing && answeringCloses.load(ordering: .relaxed)
            guard answers else { continue }
            var reply = Reply()
            var error: Int32 = 0
            switch opcode {
            case .initialize:
                reply.append(UInt32(7), UInt32(31), load(UInt32.self, request, 48), UInt32(0))  // major, minor, max_readahead, flags
                reply.append(UInt16(0), UInt16(0), UInt32(64 * 1024), UInt32(1))  // background, congestion, max_write, time_gran
                reply.append(UInt16(0), UInt16(0), UInt32(0))  // max_pages, map_alignment, flags2
                reply.bytes += [UInt8](repeating: 0, count: 28)
            case .lookup where node == rootNode:
                let name = String(decoding: request[40...].prefix { $0 != 0 }, as: UTF8.self)
                guard name == "movie.mp4" else { error = ENOENT; break }
                reply.append(fileNode, UInt64(0), UInt64(0), UInt64(0), UInt32(0), UInt32(0))  // node, generation, validities
                reply.appendAttributes(node: fileNode)
            case .getattr:
                reply.append(UInt64(0), UInt32(0), UInt32(0))  // valid for 0 s
                reply.appendAttributes(node: node)
            case .open:
                reply.append(UInt64(1), UInt32(1), UInt32(0))  // fh, FOPEN_DIRECT_IO: every write reaches the server
            case .write:
                reply.append(load(UInt32.self, request, 40 + 16), UInt32(0))  // all of its size written
            case .statfs:
                // blocks, bfree, bavail, files, ffree, bsize, namelen, frsize, padding, spare[6]
                reply.append(UInt64(1 << 20), UInt64(1 << 19), UInt64(1 << 19), UInt64(16), UInt64(15))
                reply.append(UInt32(4096), UInt32(255), UInt32(4096), UInt32(0))
                reply.bytes += [UInt8](repeating: 0, count: 24)
            case .release, .flush:
                break
            default:
                error = ENOSYS
            }
            var header = Reply()
            header.append(UInt32(16 + (error == 0 ? reply.bytes.count : 0)), -error, unique)
            let message = header.bytes + (error == 0 ? reply.bytes : [])
            _ = message.withUnsafeBytes { write(device, $0.baseAddress, $0.count) }
        }
    }

    private static func load<T: FixedWidthInteger>(_ type: T.Type, _ bytes: [UInt8], _ offset: Int) -> T {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
    }

    /// A reply's body, little-endian as the kernel's structs on this machine.
    private struct Reply {
        var bytes: [UInt8] = []

        mutating func append<each T: FixedWidthInteger>(_ values: repeat each T) {
            for value in repeat each values { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        }

        /// struct fuse_attr: the root directory, or the file (empty, writable).
        mutating func appendAttributes(node: UInt64) {
            let mode = node == HangingFile.rootNode ? UInt32(S_IFDIR) | 0o755 : UInt32(S_IFREG) | 0o644
            append(node, UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))  // ino, size, blocks, atime, mtime, ctime
            append(UInt32(0), UInt32(0), UInt32(0), mode, UInt32(1))  // the times' nanoseconds, mode, nlink
            append(geteuid(), getegid(), UInt32(0), UInt32(4096), UInt32(0))  // uid, gid, rdev, blksize, flags
        }
    }
}
