import Foundation
import Glibc
import Synchronization

/// The JSON-lines control socket: a Unix domain stream socket, mode 0600, one request a line
/// in and one reply a line out, for any number of clients at once (each on a thread of its
/// own, up to `maximumClients`). A malformed or oversized line gets an error reply and the
/// connection goes on; a client that disconnects mid-line loses only that line.
///
/// Threading: [control-thread]; `handle` is called from the clients' threads.
public final class ControlSocketServer: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `listener` is set in init and closed once in `stop`;
    // client descriptors live in `clients` under its mutex.

    public let path: String
    public static let maximumClients = 64
    private let listener: Int32
    private let handle: @Sendable (ArraySlice<UInt8>, ControlConnection) -> String
    private let clients = Mutex<Set<Int32>>([])
    private let stopped = Atomic<Bool>(false)
    private var acceptThread: Thread?
    /// The socket file made, removed at the end only if it is still the one at `path`.
    private let identity: (device: UInt, inode: UInt)?

    /// The default socket: `$XDG_RUNTIME_DIR/sluice/<graph>.sock` (`/tmp/sluice-<uid>/` when
    /// the variable is unset, as on a machine without a login session).
    ///
    /// - Throws: `ControlError` when the graph's name cannot be a file name (`../x`).
    public static func defaultPath(graph: String) throws(ControlError) -> String {
        try SocketPlace.checkName(graph)
        return "\(defaultFolder)/\(graph).sock"
    }

    /// The folder of the default sockets.
    public static var defaultFolder: String {
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        return runtime.map { "\($0)/sluice" } ?? "/tmp/sluice-\(geteuid())"
    }

    /// Binds and listens at `path` (its folder made 0700 if missing). A stale socket left by a
    /// process that died is replaced; one a live server answers on is refused.
    ///
    /// - Parameter handle: turns a request line (without its newline) into a reply line; the
    ///   connection it came on can be kept to push events to (`watch`).
    public init(
        path: String, idleLimit: Double = ControlSocketServer.defaultIdleLimit,
        handle: @escaping @Sendable (ArraySlice<UInt8>, ControlConnection) -> String
    ) throws(ControlError) {
        self.path = path
        self.idleLimit = idleLimit
        self.handle = handle
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ControlError(code: "socket-path", message: "the control socket path '\(path)' is too long for a Unix socket (107 bytes)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: path.utf8) }

        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, access(folder, F_OK) != 0, mkdir(folder, 0o700) != 0, errno != EEXIST {
            throw ControlError(code: "socket-path", message: "cannot make the folder '\(folder)' for the control socket: \(String(cString: strerror(errno)))")
        }
        try SocketPlace.checkFolder(folder.isEmpty ? "." : folder)
        if Self.answers(address) {
            throw ControlError(
                code: "socket-in-use",
                message: "a graph is already served at '\(path)'; stop it (`sluice ctl --socket \(path) quit`) or give --control another path")
        }
        try SocketPlace.removeStaleSocket(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw ControlError(code: "socket", message: "cannot make the control socket: \(String(cString: strerror(errno)))")
        }
        // Only this user may connect: the socket is made 0600 before anyone can reach it.
        let mask = umask(0o177)
        // SAFETY: `address` is a complete sockaddr_un, passed with its own size.
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(mask)
        guard bound == 0, chmod(path, 0o600) == 0, listen(descriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw ControlError(code: "socket", message: "cannot listen on '\(path)': \(reason)")
        }
        listener = descriptor
        identity = SocketPlace.identity(of: path)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "sluice-control"
        acceptThread = thread
        thread.start()
    }

    deinit { stop() }

    /// Stops accepting, ends every client connection and removes the socket file.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        clients.withLock { for client in $0 { shutdown(client, Int32(SHUT_RDWR)) } }
        if let identity, let now = SocketPlace.identity(of: path), now == identity { unlink(path) }
    }

    private static func answers(_ address: sockaddr_un) -> Bool {
        var address = address
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        // SAFETY: as in init.
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let admitted = clients.withLock { clients -> Bool in
                guard clients.count < Self.maximumClients else { return false }
                clients.insert(client)
                return true
            }
            guard admitted else {
                let refusal = ControlJSON.reply(
                    .failure(ControlError(code: "too-many-clients", message: "\(Self.maximumClients) clients are connected; try again later")),
                    command: nil, id: nil) + "\n"
                _ = refusal.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                close(client)
                continue
            }
            let thread = Thread { [self] in serve(client) }
            thread.name = "sluice-control-client"
            thread.start()
        }
    }

    /// How long a connection that does not `watch` may stay without sending a request before
    /// it is closed, so idle clients cannot hold the `maximumClients` places (30 s unless
    /// `init` is given another).
    public let idleLimit: Double
    public static let defaultIdleLimit: Double = 30

    /// Reads lines from one client until it hangs up, answering each, and writes what is queued
    /// for it as its socket takes it. While the client has more than
    /// `ControlConnection.queueLimit` bytes unread, its requests are not read (it is held back,
    /// not the server); events beyond that are dropped and counted.
    private func serve(_ client: Int32) {
        let connection = ControlConnection(descriptor: client)
        defer {
            clients.withLock { _ = $0.remove(client) }
            connection.close()
        }
        var pending: [UInt8] = []
        var discarding = false  // inside a line that was too long
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var lastRequest = ControlConnection.monotonicNow()
        while !stopped.load(ordering: .relaxed) && !connection.isClosed {
            let backlog = connection.backlog
            var wanted = Int16(backlog > 0 ? POLLOUT : 0)
            if backlog < ControlConnection.queueLimit { wanted |= Int16(POLLIN) }
            var poller = pollfd(fd: client, events: wanted, revents: 0)
            // A timeout, so that lines queued by other threads while the socket was full are
            // written, and idle clients are noticed.
            let ready = poll(&poller, 1, 200)
            if ready < 0 && errno != EINTR { return }
            if poller.revents & Int16(POLLOUT) != 0 { connection.flush() }
            if poller.revents & Int16(POLLERR | POLLNVAL) != 0 { return }
            guard poller.revents & Int16(POLLIN | POLLHUP) != 0 else {
                if !connection.isWatching && ControlConnection.monotonicNow() - lastRequest > idleLimit { return }
                continue
            }
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard count > 0 else { return }
            lastRequest = ControlConnection.monotonicNow()
            var start = 0
            for index in 0..<count where buffer[index] == UInt8(ascii: "\n") {
                if discarding {
                    discarding = false
                } else if pending.count + (index - start) > ControlJSON.maximumLineBytes {
                    refuseLongLine(on: connection)
                } else {
                    pending.append(contentsOf: buffer[start..<index])
                    if !answer(pending, on: connection) { return }
                }
                pending.removeAll(keepingCapacity: true)
                start = index + 1
            }
            guard !discarding else { continue }
            if pending.count + (count - start) > ControlJSON.maximumLineBytes {
                pending.removeAll()
                discarding = true
                refuseLongLine(on: connection)
            } else {
                pending.append(contentsOf: buffer[start..<count])
            }
        }
    }

    private func refuseLongLine(on connection: ControlConnection) {
        let error = ControlError(
            code: "line-too-long", message: "a request line is at most \(ControlJSON.maximumLineBytes) bytes; this one was skipped")
        connection.send(ControlJSON.reply(.failure(error), command: nil, id: nil))
    }

    /// Answers one line (blank lines are skipped). False when the client has gone.
    private func answer(_ line: [UInt8], on connection: ControlConnection) -> Bool {
        var slice = line[...]
        if slice.last == UInt8(ascii: "\r") { slice = slice.dropLast() }
        if slice.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return true }
        return connection.send(handle(slice, connection))
    }
}

/// One client of the control socket: replies go out on it, and events when it watches.
///
/// Every line is queued whole and written without waiting, by whichever thread queued it and
/// then by the client's own thread as the socket drains; no lock is held while writing, and
/// nothing ever waits for a client to read. A client that stops reading holds back only
/// itself: its requests are not read while more than `queueLimit` bytes wait for it, and the
/// events beyond that are dropped, counted in the `dropped` field of the next event it gets.
///
/// Threading: [thread-safe].
public final class ControlConnection: Sendable {
    /// The most bytes a client may have waiting to be written.
    public static let queueLimit = 256 * 1024

    private struct State {
        var open = true
        /// Lines accepted and not yet written, oldest first.
        var queue: [UInt8] = []
        /// A thread is writing the front of `queue` (outside the lock).
        var writing = false
        /// `close()` came while a thread was writing: that thread closes the descriptor.
        var closeWhenWritten = false
        var watching = false
        var droppedEvents = 0
    }

    private let descriptor: Int32
    private let state = Mutex(State())

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Queues `line` and a newline (a reply: never dropped), and writes what the socket takes
    /// now. False when the client has gone.
    @discardableResult
    public func send(_ line: String) -> Bool {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        let queued = state.withLock { state -> Bool in
            guard state.open else { return false }
            state.queue += bytes
            return true
        }
        if queued { flush() }
        return queued
    }

    /// Queues an event (a JSON object, with `dropped` added when events were lost before it)
    /// unless `queueLimit` bytes already wait for this client: then it is dropped and counted.
    /// False when it was dropped or the client has gone.
    @discardableResult
    public func send(event: EncodedEvent) -> Bool {
        let dropped = state.withLock { $0.droppedEvents }
        var bytes = Array(event.json(adding: dropped > 0 ? ["dropped": dropped] : [:]).utf8)
        bytes.append(UInt8(ascii: "\n"))
        let queued = state.withLock { state -> Bool in
            guard state.open else { return false }
            guard state.queue.count + bytes.count <= Self.queueLimit else {
                state.droppedEvents += 1
                return false
            }
            state.queue += bytes
            state.droppedEvents = 0
            return true
        }
        if queued { flush() }
        return queued
    }

    /// Writes what is queued, as much as the socket takes without waiting.
    func flush() {
        while true {
            let chunk: [UInt8]? = state.withLock { state in
                guard state.open, !state.writing, !state.queue.isEmpty else { return nil }
                state.writing = true
                return Array(state.queue.prefix(64 * 1024))
            }
            guard let chunk else { return }
            var written = 0
            var failed = false
            while written < chunk.count {
                let count = chunk[written...].withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if count < 0 && errno == EINTR { continue }
                if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
                guard count > 0 else {
                    failed = true
                    break
                }
                written += count
            }
            let again = state.withLock { state -> Bool in
                state.writing = false
                state.queue.removeFirst(written)
                if failed { state.open = false }
                if state.closeWhenWritten || failed {
                    state.closeWhenWritten = false
                    state.queue = []
                    Glibc.close(descriptor)
                    return false
                }
                return written == chunk.count && !state.queue.isEmpty
            }
            if !again { return }
        }
    }

    /// Bytes queued and not yet written.
    var backlog: Int { state.withLock { $0.queue.count } }

    /// Whether the client has hung up (or the server closed it).
    public var isClosed: Bool { state.withLock { !$0.open } }

    /// Marks the connection as one that `watch`es (it is then never closed as idle).
    func startWatching() { state.withLock { $0.watching = true } }

    var isWatching: Bool { state.withLock { $0.watching } }

    func close() {
        state.withLock { state in
            guard state.open || state.writing else { return }
            let wasOpen = state.open
            state.open = false
            if state.writing {
                // The writing thread closes it once its send returns: closing now could hand
                // the number to another connection under its feet.
                state.closeWhenWritten = true
                shutdown(descriptor, Int32(SHUT_RDWR))
            } else if wasOpen {
                state.queue = []
                Glibc.close(descriptor)
            }
        }
    }

    static func monotonicNow() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
    }
}
