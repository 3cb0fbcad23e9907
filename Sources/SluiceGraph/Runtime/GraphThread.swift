import Glibc
import Synchronization

/// A joinable POSIX thread running a closure: the graph's worker and source threads, and the
/// clock threads of sinks with no device of their own.
public final class GraphThread: @unchecked Sendable {
    // SAFETY: written once by `init` before any other thread sees it, read by `join`.
    private var handle = pthread_t()
    private var joined = false
    private let returned = SharedFlag()

    /// Whether the thread's body has returned.
    public var hasReturned: Bool { returned.isSet }

    /// Starts `body` on a new thread; `name` says what it is for, in debuggers.
    public init(name: String, _ body: @escaping @Sendable () -> Void) {
        let returned = self.returned
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: {
            body()
            returned.set()
        }))
        let result = pthread_create(&handle, nil, { raw in
            // SAFETY: `raw` is the retained ThreadBody passed below; taken back exactly once.
            let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
            body.body()
            return nil
        }, box.toOpaque())
        precondition(result == 0, "pthread_create failed: \(result)")
    }

    /// Waits for the thread to return. Safe to call more than once.
    public func join() {
        guard !joined else { return }
        joined = true
        pthread_join(handle, nil)
    }
}

/// A flag shared between a thread and its handle.
final class SharedFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

private final class ThreadBody {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}

/// Sleeps for `seconds` of wall-clock time.
public func sleep(seconds: Double) {
    guard seconds > 0 else { return }
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}
