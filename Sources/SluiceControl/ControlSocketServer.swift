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
    public init(path: String, handle: @escaping @Sendable (ArraySlice<UInt8>, ControlConnection) -> String) throws(ControlError) {
        self.path = path
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

    /// Reads lines from one client until it hangs up; answers each.
    private func serve(_ client: Int32) {
        let connection = ControlConnection(descriptor: client)
        defer {
            clients.withLock { _ = $0.remove(client) }
            connection.close()
        }
        var pending: [UInt8] = []
        var discarding = false  // inside a line that was too long
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            var start = 0
            for index in 0..<count where buffer[index] == UInt8(ascii: "\n") {
                if discarding {
                    discarding = false
                } else {
                    pending.append(contentsOf: buffer[start..<index])
                    if !answer(pending, on: connection) { return }
                }
                pending.removeAll(keepingCapacity: true)
                start = index + 1
            }
            if !discarding { pending.append(contentsOf: buffer[start..<count]) }
            if pending.count > ControlJSON.maximumLineBytes {
                pending.removeAll()
                discarding = true
                let error = ControlError(
                    code: "line-too-long", message: "a request line is at most \(ControlJSON.maximumLineBytes) bytes; this one was skipped")
                if !connection.send(ControlJSON.reply(.failure(error), command: nil, id: nil)) { return }
            }
        }
    }

    /// Answers one line (blank lines are skipped). False when the client has gone.
    private func answer(_ line: [UInt8], on connection: ControlConnection) -> Bool {
        var slice = line[...]
        if slice.last == UInt8(ascii: "\r") { slice = slice.dropLast() }
        if slice.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return true }
        return connection.send(handle(slice, connection))
    }
}

/// One client of the control socket: replies go out on it, and events when it watches. A
/// line is written whole under a lock, so replies and events never interleave.
public final class ControlConnection: Sendable {
    private let descriptor: Int32
    /// Whether the connection is still open; held while a line is written.
    private let open = Mutex<Bool>(true)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Writes `line` and a newline; waits while the socket is full unless `dropIfFull`, when a
    /// full socket (a client not reading) drops the line instead. False when the client has
    /// gone or the line was dropped.
    @discardableResult
    public func send(_ line: String, dropIfFull: Bool = false) -> Bool {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return open.withLock { open -> Bool in
            guard open else { return false }
            var sent = 0
            while sent < bytes.count {
                let flags = Int32(MSG_NOSIGNAL) | (dropIfFull && sent == 0 ? Int32(MSG_DONTWAIT) : 0)
                let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, flags) }
                if count < 0 && errno == EINTR { continue }
                if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && sent == 0 { return false }
                guard count > 0 else { return false }
                sent += count
            }
            return true
        }
    }

    /// Whether the client has hung up (or the server closed it).
    public var isClosed: Bool { open.withLock { !$0 } }

    func close() {
        open.withLock { open in
            guard open else { return }
            open = false
            Glibc.close(descriptor)
        }
    }
}
