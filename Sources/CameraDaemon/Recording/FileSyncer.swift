import CameraIPC
import Glibc
import Synchronization

/// When a recording's file is made durable (`StartRecording.sync`): bytes
/// reach the file a whole fragment at a time, and `fdatasync` after one makes
/// the file survive a power loss up to it.
enum FileSync: Sendable, Equatable {
    /// Never: the kernel writes the file back when it will (SIGKILL-safe, not power-loss-safe).
    case never
    /// After every fragment, and at the end (the default).
    case everyFragment
    /// After the first fragment this long or more after the last sync, and at the end.
    case interval(nanoseconds: Int64)
}

/// A recording's `fdatasync`s, on a thread of their own: never on its
/// recorder's worker, whose next packets would wait for the disk, and a disk
/// that takes seconds (or a network file whose server hangs) holds up that
/// recording's syncs alone. One at a time, in order; a sync asked for while
/// one of the same file still waits to start is that one (counted as joined).
final class FileSyncer: Sendable {
    private let thread: WorkerThread
    private let state = OrderedMutex(.fileSync, Counts())

    /// What it has done: syncs done, syncs asked for that joined one waiting, the longest.
    struct Counts: Sendable, Equatable {
        var syncs = 0
        var joined = 0
        var longestNanoseconds: Int64 = 0
        /// Files with a sync waiting to start.
        fileprivate var waiting: Set<Int32> = []
    }

    /// - Throws: when no thread can be had.
    init(holding claim: ClientBudget.Claim?) throws(SystemError) {
        thread = try WorkerThread(name: "camerad-sync", holding: claim)
    }

    var counts: Counts { state.withLock { $0 } }

    /// Syncs `file` after the syncs asked for before (it stays open until then).
    func sync(_ file: OwnedFD) {
        let asked = state.withLock { counts in
            guard counts.waiting.insert(file.rawValue).inserted else {
                counts.joined += 1
                return false
            }
            return true
        }
        guard asked else { return }
        thread.async { [self] in
            state.withLock { _ = $0.waiting.remove(file.rawValue) }
            dataSync(file)
        }
    }

    /// Syncs `file` (nil: none) after what was asked before, then runs `then`; the thread ends after.
    func finish(_ file: OwnedFD?, then: @escaping @Sendable () -> Void) {
        thread.async { [self] in
            if let file { dataSync(file) }
            then()
        }
        thread.finish()
    }

    private func dataSync(_ file: OwnedFD) {
        let start = monotonicNanoseconds()
        while fdatasync(file.rawValue) != 0 && errno == EINTR {}
        let took = monotonicNanoseconds() - start
        state.withLock { counts in
            counts.syncs += 1
            counts.longestNanoseconds = max(counts.longestNanoseconds, took)
        }
    }
}
