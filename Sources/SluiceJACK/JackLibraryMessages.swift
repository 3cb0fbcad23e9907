import CJack
import Glibc
import Logging
import Synchronization

/// libjack's own messages ("Cannot connect to server socket err = …", "jack server is not
/// running or cannot be started", …) go to the logger labelled `libjack` at debug level
/// instead of standard error: a user sees Sluice's one message saying what went wrong and
/// what to do (`JackError`), and `--log-level debug` shows libjack's lines beside it.
///
/// Installed once per process, before the first client opens (libjack's handlers are
/// process-wide). libjack may call them from any thread, its process thread included (on an
/// error path); nothing is logged there: a message from a JACK process thread of this
/// process is only counted, and the count is logged when the client closes.
enum JackLibraryMessages {
    static let logger = Logger(label: "libjack")

    /// Sluice's own JACK diagnostics (clients opened, closed), never from the process thread.
    static let sluiceLogger = Logger(label: "sluice.jack")

    /// The process threads of this process's activated clients.
    static let realtimeThreads = ThreadTable()

    /// Messages libjack gave on a process thread, not logged.
    static let droppedOnRealtimeThread = Atomic<Int>(0)

    /// [control-thread] Routes libjack's error and info messages to `logger`; the first
    /// call does it, later calls do nothing.
    static func install() {
        _ = installed
    }

    private static let installed: Void = {
        // Made here, on the control thread: a process thread must find them made.
        _ = realtimeThreads.contains(0)
        _ = droppedOnRealtimeThread.load(ordering: .relaxed)
        jack_set_error_function(sluiceJackLibraryMessage)
        jack_set_info_function(sluiceJackLibraryMessage)
    }()

    /// [control-thread] Logs how many messages came on a process thread since the last call.
    static func reportDropped() {
        let dropped = droppedOnRealtimeThread.exchange(0, ordering: .relaxed)
        if dropped > 0 {
            logger.debug("\(dropped) message\(dropped == 1 ? "" : "s") came on the JACK process thread and \(dropped == 1 ? "was" : "were") not shown (nothing is written from that thread)")
        }
    }

    /// A fixed table of thread ids, read without locks (a message handler on a JACK process
    /// thread looks itself up here and must not wait).
    final class ThreadTable: @unchecked Sendable {
        static let capacity = 16
        // SAFETY: allocated once and never freed (the table lives as long as the process); each
        // slot is an atomic, 0 when free.
        private let slots: UnsafeMutablePointer<Atomic<UInt>>

        init() {
            slots = .allocate(capacity: Self.capacity)
            for index in 0..<Self.capacity { (slots + index).initialize(to: Atomic<UInt>(0)) }
        }

        /// [control-thread] Adds a thread; with the table full it is not tracked (its messages
        /// would then be logged: libjack's own choice of thread, not Sluice's).
        func insert(_ thread: UInt) {
            guard thread != 0 else { return }
            for index in 0..<Self.capacity where slots[index].compareExchange(expected: 0, desired: thread, ordering: .relaxed).exchanged {
                return
            }
        }

        /// [control-thread]
        func remove(_ thread: UInt) {
            guard thread != 0 else { return }
            for index in 0..<Self.capacity where slots[index].compareExchange(expected: thread, desired: 0, ordering: .relaxed).exchanged {
                return
            }
        }

        /// [any-thread] No allocation, no lock.
        func contains(_ thread: UInt) -> Bool {
            for index in 0..<Self.capacity where slots[index].load(ordering: .relaxed) == thread { return true }
            return false
        }
    }
}

/// [any-thread] libjack's error and info handler: on a JACK process thread only counts the
/// message; elsewhere logs it at debug level.
func sluiceJackLibraryMessage(_ message: UnsafePointer<CChar>?) {
    if JackLibraryMessages.realtimeThreads.contains(UInt(pthread_self())) {
        JackLibraryMessages.droppedOnRealtimeThread.add(1, ordering: .relaxed)
        return
    }
    guard let message else { return }
    let text = String(cString: message)
    JackLibraryMessages.logger.debug("\(text.hasSuffix("\n") ? String(text.dropLast()) : text)")
}
