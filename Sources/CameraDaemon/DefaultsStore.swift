import CameraIPC
import CameraProtocol
import Foundation
import Logging
import Synchronization
import SwiftProtobuf

/// The settings stored with `camctl set --persist`, by uniqueID, in
/// `<state dir>/defaults.json` (``Camerad_V1_StoredDefaults`` in protobuf's JSON
/// mapping, the file's format; the daemon works in ``DeviceConfiguration``).
/// Written whole to a temporary file, then renamed over the old one.
///
/// A file that cannot be read or parsed is reported and ignored, never fatal;
/// it is kept as `defaults.json.corrupt` when the store is next written.
final class DefaultsStore: Sendable {
    let path: String
    private let logger: Logger
    private struct State {
        var stored = Camerad_V1_StoredDefaults()
        var corrupt = false
    }
    private let state = OrderedMutex(.defaultsStore, State())

    static let fileName = "defaults.json"

    /// Reads `<folder>/defaults.json` if there is one.
    init(folder: String, logger: Logger) {
        path = (folder as NSString).appendingPathComponent(Self.fileName)
        self.logger = logger
        reload()
    }

    /// Reads the file again: what it says replaces what was read before (none
    /// when it is gone).
    func reload() {
        guard FileManager.default.fileExists(atPath: path) else {
            state.withLock { $0 = State() }
            return
        }
        do {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            var options = JSONDecodingOptions()
            options.ignoreUnknownFields = true
            let stored = try Camerad_V1_StoredDefaults(jsonString: text, options: options)
            state.withLock { $0 = State(stored: stored, corrupt: false) }
            logger.info("stored defaults for \(stored.devices.count) device(s) read from \(path)")
        } catch {
            state.withLock { $0 = State(stored: Camerad_V1_StoredDefaults(), corrupt: true) }
            logger.warning("\(path) is unreadable (\(error)); ignoring it. It is kept as \(Self.fileName).corrupt on the next 'camctl set --persist'")
        }
    }

    /// The stored settings of a device.
    ///
    /// - Throws: ``CameraError`` for settings this camerad cannot read (a mode
    ///   from a newer one).
    func configuration(for uniqueID: String) throws -> DeviceConfiguration? {
        try state.withLock { $0.stored.devices[uniqueID] }.map(DeviceConfiguration.init)
    }

    /// Merges `configuration` into the device's stored settings
    /// (``DeviceConfiguration/merging(_:)``: later values win; the torch is
    /// never stored) and writes the file.
    ///
    /// - Throws: `INVALID_STATE` when the file cannot be written.
    func store(_ configuration: DeviceConfiguration, for uniqueID: String) throws {
        try state.withLock { state in
            let old = state.stored.devices[uniqueID].flatMap { try? DeviceConfiguration($0) } ?? DeviceConfiguration()
            var stored = state.stored
            stored.devices[uniqueID] = Camerad_V1_DeviceConfiguration(old.merging(configuration))
            try write(stored, movingAsideCorrupt: state.corrupt)
            state.stored = stored
            state.corrupt = false
        }
    }

    /// Writes `bytes` to a file that must not exist yet: whatever is at `path`
    /// (a symlink planted there, a file left by a crash) is removed and never
    /// followed (`O_CREAT | O_EXCL | O_NOFOLLOW`).
    private static func writeNew(_ path: String, _ bytes: [UInt8]) throws {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(errno))]) }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let reason = String(cString: strerror(errno))
                unlink(path)
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: reason])
            }
            offset += written
        }
    }

    private func write(_ stored: Camerad_V1_StoredDefaults, movingAsideCorrupt: Bool) throws {
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            if movingAsideCorrupt {
                _ = rename(path, path + ".corrupt")
            }
            var options = JSONEncodingOptions()
            options.preserveProtoFieldNames = true
            let text = try stored.jsonString(options: options) + "\n"
            let temporary = path + ".tmp-\(getpid())"
            try Self.writeNew(temporary, Array(text.utf8))
            guard rename(temporary, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: reason])
            }
        } catch {
            throw CameraError(.invalidState,
                              "applied, but not stored: cannot write \(path) (\(error.localizedDescription)); check --state-dir")
        }
    }
}
