import Foundation
import Glibc
import SluicePluginKit
import Synchronization

/// One Piper voice loaded in a process of its own (`sluice-piper-engine`, the Python program
/// in engine/, run by the Python that has `piper-tts`), shared by every node of this host
/// that speaks with the same model. The engine answers requests one after another, in the
/// order they came; each node keeps at most one request in flight, so voices sharing an
/// engine take turns sentence by sentence.
///
/// Threads: `submit` and `abort` come from any thread and only queue a write on `writes`
/// (a serial queue: no lock is held across I/O); the reader thread parses the engine's
/// messages and hands each to its request's handler, outside any lock.
final class PiperEngine: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `socket`, `pid` and `sampleRate` are written in `init` and
    // read-only afterwards; what the reader thread shares is in `shared`, Mutex-protected; the
    // socket is written only on `writes`, and read only by the reader thread (its duplicate).

    /// What the engine says about a request.
    enum Event {
        case word(start: Int, length: Int, sample: Int)
        case audio([UInt8])
        /// The request is over: `nil` when it completed or was aborted, else why it failed.
        case done(PluginError?)
    }

    typealias Handler = @Sendable (Event) -> Void

    struct Key: Hashable {
        var python: String
        var voice: String?
        var model: String?
    }

    let key: Key
    private(set) var sampleRate = 0
    private let socket: Int32
    private let pid: pid_t
    private let writes = DispatchQueue(label: "sluice.piper.engine.writes")
    private let shared = Shared()

    /// What the engine and its reader thread share.
    private final class Shared: Sendable {
        let handlers = Mutex<[Int: Handler]>([:])
        /// Set when the engine's output ended: every later request fails with it.
        let ended = Mutex<PluginError?>(nil)
    }

    /// What `ready` says that the plugin uses.
    private struct Ready: Sendable {
        var sampleRate: Int
    }

    /// The largest message the engine may send: a sentence's audio is far smaller.
    static let messageLimit = 64 << 20

    private static let nextRequest = Atomic<Int>(1)

    /// Starts the engine and waits (at most `timeout` seconds) until its voice is loaded.
    init(key: Key, timeout: Double) throws(PluginError) {
        self.key = key
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw PluginError(code: "engine-start-failed", message: "socketpair: \(String(cString: strerror(errno)))")
        }
        socket = pair[0]
        var arguments = [key.python, "-c", PiperEngine.program]
        if let model = key.model { arguments += ["--model", model] } else { arguments += ["--voice", key.voice ?? ""] }
        do throws(PluginError) {
            pid = try Self.spawn(arguments, stdio: pair[1])
        } catch {
            close(pair[0])
            close(pair[1])
            throw error
        }
        close(pair[1])

        // The first message is `ready` or `failed`; the reader thread hands it over here.
        let first = DispatchSemaphore(value: 0)
        let firstMessage = Mutex<Result<Ready, PluginError>?>(nil)
        startReader { result in
            firstMessage.withLock { $0 = result }
            first.signal()
        }
        if first.wait(timeout: .now() + timeout) == .timedOut {
            kill(pid, SIGKILL)
            shutdown(socket, Int32(SHUT_RDWR))
            throw PluginError(code: "engine-start-failed", message: "the Piper engine did not load its voice within \(timeout) s (parameter start-timeout)")
        }
        let ready: Ready
        switch firstMessage.withLock({ $0 }) {
        case .success(let message)?: ready = message
        case .failure(let error)?: throw error
        case nil: throw PluginError(code: "engine-start-failed", message: "the Piper engine said nothing")
        }
        sampleRate = ready.sampleRate
    }

    deinit {
        // The engine ends when its input closes; the reader thread reaps it. The socket is
        // closed only after the last queued write, so no write reaches a reused descriptor
        // (the reader thread reads its own duplicate).
        shutdown(socket, Int32(SHUT_WR))
        writes.sync {}
        close(socket)
    }

    // MARK: Requests

    /// Queues `request` (the engine's `speak` fields) and returns its id; `handler` gets its
    /// events on the reader thread, ending with `.done`.
    func submit(_ request: [String: Any], handler: @escaping Handler) -> Int {
        let id = Self.nextRequest.add(1, ordering: .relaxed).oldValue
        if let failure = shared.ended.withLock({ $0 }) {
            handler(.done(failure))
            return id
        }
        shared.handlers.withLock { $0[id] = handler }
        var message = request
        message["op"] = "speak"
        message["id"] = id
        send(message)
        // The engine may have ended between the check and the registration.
        if let failure = shared.ended.withLock({ $0 }), let handler = shared.handlers.withLock({ $0.removeValue(forKey: id) }) {
            handler(.done(failure))
        }
        return id
    }

    /// Whether the engine's output ended (it exited or broke the protocol).
    var hasEnded: Bool { shared.ended.withLock { $0 != nil } }

    /// Asks the engine to stop request `id` at its next sentence; it still ends with `.done`.
    func abort(_ id: Int) {
        send(["op": "abort", "id": id])
    }

    private func send(_ message: [String: Any]) {
        // Only strings, numbers and booleans are sent.
        guard let json = try? JSONSerialization.data(withJSONObject: message, options: [.withoutEscapingSlashes]) else { return }
        let line = json + [0x0A]
        let socket = socket
        writes.async {
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    // SAFETY: `bytes` is the whole line; `offset` stays below its count.
                    let sent = Glibc.send(socket, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    if sent < 0 && errno == EINTR { continue }
                    // A broken engine is found by the reader thread, which fails every request.
                    if sent <= 0 { return }
                    offset += sent
                }
            }
        }
    }

    // MARK: The reader thread

    private func startReader(first: @escaping @Sendable (Result<Ready, PluginError>) -> Void) {
        let context = Unmanaged.passRetained(ReaderContext(engine: self, first: first)).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            // SAFETY: balances the passRetained above; the context lives until the loop ends.
            let context = Unmanaged<ReaderContext>.fromOpaque(context!).takeRetainedValue()
            context.run()
            return nil
        }, context)
        if started == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<ReaderContext>.fromOpaque(context).release()
            first(.failure(PluginError(code: "thread", message: "could not start the Piper engine's reader thread (error \(started))")))
        }
    }

    /// The reader thread's state. It does not hold the engine, which goes when its last node
    /// does; it keeps the socket, the process id and what it shares with the engine.
    private final class ReaderContext: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): used by the reader thread only after creation.
        let socket: Int32
        let pid: pid_t
        let shared: Shared
        var first: (@Sendable (Result<Ready, PluginError>) -> Void)?
        var buffer: [UInt8] = []

        init(engine: PiperEngine, first: @escaping @Sendable (Result<Ready, PluginError>) -> Void) {
            // Its own descriptor of the socket: the engine closes its own when it goes.
            socket = fcntl(engine.socket, F_DUPFD_CLOEXEC, 0)
            pid = engine.pid
            shared = engine.shared
            self.first = first
        }

        func run() {
            let failure = socket >= 0 ? readMessages() : PluginError(code: "engine-start-failed", message: "dup: \(String(cString: strerror(errno)))")
            // An engine that broke the protocol is not waited for.
            if failure != nil { kill(pid, SIGKILL) }
            let status = reap()
            var error = failure ?? PluginError(code: "engine-exited", message: "the Piper engine ended (\(status))")
            if first != nil, failure == nil { error.code = "engine-start-failed" }
            first?(.failure(error))
            first = nil
            shared.ended.withLock { $0 = error }
            for handler in shared.handlers.withLock({ state in defer { state.removeAll() }; return Array(state.values) }) {
                handler(.done(error))
            }
            if socket >= 0 { close(socket) }
        }

        /// Reads until the engine's output ends; the protocol failure that ended it, if any.
        private func readMessages() -> PluginError? {
            while true {
                guard let line = readLine() else { return nil }
                guard let object = try? JSONSerialization.jsonObject(with: Data(line)), let message = object as? [String: Any],
                      let type = message["type"] as? String
                else {
                    return PluginError(code: "engine-protocol", message: "the Piper engine sent a line that is not a message")
                }
                if let first {
                    // `first` stays set until it is answered: a failure here reaches it from `run`.
                    switch type {
                    case "ready":
                        guard let rate = message["sample-rate"] as? Int, (1_000...384_000).contains(rate) else {
                            return PluginError(code: "engine-protocol", message: "the Piper engine named no usable sample rate")
                        }
                        self.first = nil
                        first(.success(Ready(sampleRate: rate)))
                    case "failed":
                        self.first = nil
                        // Only a code of the engine's own kind is passed on, never arbitrary text.
                        let code = (message["code"] as? String).flatMap { code in
                            code.count <= 32 && !code.isEmpty && code.utf8.allSatisfy({ (0x61...0x7A).contains($0) || $0 == 0x2D }) ? code : nil
                        }
                        first(.failure(PluginError(
                            code: code ?? "engine-start-failed",
                            message: String((message["message"] as? String ?? "the Piper engine could not start").prefix(2_000)))))
                    default: return PluginError(code: "engine-protocol", message: "the Piper engine sent '\(type)' before it was ready")
                    }
                    continue
                }
                guard let id = message["id"] as? Int else {
                    return PluginError(code: "engine-protocol", message: "the Piper engine sent '\(type)' without a request id")
                }
                let event: Event
                switch type {
                case "audio":
                    guard let size = message["size"] as? Int, (0...PiperEngine.messageLimit).contains(size), size % 2 == 0,
                          let bytes = read(count: size)
                    else {
                        return PluginError(code: "engine-protocol", message: "the Piper engine sent audio of no usable size")
                    }
                    event = .audio(bytes)
                case "word":
                    guard let start = message["start"] as? Int, let length = message["length"] as? Int, let sample = message["sample"] as? Int,
                          start >= 0, length > 0, sample >= 0, start <= Int(Int32.max), length <= Int(Int32.max), sample <= PiperEngine.messageLimit * 64
                    else {
                        return PluginError(code: "engine-protocol", message: "the Piper engine sent a word out of range")
                    }
                    event = .word(start: start, length: length, sample: sample)
                case "done":
                    switch message["outcome"] as? String {
                    case "ok", "aborted": event = .done(nil)
                    default:
                        event = .done(PluginError(code: "synthesis-failed", message: "Piper: " + String((message["message"] as? String ?? "synthesis failed").prefix(2_000))))
                    }
                default:
                    return PluginError(code: "engine-protocol", message: "the Piper engine sent an unknown message '\(type)'")
                }
                let handler = shared.handlers.withLock { handlers in
                    if case .done = event { return handlers.removeValue(forKey: id) }
                    return handlers[id]
                }
                handler?(event)
            }
        }

        /// The next line (without its newline), nil at the end of the output.
        private func readLine() -> [UInt8]? {
            var searched = 0
            while true {
                if let newline = buffer[searched...].firstIndex(of: 0x0A) {
                    let line = Array(buffer[..<newline])
                    buffer.removeFirst(newline + 1)
                    return line
                }
                searched = buffer.count
                // A line longer than any message the engine writes is a broken engine.
                guard buffer.count <= 1 << 20, fill() else { return nil }
            }
        }

        /// Exactly `count` bytes, nil when the output ends first.
        private func read(count: Int) -> [UInt8]? {
            while buffer.count < count {
                guard fill() else { return nil }
            }
            let bytes = Array(buffer[..<count])
            buffer.removeFirst(count)
            return bytes
        }

        private func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                // SAFETY: `chunk` has `chunk.count` bytes of room.
                let received = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                if received < 0 && errno == EINTR { continue }
                guard received > 0 else { return false }
                buffer.append(contentsOf: chunk[..<received])
                return true
            }
        }

        /// Waits for the engine to exit (killing it after two seconds) and says how it ended.
        private func reap() -> String {
            shutdown(socket, Int32(SHUT_RDWR))
            var status: Int32 = 0
            for attempt in 0..<200 {
                if waitpid(pid, &status, WNOHANG) == pid { return Self.describe(status) }
                if attempt == 199 { kill(pid, SIGKILL) }
                usleep(10_000)
            }
            _ = waitpid(pid, &status, 0)
            return Self.describe(status)
        }

        private static func describe(_ status: Int32) -> String {
            let signal = status & 0x7f
            if signal == 0 { return "exit status \((status >> 8) & 0xff)" }
            return "signal \(signal)"
        }
    }

    // MARK: The process

    private static func spawn(_ arguments: [String], stdio: Int32) throws(PluginError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copies: the engine keeps only stdin, stdout, stderr.
        posix_spawn_file_actions_adddup2(&actions, stdio, 0)
        posix_spawn_file_actions_adddup2(&actions, stdio, 1)
        _ = addCloseFrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        var defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // A process group of its own: a terminal's Ctrl-C goes to the host, which decides when
        // speech stops; the engine ends when the host closes its socket.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        var cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, &cArguments, environ)
        guard result == 0 else {
            throw PluginError(
                code: "piper-missing",
                message: "cannot run \(arguments[0]) (\(String(cString: strerror(result)))): set SLUICE_PIPER_PYTHON to a Python with piper-tts, or run scripts/setup --voices")
        }
        return pid
    }

    /// The engine's program, compiled into the plugin so the plugin is one file.
    static let program = String(decoding: PackageResources.sluice_piper_engine_py, as: UTF8.self)
}

// SAFETY: glibc's posix_spawn_file_actions_addclosefrom_np (2.34 and later), which Swift's Glibc
// module does not import (it is behind _GNU_SOURCE); the signature is glibc's own.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

/// The engines of this host process, one per Python and voice, alive while a node uses them.
enum PiperEngines {
    private enum Entry: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): read and written under `entries`' lock only.
        /// A node is starting it; others wait for the group, outside the lock.
        case starting(DispatchGroup)
        case running(Weak)
    }

    private struct Weak {
        weak var engine: PiperEngine?
    }

    private static let entries = Mutex<[PiperEngine.Key: Entry]>([:])

    /// The running engine for `key`, started (and waited for) when there is none or it ended.
    static func engine(for key: PiperEngine.Key, timeout: Double) throws(PluginError) -> PiperEngine {
        while true {
            let group = DispatchGroup()
            let found: Entry? = entries.withLock { entries in
                switch entries[key] {
                case .starting(let other): return .starting(other)
                case .running(let weak)? where weak.engine.map({ !$0.hasEnded }) ?? false: return .running(weak)
                default:
                    group.enter()
                    entries[key] = .starting(group)
                    return nil
                }
            }
            switch found {
            case .running(let weak)?:
                if let engine = weak.engine { return engine }
            case .starting(let other)?:
                other.wait()
            case nil:
                defer { group.leave() }
                do throws(PluginError) {
                    let engine = try PiperEngine(key: key, timeout: timeout)
                    entries.withLock { $0[key] = .running(Weak(engine: engine)) }
                    return engine
                } catch {
                    entries.withLock { $0[key] = nil }
                    throw error
                }
            }
        }
    }
}
