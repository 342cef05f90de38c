import CameraIPC
internal import CCameraShims
import Glibc

/// What camerad asks of a movie's file before writing to it: the descriptor a
/// client passed is written with camerad's privileges (root's, often), so it
/// must be the kind of file the client could have written a movie to itself.
extension MovieRecorder {
    /// Refuses, before anything is written, a descriptor a movie cannot go
    /// to: one that is not a regular file (a pipe, a socket, a directory, a
    /// device), not open for writing, open for appending (a movie is written
    /// from where the descriptor stands, and its last fragment is cut back if
    /// a write fails half-way: appending would put its bytes elsewhere), or a
    /// file of the kernel's own (procfs, sysfs, cgroupfs, debugfs, tracefs,
    /// configfs and the like: writing those changes the system, not a file).
    ///
    /// - Throws: INVALID_ARGUMENT saying what it is and what to pass instead.
    static func check(_ descriptor: OwnedFD) throws(CameraError) {
        var status = stat()
        guard fstat(descriptor.rawValue, &status) == 0 else {
            throw CameraError(.invalidArgument, "the movie's descriptor cannot be read (\(String(cString: strerror(errno)))); pass an open file")
        }
        let type = status.st_mode & S_IFMT
        guard type == S_IFREG else {
            let what = type == S_IFDIR ? "a directory" : type == S_IFIFO ? "a pipe" : type == S_IFSOCK ? "a socket"
                : type == S_IFCHR || type == S_IFBLK ? "a device" : "not a regular file"
            throw CameraError(.invalidArgument, "the movie's descriptor is \(what); open a regular file for writing and pass it")
        }
        let flags = fcntl(descriptor.rawValue, F_GETFL)
        guard flags >= 0, flags & O_ACCMODE == O_WRONLY || flags & O_ACCMODE == O_RDWR else {
            throw CameraError(.invalidArgument, "the movie's file is open read-only; open it for writing (O_WRONLY) and pass it")
        }
        guard flags & O_APPEND == 0 else {
            throw CameraError(.invalidArgument, "the movie's file is open for appending (O_APPEND); a movie is written from where "
                + "the descriptor stands: open it without O_APPEND (a new file, or one truncated)")
        }
        let filesystem = CCameraShims_filesystem_type(descriptor.rawValue)
        if filesystem != -1, let name = kernelFilesystems[UInt(bitPattern: filesystem)] {
            throw CameraError(.invalidArgument, "the movie's file is on \(name), the kernel's own filesystem, not a disk's; "
                + "record to a file on a disk")
        }
    }

    /// Filesystems whose files are the kernel's settings, not data (linux/magic.h).
    private static let kernelFilesystems: [UInt: String] = [
        0x9FA0: "procfs", 0x6265_6572: "sysfs", 0x0027_E0EB: "cgroupfs", 0x6367_7270: "cgroupfs",
        0x6462_6720: "debugfs", 0x7472_6163: "tracefs", 0x6265_6570: "configfs", 0x7363_6673: "securityfs",
        0xCAFE_4A11: "bpffs", 0x6165_676C: "pstore", 0xDE5E_81E4: "efivarfs", 0xF97C_FF8C: "selinuxfs",
        0x4341_5D53: "smackfs", 0x4249_4E4D: "binfmt_misc", 0x6573_5543: "fusectl", 0x6E73_6673: "nsfs",
    ]

    /// Bytes free to an unprivileged writer on `descriptor`'s filesystem; nil when it cannot be told.
    static func freeBytes(_ descriptor: OwnedFD) -> Int64? {
        var status = statvfs()
        guard fstatvfs(descriptor.rawValue, &status) == 0 else { return nil }
        return Int64(status.f_bavail) * Int64(status.f_frsize)
    }
}
