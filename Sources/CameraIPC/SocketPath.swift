import Glibc

/// Where camerad's socket is: the one rule shared by camerad, CaptureKit and camctl.
public enum SocketPath {
    /// The environment variable that names the socket.
    public static let environmentVariable = "CAMERAD_SOCKET"

    /// The socket's file name inside `$XDG_RUNTIME_DIR`.
    public static let fileName = "camerad.sock"

    /// The system-wide default, when neither variable is set.
    public static let systemDefault = "/run/camerad/camerad.sock"

    /// The socket path: `explicit` if given, else `$CAMERAD_SOCKET`, else
    /// `$XDG_RUNTIME_DIR/camerad.sock`, else `/run/camerad/camerad.sock`.
    /// Empty variables count as unset.
    public static func resolve(explicit: String? = nil, environment: [String: String]) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let path = environment[environmentVariable], !path.isEmpty { return path }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime.hasSuffix("/") ? runtime + fileName : runtime + "/" + fileName
        }
        return systemDefault
    }

    /// ``resolve(explicit:environment:)`` with this process's environment.
    public static func resolve(explicit: String? = nil) -> String {
        resolve(explicit: explicit, environment: ProcessEnvironment.current)
    }
}

/// This process's environment variables, read without Foundation.
enum ProcessEnvironment {
    static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let pair = String(cString: entry)
            if let equals = pair.firstIndex(of: "=") {
                result[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}
