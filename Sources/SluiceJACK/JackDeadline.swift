import CJack
import Glibc
import Synchronization

/// libjack calls that wait on the server, run with a deadline.
///
/// `jack_client_open` and `jack_client_close` take libjack's process-wide lock and then wait on
/// the server's socket. A server that stops answering (stopped, wedged, or killed half-way
/// through a request), or another thread of the process blocked inside libjack with that lock
/// held, leaves them waiting for ever. Each call here runs on a thread of its own; the caller
/// waits at most its deadline and then gives up with an error that names the server and the
/// call. The abandoned thread stays blocked (nothing can interrupt libjack), and if its call
/// ever returns a client, that client is closed there.
///
/// Threading: [control-thread]; each call starts one short-lived thread.
public enum JackDeadline {
    /// How long opening a client may take. jackd answers in milliseconds; a loaded machine or
    /// PipeWire's JACK layer, starting its graph, in a second or two.
    public static let openTimeout: Duration = .seconds(10)
    /// How long closing a client may take (it deactivates the client first, which waits for
    /// the server to finish a cycle).
    public static let closeTimeout: Duration = .seconds(5)

    /// Opens a client named `name` on `server` (nil: JACK's default), or throws when the
    /// server refuses or does not answer within `timeout`. The caller owns the client; close
    /// it with ``close(_:server:within:)``.
    public static func openClient(
        named name: String, options: jack_options_t, server: String?, within timeout: Duration = openTimeout
    ) throws(JackError) -> OpaquePointer {
        let outcome = run(within: timeout) { () -> OpenOutcome in
            var status = jack_status_t(rawValue: 0)
            let handle = sluice_jack_client_open(name, options, &status, server)
            return OpenOutcome(handle: handle, status: status.rawValue)
        } abandoned: { late in
            // SAFETY: nobody else holds the client the abandoned call opened.
            if let handle = late.handle { jack_client_close(handle) }
        }
        guard let outcome else {
            throw JackError(
                "JACK server '\(serverName(server))' did not answer within \(seconds(timeout)) while opening client '\(name)'; "
                    + "it may be stopped or wedged: restart it (or check `jack_lsp -s \(serverName(server))`)")
        }
        guard let handle = outcome.handle else {
            if outcome.status & JackServerFailed.rawValue != 0 || outcome.status & JackServerError.rawValue != 0 {
                throw .noServer(server)
            }
            throw JackError("JACK refused a client named '\(name)' (status 0x\(String(outcome.status, radix: 16)))")
        }
        return handle
    }

    /// Closes `client`, waiting at most `timeout`. False when the server did not answer in time:
    /// the client is then left to the abandoned thread, and the process goes on.
    @discardableResult
    public static func close(_ client: OpaquePointer, server: String?, within timeout: Duration = closeTimeout) -> Bool {
        let handle = JackClientHandle(client)
        let closed = run(within: timeout) { () -> Bool in
            // SAFETY: the caller hands the client over; nothing uses it after this call.
            jack_client_close(handle.pointer)
            return true
        } abandoned: { _ in }
        if closed == nil {
            JackLibraryMessages.sluiceLogger.warning(
                "JACK server '\(serverName(server))' did not finish closing a client within \(seconds(timeout)); going on without it")
            return false
        }
        return true
    }

    /// Deactivates `client`, waiting at most `timeout`. False when the call did not return in
    /// time (whatever it returns, a server gone included, counts as an answer): it is left to
    /// the abandoned thread, and a wedged server may still call the client's process callback.
    public static func deactivate(_ client: OpaquePointer, within timeout: Duration = closeTimeout) -> Bool {
        let handle = JackClientHandle(client)
        return run(within: timeout) { () -> Bool in
            // SAFETY: the caller keeps the client open until this returns, or uses it no more.
            _ = jack_deactivate(handle.pointer)
            return true
        } abandoned: { _ in } != nil
    }

    /// Runs `body` on a new thread and waits for it at most `timeout`: its result, or nil when
    /// the time ran out. `abandoned` gets the result of a call that finishes after that.
    public static func run<Value: Sendable>(
        within timeout: Duration, _ body: @escaping @Sendable () -> Value,
        abandoned: @escaping @Sendable (Value) -> Void
    ) -> Value? {
        let call = BoundedCall(body: body, abandoned: abandoned)
        guard call.start() else {
            // No thread to spare: run it here, without a deadline.
            return body()
        }
        return call.wait(timeout)
    }

    static func serverName(_ server: String?) -> String {
        server ?? ProcessInfoLite.environment("JACK_DEFAULT_SERVER") ?? "default"
    }

    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        return attoseconds == 0 ? "\(whole) s" : "\(Double(whole) + Double(attoseconds) / 1e18) s"
    }
}

/// What `jack_client_open` gave back.
private struct OpenOutcome: @unchecked Sendable {
    // SAFETY: a client handle passed from the opening thread to its one owner.
    var handle: OpaquePointer?
    var status: UInt32
}

/// One call on a thread of its own, with a caller that may stop waiting.
private final class BoundedCall<Value: Sendable>: Sendable {
    private enum State {
        case running
        case finished(Value)
        case abandoned
    }

    private let body: @Sendable () -> Value
    private let abandoned: @Sendable (Value) -> Void
    private let state = Mutex(State.running)
    // SAFETY: initialized in init, destroyed in deinit; sem_* are thread-safe.
    private nonisolated(unsafe) let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    init(body: @escaping @Sendable () -> Value, abandoned: @escaping @Sendable (Value) -> Void) {
        self.body = body
        self.abandoned = abandoned
        sem_init(done, 0, 0)
    }

    deinit {
        sem_destroy(done)
        done.deallocate()
    }

    /// Starts the thread; false when none could be started.
    func start() -> Bool {
        startDetachedThread { self.execute() }
    }

    private func execute() {
        let value = body()
        let keep = state.withLock { state -> Bool in
            if case .abandoned = state { return false }
            state = .finished(value)
            return true
        }
        if keep { sem_post(done) } else { abandoned(value) }
    }

    func wait(_ timeout: Duration) -> Value? {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let (whole, attoseconds) = timeout.components
        deadline.tv_sec += Int(whole)
        deadline.tv_nsec += Int(attoseconds / 1_000_000_000)
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        while sem_timedwait(done, &deadline) != 0 {
            if errno == EINTR { continue }
            break
        }
        return state.withLock { state -> Value? in
            if case .finished(let value) = state { return value }
            state = .abandoned
            return nil
        }
    }
}

/// What a detached thread runs.
private final class ThreadWork {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Starts a detached thread that runs `work`; false when none could be started.
private func startDetachedThread(_ work: @escaping @Sendable () -> Void) -> Bool {
    var thread = pthread_t()
    // SAFETY: the thread takes over the retained reference and releases it when it ends.
    let context = Unmanaged.passRetained(ThreadWork(work)).toOpaque()
    let result = pthread_create(&thread, nil, { context in
        Unmanaged<ThreadWork>.fromOpaque(context!).takeRetainedValue().run()
        return nil
    }, context)
    guard result == 0 else {
        Unmanaged<ThreadWork>.fromOpaque(context).release()
        return false
    }
    pthread_detach(thread)
    return true
}
