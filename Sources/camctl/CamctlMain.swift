import ArgumentParser
import CaptureKit
import Glibc

/// Runs camctl with its own exit statuses: 0 success, 1 a failed operation (one
/// line on stderr saying what failed and what to do), 2 a usage error.
@main
enum CamctlMain {
    static func main() async {
        do {
            var command = try Camctl.parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            exit(0)
        } catch let error as CaptureError {
            Output.error("camctl: \(error.message)")
            exit(1)
        } catch let error as CommandFailure {
            Output.error("camctl: \(error.message)")
            exit(1)
        } catch {
            let status = Camctl.exitCode(for: error)
            if status == .success {
                Output.line(Camctl.fullMessage(for: error))
                exit(0)
            }
            Output.error(Camctl.fullMessage(for: error))
            exit(2)
        }
    }
}

/// A failure camctl itself reports (not from the daemon): exit status 1.
struct CommandFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Unbuffered output: lines reach a pipe as they are printed.
enum Output {
    static func line(_ text: String) {
        write(1, text + "\n")
    }

    static func error(_ text: String) {
        write(2, text + "\n")
    }

    /// To standard error as it is, with no newline: a progress line rewritten with "\r".
    static func progress(_ text: String) {
        write(2, text)
    }

    private static func write(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return  // EPIPE and the like: nobody is reading.
            }
            offset += written
        }
    }
}
