import Foundation
import Glibc

/// The files camctl writes, opened without a race: camctl is often run as
/// root, in folders others may write (/tmp, a shared directory), where
/// checking a name and then opening it lets another user swap a symbolic link
/// (or a hard link to one of root's files) in between. So a new file is
/// created with `O_CREAT | O_EXCL`, which follows no link and writes over
/// nothing; replacing removes the name first (only a regular file's), never
/// writing into what it named.
enum OutputFile {
    /// `path` as a new file, open for writing. With `replacing`, a regular
    /// file already there is removed first; anything else there is refused.
    ///
    /// - Throws: ``CommandFailure`` saying what is there, or why it cannot be made.
    static func create(_ path: String, replacing: Bool) throws -> FileHandle {
        try clear(path, replacing: replacing)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure(path, errno) }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// Makes `path` free for a new file that another part creates with
    /// `O_EXCL` itself (CaptureKit's movie output): with `replacing`, a
    /// regular file there is removed; without, anything there is refused.
    static func clear(_ path: String, replacing: Bool) throws {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard replacing else { throw CommandFailure("\(path) exists; pass --force to replace it") }
        guard status.st_mode & S_IFMT == S_IFREG else {
            let what = status.st_mode & S_IFMT == S_IFLNK ? "a symbolic link" : "not a regular file"
            throw CommandFailure("\(path) is \(what); camctl replaces only regular files: remove it, or write elsewhere")
        }
        guard unlink(path) == 0 || errno == ENOENT else { throw failure(path, errno) }
    }

    /// `path` open for appending, created if missing: only a regular file of
    /// camctl's own user with no other name (never through a link).
    static func appending(_ path: String) throws -> FileHandle {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure(path, errno) }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_nlink == 1, status.st_uid == geteuid() else {
            throw CommandFailure("\(path) is not a regular file of this user's with one name; camctl appends only to its own files")
        }
        return handle
    }

    private static func failure(_ path: String, _ error: Int32) -> CommandFailure {
        switch error {
        case EEXIST: CommandFailure("\(path) appeared while camctl made it (another process writes there); try again, or write elsewhere")
        case ELOOP: CommandFailure("\(path) is a symbolic link; camctl writes through none: remove it, or write elsewhere")
        default: CommandFailure("cannot write \(path) (\(String(cString: strerror(error)))); check the directory exists and is writable")
        }
    }
}
