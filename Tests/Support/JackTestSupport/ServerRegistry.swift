import CJack
import Glibc
import Synchronization

/// Every jackd this process started and has not ended yet.
///
/// Each jackd runs under a supervisor (`/bin/sh`, see `supervisorScript`) that this process
/// spawns. The supervisor starts jackd as its own child, reports its pid, and then waits on a
/// socket whose other end only this process holds. When this process closes that end — in
/// `stop()`, at exit, or because it died in any way, even by SIGKILL — the supervisor stops
/// jackd (SIGTERM, SIGKILL after 8 s), reaps it, and, if jackd did not exit cleanly, frees
/// what it left behind (see `supervisorScript`). Because jackd stays the supervisor's child
/// until then, its pid cannot be reused while this process may still signal it.
///
/// Ownership rule: whoever removes an entry from `running` (under the lock) is the only one
/// who closes its socket and reaps its supervisor.
///
/// Threading: [thread-safe].
enum ServerRegistry {
    struct Entry: Sendable {
        /// jackd.
        let pid: pid_t
        let name: String
        let logPath: String
        let pidFile: String
        /// The `/bin/sh` that started jackd and ends it.
        let supervisorPid: pid_t
        /// This process's end of the supervisor's stdin (a socket pair, close-on-exec).
        let channel: Int32
    }

    private static let running = Mutex<[pid_t: Entry]>([:])

    /// How long `end` waits for a supervisor to stop jackd and clean up.
    static let endTimeout: Duration = .seconds(30)

    /// Arguments: pid file, log, server name, then jackd's command line.
    ///
    /// It reports jackd's pid on its stdin socket, then reads from it. A line "keep-log" asks
    /// it to keep the log; anything else, or end-of-file (this process is gone), not. Then:
    /// SIGTERM, up to 8 s (jackd waits 5 s for a client that died), SIGKILL, reap.
    ///
    /// A jackd that did not exit cleanly (SIGKILL, or the SIGPIPE that jackd 1.9 dies of when
    /// it stops after a client died) still holds its slot in JACK's server registry
    /// (/dev/shm/jack-shm-registry: 8 slots per machine, freed only when a server of the same
    /// name starts) and leaves its socket and semaphores in /dev/shm. So if the slot is still
    /// there, a server of the same name is started and stopped cleanly; then what is left of
    /// the name in /dev/shm is removed. None of this when jackd never ran under the name
    /// (another server had it).
    private static let supervisorScript = #"""
        pidfile=$1; log=$2; name=$3; shift 3
        trap '' INT QUIT HUP PIPE
        alive() {
            [ -r "/proc/$1/stat" ] || return 1
            read -r _pid _comm state _rest < "/proc/$1/stat" 2>/dev/null || return 1
            [ "$state" != Z ]
        }
        halt() {
            kill -TERM "$1" 2>/dev/null
            i=0
            while alive "$1" && [ "$i" -lt 80 ]; do sleep 0.1; i=$((i + 1)); done
            alive "$1" && kill -KILL "$1" 2>/dev/null
            wait "$1" 2>/dev/null
        }
        "$@" </dev/null >"$log" 2>&1 &
        server=$!
        echo "$server $PPID" >"$pidfile"
        echo "$server" >&0
        request=
        read -r request
        halt "$server"
        if ! grep -q "server already active" "$log" 2>/dev/null; then
            if grep -qa "jack-$(id -u):$name:" /dev/shm/jack-shm-registry 2>/dev/null; then
                socket="/dev/shm/jack_${name}_$(id -u)_0"
                rm -f "$socket"
                jackd --no-realtime -n "$name" -d dummy -r 48000 -p 1024 </dev/null >/dev/null 2>&1 &
                helper=$!
                i=0
                while [ ! -e "$socket" ] && alive "$helper" && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
                halt "$helper"
            fi
            for file in /dev/shm/jack_sem."$(id -u)"_"$name"_* /dev/shm/jack_"$name"_*; do
                rm -f "$file"
            done
        fi
        [ "$request" = keep-log ] || rm -f "$log"
        rm -f "$pidfile"
        """#

    private static let exitHandler: Void = {
        atexit(endAllServersAtExit)
    }()

    /// Registers the `atexit` handler that ends every server still running (once).
    static func installExitHandler() {
        _ = exitHandler
    }

    /// `name` made safe for a file name under /tmp.
    static func fileSafe(_ name: String) -> String {
        String(name.map { $0 == "/" ? "_" : $0 })
    }

    /// Starts a supervisor that runs `arguments` (jackd, output to `logPath`), and records it.
    static func spawn(_ arguments: [String], name: String, logPath: String) throws(JackTestError) -> Entry {
        installExitHandler()
        // A socket pair rather than pipe2, which Glibc's Swift module does not export: both
        // ends are close-on-exec from birth, so no other child inherits this process's end.
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw JackTestError("could not make the supervisor's socket: \(String(cString: strerror(errno)))")
        }
        let pidFile = "/tmp/sluice-jackd-\(fileSafe(name)).pid"
        let supervisorPid: pid_t
        do {
            supervisorPid = try ChildProcess.spawn(
                ["/bin/sh", "-c", supervisorScript, "sluice-jackd-supervisor", pidFile, logPath, name] + arguments,
                standardInput: ends[0], output: .devNull)
        } catch {
            close(ends[0])
            close(ends[1])
            throw JackTestError("could not start jackd's supervisor: \(error)")
        }
        close(ends[0])
        guard let line = readLine(from: ends[1], timeout: .seconds(5)), let pid = pid_t(line) else {
            close(ends[1])
            ChildProcess.terminate(supervisorPid, signal: SIGKILL)
            throw JackTestError("jackd's supervisor did not report jackd's pid")
        }
        let entry = Entry(
            pid: pid, name: name, logPath: logPath, pidFile: pidFile,
            supervisorPid: supervisorPid, channel: ends[1])
        running.withLock { $0[pid] = entry }
        return entry
    }

    /// True while jackd runs (it is not reaped before `end`, so its pid stays its own).
    static func isRunning(_ pid: pid_t) -> Bool {
        running.withLock { $0[pid] != nil } && ChildProcess.isAlive(pid)
    }

    /// Whether a client of this process may open on server `pid` without disturbing others:
    /// libjack keeps one server's shared state per process, so only while it is the sole
    /// server this process runs. Runs `probe` under the registry's lock (so no other server
    /// can appear meanwhile) and returns its answer, or nil when probing is not safe.
    static func probeInProcess(_ pid: pid_t, _ probe: () -> Bool) -> Bool? {
        running.withLock { running in
            guard running.count == 1, running[pid] != nil else { return nil }
            return probe()
        }
    }

    /// Kills jackd with SIGKILL and waits (up to 2 s) until it is dead; its supervisor
    /// reaps it and cleans up on `end`.
    static func kill(_ pid: pid_t) {
        guard running.withLock({ $0[pid] != nil }) else { return }
        Glibc.kill(pid, SIGKILL)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(2)
        while ChildProcess.isAlive(pid), clock.now < deadline { usleep(5_000) }
    }

    /// Ends one server through its supervisor and waits for it. Does nothing if it has
    /// already been ended.
    static func end(_ pid: pid_t, keepingLog: Bool = false) {
        guard let entry = running.withLock({ $0.removeValue(forKey: pid) }) else { return }
        release(entry, keepingLog: keepingLog)
        finish(entry, deadline: ContinuousClock.now + endTimeout)
    }

    /// Ends every server still running, all at once.
    static func endAll() {
        let all = running.withLock { running in
            defer { running.removeAll() }
            return Array(running.values)
        }
        for entry in all { release(entry, keepingLog: false) }
        let deadline = ContinuousClock.now + endTimeout
        for entry in all { finish(entry, deadline: deadline) }
    }

    /// Tells the supervisor to stop jackd, and closes this process's end of its socket.
    private static func release(_ entry: Entry, keepingLog: Bool) {
        let request = keepingLog ? "keep-log\n" : "stop\n"
        _ = request.withCString { send(entry.channel, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        close(entry.channel)
    }

    /// Waits for the supervisor; if it overruns `deadline`, kills jackd and it.
    private static func finish(_ entry: Entry, deadline: ContinuousClock.Instant) {
        let remaining = deadline - ContinuousClock.now
        if ChildProcess.waitForExit(entry.supervisorPid, timeout: max(remaining, .zero)) { return }
        Glibc.kill(entry.pid, SIGKILL)
        ChildProcess.terminate(entry.supervisorPid, signal: SIGKILL)
        unlink(entry.pidFile)
    }

    /// Reads one line (without its newline) from `descriptor`, or nil after `timeout`.
    private static func readLine(from descriptor: Int32, timeout: Duration) -> String? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var bytes: [UInt8] = []
        while clock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 50)
            if ready < 0 && errno != EINTR { return nil }
            guard ready > 0 else { continue }
            var byte: UInt8 = 0
            let count = recv(descriptor, &byte, 1, 0)
            if count <= 0 { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }
}

/// JACK's registry of servers, `/dev/shm/jack-shm-registry` (jack2's `jack_shm_header_t`):
/// a 24-byte header, then 8 server entries of 264 bytes, each a `pid_t` and the server's
/// prefix `jack-UID:NAME:` (257 bytes, NUL-padded).
///
/// jackd frees an entry only when its own server exits cleanly or when a server of the same
/// name starts, so a jackd that died (SIGKILL, a crash, a benchmark or a session stopped
/// midway) holds its entry for good, and after 8 such deaths on a machine no server starts
/// ("Too many servers already active"). `reclaimDeadEntries` frees those entries as jackd
/// itself frees a dead one of its own name: by zeroing it.
public enum JackServerSlots {
    static let path = "/dev/shm/jack-shm-registry"
    static let magic: UInt32 = 0x4a41_434b  // "JACK"
    static let headerLength = 24
    static let entryLength = 264
    static let entries = 8

    /// One registry entry: the server's pid and its prefix (`jack-UID:NAME:`).
    public struct Entry: Equatable, Sendable {
        public let index: Int
        public let pid: pid_t
        public let prefix: String
    }

    /// The entries in use, or [] when there is no registry (no server ever ran) or its layout
    /// is not the one above.
    public static func entriesInUse() -> [Entry] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        return read(descriptor) ?? []
    }

    /// Frees every entry whose jackd is gone, except those a supervisor of a live test process
    /// will free itself (its `/tmp/sluice-jackd-NAME.pid` names a live owner: a test may be
    /// watching that entry). Returns how many were freed.
    ///
    /// No lock is taken (jackd's is a SysV semaphore private to libjack): an entry whose pid is
    /// dead is written by nobody but a server of the same name reclaiming it, which zeroes it
    /// just the same, and a server registering takes only an entry whose pid is 0.
    @discardableResult
    public static func reclaimDeadEntries() -> Int {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        guard let inUse = read(descriptor) else { return 0 }
        var freed = 0
        for entry in inUse where !isAlive(entry.pid) && !supervisedByLiveOwner(entry.prefix) {
            let zeros = [UInt8](repeating: 0, count: entryLength)
            let offset = off_t(headerLength + entry.index * entryLength)
            if pwrite(descriptor, zeros, entryLength, offset) == entryLength { freed += 1 }
        }
        return freed
    }

    private static func read(_ descriptor: Int32) -> [Entry]? {
        let length = headerLength + entries * entryLength
        var bytes = [UInt8](repeating: 0, count: length)
        guard pread(descriptor, &bytes, length, 0) == length else { return nil }
        func word(_ offset: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
        }
        // magic, then hdr_len (the header with its 8 entries) at offset 16.
        guard word(0) == magic, word(16) == UInt32(length) else { return nil }
        return (0..<entries).compactMap { index in
            let offset = headerLength + index * entryLength
            let pid = pid_t(bitPattern: word(offset))
            guard pid != 0 else { return nil }
            let name = bytes[(offset + 4)..<(offset + entryLength)].prefix { $0 != 0 }
            return Entry(index: index, pid: pid, prefix: String(decoding: name, as: UTF8.self))
        }
    }

    private static func isAlive(_ pid: pid_t) -> Bool {
        Glibc.kill(pid, 0) == 0 || errno == EPERM
    }

    /// True when `prefix` (`jack-UID:NAME:`) is a server of a test process still running,
    /// whose supervisor frees the entry when the test stops it.
    private static func supervisedByLiveOwner(_ prefix: String) -> Bool {
        let parts = prefix.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return false }
        let name = parts[1..<(parts.count - 1)].joined(separator: ":")
        guard let text = ChildProcess.read("/tmp/sluice-jackd-\(ServerRegistry.fileSafe(name)).pid") else {
            return false
        }
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pid_t($0) }
        return fields.count == 2 && isAlive(fields[1])
    }
}

/// The `atexit` handler: a plain function, so it can be a C function pointer.
private func endAllServersAtExit() {
    ServerRegistry.endAll()
}

/// The server's request socket, checked without libjack (which keeps one server's state per
/// process, so a libjack probe could disturb clients of another server).
enum ServerSocket {
    /// Where jackd (jack2, Linux) listens for clients.
    static func path(_ name: String) -> String {
        "/dev/shm/jack_\(name)_\(getuid())_0"
    }

    /// True when something listens on the server's socket.
    static func accepts(_ name: String) -> Bool {
        let path = path(name)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            raw.copyBytes(from: path.utf8)
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        // SAFETY: `address` is a fully initialised sockaddr_un, passed with its own size.
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }
}
