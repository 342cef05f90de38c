import Foundation
import CameraIPC
import Glibc

/// The daemon's listening socket and the lock that makes it the only daemon on
/// that path.
///
/// Claiming: take `PATH.lock` with `flock` (held while the daemon runs; it holds
/// the daemon's pid); if another daemon holds it, stop. A socket file left by a
/// daemon that died is stale and replaced; any other file at the path is refused.
/// The lock file stays behind when the daemon exits: removing it would race with
/// a daemon starting.
///
/// Nothing here follows a symlink: whoever can write the socket's folder must
/// not get a root daemon to write or chown a file of their choosing. The lock
/// file is opened with `O_NOFOLLOW` and must be a regular file of camerad's own
/// user; the socket's group is set with `lchown`.
struct DaemonSocket: Sendable {
    let path: String
    let listener: OwnedFD
    private let lock: OwnedFD

    /// - Parameters:
    ///   - mode: the socket file's permissions (0660 by default).
    ///   - group: the socket file's group, by name; nil keeps the daemon's.
    static func claim(path: String, mode: mode_t, group: String?) throws -> DaemonSocket {
        try makeParentDirectory(of: path)
        let lock = try takeLock(path + ".lock", socketPath: path)

        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else { throw DaemonError.notASocket(path: path) }
            // We hold the lock, so a daemon answering here does not use it (an
            // older camerad, or a different program): leave it alone.
            if UnixSocket.isServed(path) { throw DaemonError.alreadyRunning(path: path, pid: nil) }
            unlink(path)
        }
        let listener: OwnedFD
        do {
            listener = try UnixSocket.listen(at: path, permissions: mode)
        } catch {
            throw DaemonError.socketSetup(path: path, reason: "\(error)")
        }
        if let group {
            guard let entry = getgrnam(group) else {
                unlink(path)
                throw DaemonError.unknownGroup(group)
            }
            guard lchown(path, uid_t.max, entry.pointee.gr_gid) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(path)
                throw DaemonError.socketSetup(path: path, reason: "chown to group \(group): \(reason)")
            }
        }
        return DaemonSocket(path: path, listener: listener, lock: lock)
    }

    /// Removes the socket file (if it is still ours). The lock goes with the process.
    func remove() {
        unlink(path)
    }

    private static func takeLock(_ lockPath: String, socketPath: String) throws -> OwnedFD {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            if errno == ELOOP { throw DaemonError.unsafeLockFile(path: lockPath, reason: "is a symlink") }
            throw DaemonError.socketSetup(path: socketPath, reason: "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        let lock = OwnedFD(adopting: fd)
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw DaemonError.unsafeLockFile(path: lockPath, reason: "is not a regular file")
        }
        guard info.st_uid == geteuid() else {
            throw DaemonError.unsafeLockFile(path: lockPath, reason: "belongs to uid \(info.st_uid), not camerad's \(geteuid())")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: lockPath, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            throw DaemonError.alreadyRunning(path: socketPath, pid: holder)
        }
        let pid = Array("\(getpid())\n".utf8)
        ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return lock
    }

    private static func makeParentDirectory(of path: String) throws {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let directory = String(path[..<slash])
        var info = stat()
        if stat(directory, &info) == 0 { return }
        guard mkdir(directory, 0o755) == 0 || errno == EEXIST else {
            throw DaemonError.socketSetup(path: path, reason: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
    }
}
