/// Why the daemon cannot start. Each message is one line that says what to do.
public enum DaemonError: Error, Equatable, CustomStringConvertible {
    case alreadyRunning(path: String, pid: Int32?)
    case notASocket(path: String)
    /// The lock file is a symlink, not a regular file, or someone else's.
    case unsafeLockFile(path: String, reason: String)
    case unknownGroup(String)
    case socketSetup(path: String, reason: String)
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .alreadyRunning(let path, let pid):
            let holder = pid.map { " (pid \($0))" } ?? ""
            return "another camerad\(holder) is already serving \(path); stop it or pass a different --socket"
        case .notASocket(let path):
            return "\(path) exists and is not a socket; remove it or pass a different --socket"
        case .unsafeLockFile(let path, let reason):
            return "\(path) \(reason); camerad will not write through it: remove it, or pass a --socket in a folder only camerad's user can write"
        case .unknownGroup(let group):
            return "no group named '\(group)'; create it or pass an existing --socket-group"
        case .socketSetup(let path, let reason):
            return "cannot listen on \(path): \(reason)"
        case .invalidConfiguration(let reason):
            return reason
        }
    }
}
