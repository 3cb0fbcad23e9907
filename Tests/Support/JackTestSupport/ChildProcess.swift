import Glibc

// Spawning, signalling and reaping child processes without Foundation, so the harness
// controls exactly which descriptors and signal dispositions a child inherits.
//
// Threading: [thread-safe]. Every function here works on pids it is given; the callers make
// sure a pid is reaped exactly once (see `ServerRegistry`).

/// A failure of the JACK test harness, told in a sentence that says what to look at.
public struct JackTestError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

enum ChildProcess {
    /// Where a child's standard output and error go.
    enum Output {
        case devNull
        case file(String)
    }

    /// Spawns `arguments[0]` (searched on PATH) with `arguments`.
    ///
    /// - Parameters:
    ///   - standardInput: a descriptor to become the child's standard input (it is duplicated;
    ///     the caller keeps and closes its own), or nil for /dev/null.
    ///   - output: where standard output and standard error both go.
    /// - Returns: the child's pid.
    static func spawn(_ arguments: [String], standardInput: Int32?, output: Output) throws -> pid_t {
        precondition(!arguments.isEmpty, "a child needs a program to run")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        switch output {
        case .devNull:
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else the test process has open reaches the child: a server outliving a test
        // must not hold another child's output pipe open (its reader would wait for EOF).
        closeFrom(3, in: &actions)

        // The test runner may block or ignore signals (SIGPIPE is often ignored); the child
        // starts with an empty mask and default dispositions, so SIGTERM really ends it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        // SAFETY: argv is a NULL-terminated array of C strings that outlives the call; environ
        // is the process environment, read by posix_spawnp before it returns.
        let result = argv.withUnsafeBufferPointer { buffer in
            posix_spawnp(&pid, arguments[0], &actions, &attributes, buffer.baseAddress!, environ)
        }
        guard result == 0 else {
            throw JackTestError(
                "could not start `\(arguments.joined(separator: " "))`: \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// Reaps `pid` if it has exited. Returns true when it has (or is not our child any more).
    static func reapIfExited(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return true }
            if result == 0 { return false }
            if errno == EINTR { continue }
            return true  // ECHILD: already reaped, nothing left to wait for
        }
    }

    /// True while `pid` exists and is not a zombie (it need not be our child).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
        // "pid (comm) S …": the state follows the command name, which may hold spaces.
        let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
        return state != nil && state != "Z" && state != "X"
    }

    /// Polls every 10 ms until `pid` exits and is reaped, or `timeout` passes.
    static func waitForExit(_ pid: pid_t, timeout: Duration) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            if reapIfExited(pid) { return true }
            if clock.now >= deadline { return false }
            usleep(10_000)
        }
    }

    /// How `terminate` ended a process.
    enum Termination {
        /// It exited on the first signal (or had already exited).
        case exited
        /// It needed SIGKILL.
        case killed
        /// It outlived SIGKILL for 2 s (stuck in the kernel); not reaped.
        case stuck
    }

    /// Sends `signal` and waits up to `grace` for the exit; then SIGKILL and a final wait.
    @discardableResult
    static func terminate(_ pid: pid_t, signal: Int32 = SIGTERM, grace: Duration = .seconds(2)) -> Termination {
        if reapIfExited(pid) { return .exited }
        Glibc.kill(pid, signal)
        if signal != SIGKILL, waitForExit(pid, timeout: grace) { return .exited }
        Glibc.kill(pid, SIGKILL)
        // SIGKILL cannot be caught; only a process stuck in the kernel outlives this wait.
        return waitForExit(pid, timeout: .seconds(2)) ? .killed : .stuck
    }

    /// The last `maximumBytes` of a text file, or a note when it cannot be read.
    static func tail(of path: String, maximumBytes: Int = 2_000) -> String {
        guard let file = fopen(path, "r") else { return "(no log at \(path))" }
        defer { fclose(file) }
        fseek(file, 0, SEEK_END)
        let size = ftell(file)
        let start = max(0, size - maximumBytes)
        fseek(file, start, SEEK_SET)
        var bytes = [UInt8](repeating: 0, count: size - start)
        let count = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        return String(decoding: bytes.prefix(count), as: UTF8.self)
    }

    /// The whole text of a small file, or nil.
    static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { break }
            text += chunk.prefix(count)
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func write(_ text: String, to path: String) {
        guard let file = fopen(path, "w") else { return }
        fputs(text, file)
        fclose(file)
    }

    /// Names of the entries of a directory.
    static func entries(of directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            // SAFETY: d_name is a NUL-terminated array inside the dirent readdir returned,
            // valid until the next readdir on this handle.
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The command line of a live process, NUL separators turned into spaces.
    static func commandLine(of pid: pid_t) -> String? {
        read("/proc/\(pid)/cmdline").map { String($0.map { $0 == "\0" ? " " : $0 }) }
    }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which Swift's Glibc module does
/// not expose: looked up by name in the C library.
private func closeFrom(_ first: Int32, in actions: inout posix_spawn_file_actions_t) {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return }
    // SAFETY: glibc declares it as int (posix_spawn_file_actions_t *, int).
    let addCloseFrom = unsafeBitCast(symbol, to: AddCloseFrom.self)
    _ = addCloseFrom(&actions, first)
}
