import CameraIPC
internal import CCameraShims
import Glibc
import Synchronization

/// A thread of its own that sleeps in `poll` — on a descriptor it watches (a
/// V4L2 node, a hotplug monitor), on a wake-up anyone may send it (an eventfd),
/// and until a deadline — and does its work when any comes. The one way
/// camerad's dedicated threads wait: a V4L2 or virtual capture, a variant's
/// worker, the hotplug monitor.
///
/// Made first, started with its body second (what the body uses may need to
/// wake it); joined (``join()``) by whoever stops it, or detached when nobody
/// waits for its end.
final class PollingThread: Sendable {
    /// How the kernel schedules the thread against the machine's other work.
    enum Priority: Sendable {
        /// Nice 0: the CPU shared fairly with everything else (a camera's capture, an
        /// encoder, a client's conversion).
        case normal
        /// Sound's path — a microphone's capture, its variants, the AAC encoder's input:
        /// nice -11, as PulseAudio and PipeWire run theirs (their fallback without a
        /// realtime class). Light work, due every period: a busy machine's scheduling
        /// delays would lose periods at 0. Where camerad may not lower a nice value (no
        /// root, CAP_SYS_NICE or RLIMIT_NICE) it stays normal.
        case sound

        /// The nice value it asks for.
        var nice: Int32 {
            switch self {
            case .normal: 0
            case .sound: -11
            }
        }
    }

    /// What ended a ``wait(watching:timeout:)``: the descriptor's poll bits (0:
    /// not ready), whether the thread was woken; neither: the deadline passed.
    struct Readiness {
        let descriptorEvents: Int16
        let woken: Bool

        var descriptorIsReady: Bool { descriptorEvents != 0 }
    }

    let name: String
    let priority: Priority
    /// The descriptor it watches, or -1.
    private let descriptor: Int32
    private let wakeup: OwnedFD
    private let handle = Atomic<UInt>(0)

    /// - Parameters:
    ///   - name: as `top -H` shows it (15 bytes at most kept).
    ///   - descriptor: one to watch for reading, which must stay open while the thread runs; -1: none.
    ///   - priority: how it is scheduled.
    init(name: String, watching descriptor: Int32 = -1, priority: Priority = .normal) throws(SystemError) {
        self.name = name
        self.priority = priority
        self.descriptor = descriptor
        let wakeup = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        guard wakeup >= 0 else { throw SystemError("eventfd", errno: errno) }
        self.wakeup = OwnedFD(adopting: wakeup)
    }

    /// Starts the thread running `body`, which keeps this object (its wake-up)
    /// until it returns. `body` is the thread's alone (`sending`): what it
    /// captures, a hotplug monitor say, is used there only.
    ///
    /// - Parameter detached: nobody will ``join()`` it.
    func start(detached: Bool = false, _ body: sending @escaping (PollingThread) -> Void) throws(SystemError) {
        let context = Unmanaged.passRetained(Start(thread: self, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            _ = CCameraShims_set_thread_name(String(decoding: start.thread.name.utf8.prefix(15), as: UTF8.self))
            // Refused without the right to (EACCES): the thread runs at nice 0, as any other.
            if start.thread.priority != .normal { _ = CCameraShims_set_thread_nice(start.thread.priority.nice) }
            start.body(start.thread)
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw SystemError("pthread_create", errno: result)
        }
        if detached {
            pthread_detach(thread)
        } else {
            handle.store(thread, ordering: .releasing)
        }
    }

    private final class Start {
        let thread: PollingThread
        let body: (PollingThread) -> Void

        init(thread: PollingThread, body: @escaping (PollingThread) -> Void) {
            self.thread = thread
            self.body = body
        }
    }

    /// Wakes the thread (from any thread; never blocks). Wake-ups sent while
    /// it works are not lost: its next wait returns at once.
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeup.rawValue, &one, 8)
    }

    /// On the thread: sleeps until the watched descriptor is readable (when
    /// `watching`), a wake-up came, or `timeout` nanoseconds passed (nil: no deadline).
    func wait(watching: Bool = true, timeout nanoseconds: Int64? = nil) -> Readiness {
        var descriptors = [pollfd(fd: wakeup.rawValue, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: watching ? descriptor : -1, events: Int16(POLLIN), revents: 0)]
        let count = CCameraShims_poll_nanoseconds(&descriptors, descriptor >= 0 ? 2 : 1, nanoseconds.map { max(0, $0) } ?? -1)
        guard count > 0 else { return Readiness(descriptorEvents: 0, woken: false) }  // deadline, or EINTR
        let woken = descriptors[0].revents != 0
        if woken {
            var counter: UInt64 = 0
            _ = read(wakeup.rawValue, &counter, 8)
        }
        return Readiness(descriptorEvents: descriptors[1].revents, woken: woken)
    }

    /// Waits for the thread to end (not from the thread itself).
    func join() {
        let thread = handle.exchange(0, ordering: .acquiring)
        guard thread != 0 else { return }
        pthread_join(thread, nil)
    }
}
