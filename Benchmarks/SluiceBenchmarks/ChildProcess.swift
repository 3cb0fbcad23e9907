import Foundation

/// A program the benchmarks start, watch and wait for: its whole life (exec, start-up, work,
/// exit) is what some figures time, and `wait()` returns the CPU time it used.
final class ChildProcess {
    let pid: pid_t
    let command: String
    /// Set once the child has been reaped.
    private var ended: Exit?

    private init(pid: pid_t, command: String) {
        self.pid = pid
        self.command = command
    }

    /// How a child's standard streams are set up.
    struct Streams {
        /// A descriptor to read standard input from; nil: /dev/null.
        var input: Int32?
        /// A file for standard output; nil: this process's standard error, so stdout stays
        /// JSON lines.
        var outputPath: String?
        /// A descriptor for standard output (a pipe's write end), in place of `outputPath`.
        var output: Int32?
        /// A file for standard error; nil: this process's standard error.
        var errorPath: String?

        init(input: Int32? = nil, outputPath: String? = nil, output: Int32? = nil, errorPath: String? = nil) {
            self.input = input
            self.outputPath = outputPath
            self.output = output
            self.errorPath = errorPath
        }
    }

    /// Starts `arguments` (the program looked up on PATH), with `environment` added to this
    /// process's. Stops the benchmark when it cannot start: a missing tool is no figure.
    static func start(_ arguments: [String], streams: Streams = Streams(), environment: [String: String] = [:])
        -> ChildProcess
    {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let input = streams.input {
            posix_spawn_file_actions_adddup2(&actions, input, STDIN_FILENO)
        } else {
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        }
        if let output = streams.output {
            posix_spawn_file_actions_adddup2(&actions, output, STDOUT_FILENO)
        } else if let path = streams.outputPath {
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        }
        if let path = streams.errorPath {
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }
        var variables = ProcessInfo.processInfo.environment
        for (key, value) in environment { variables[key] = value }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for argument in argv { free(argument) }
            for variable in envp { free(variable) }
        }
        var pid = pid_t()
        let status = posix_spawnp(&pid, arguments[0], &actions, nil, argv, envp)
        guard status == 0 else { fail("cannot run \(arguments[0]): \(String(cString: strerror(status)))") }
        ChildRegistry.add(pid)
        return ChildProcess(pid: pid, command: arguments.joined(separator: " "))
    }

    /// How a child ended.
    struct Exit {
        /// The raw wait status.
        var status: Int32
        /// User plus system CPU seconds the child used.
        var cpuSeconds: Double

        /// Exited with `code` (WIFEXITED && WEXITSTATUS == code; the macros are not imported).
        func exited(with code: Int32) -> Bool { status & 0x7f == 0 && (status >> 8) & 0xff == code }
    }

    /// Waits for the child to end.
    func wait() -> Exit {
        reap(blocking: true)!
    }

    /// Waits for the child until `deadline` (monotonic seconds); a child still running then is
    /// stopped (SIGTERM, SIGKILL two seconds later) and nil is returned: a step that hangs
    /// fails instead of holding the whole benchmark.
    func wait(until deadline: Double) -> Exit? {
        while monotonicNow() < deadline {
            if let exit = poll() { return exit }
            usleep(50_000)
        }
        signal(SIGTERM)
        let killAt = monotonicNow() + 2
        while monotonicNow() < killAt {
            if poll() != nil { return nil }
            usleep(50_000)
        }
        signal(SIGKILL)
        _ = wait()
        return nil
    }

    private func monotonicNow() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
    }

    /// How the child ended, or nil while it runs.
    func poll() -> Exit? {
        reap(blocking: false)
    }

    private func reap(blocking: Bool) -> Exit? {
        if let ended { return ended }
        var status: Int32 = 0
        var usage = rusage()
        while true {
            let reaped = wait4(pid, &status, blocking ? 0 : WNOHANG, &usage)
            if reaped == pid { break }
            if reaped == 0 { return nil }
            if errno != EINTR { fail("wait4 for \(command): \(String(cString: strerror(errno)))") }
        }
        ChildRegistry.remove(pid)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) * 1e-6 }
        ended = Exit(status: status, cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime))
        return ended
    }

    /// Marks the child as a server the others use (jackd): when the harness stops early, it
    /// is ended after every other child, so they leave it first.
    func endsLast() {
        if ended == nil { ChildRegistry.markServer(pid) }
    }

    /// Sends `number` unless the child has already been reaped (its pid may be reused).
    func signal(_ number: Int32) {
        if ended == nil { kill(pid, number) }
    }

    /// Waits for the child and stops the benchmark unless it exited with `code`.
    @discardableResult
    func expectExit(_ code: Int32 = 0) -> Exit {
        let exit = wait()
        guard exit.exited(with: code) else { fail("\(command) failed (wait status \(exit.status))") }
        return exit
    }
}

// MARK: - Ending every child on the way out

/// Every child started and not yet reaped, so that a run that stops early — `fail`, or a
/// SIGINT, SIGTERM or SIGHUP to the harness — still ends them all, servers (jackd) last and
/// with SIGTERM first, so that jackd frees its entry in JACK's server registry. A fixed table
/// of pids, so the signal handler reads it without allocating or locking.
enum ChildRegistry {
    static let capacity = 512
    /// pid, or 0 for a free slot; a server's pid is stored negated.
    nonisolated(unsafe) static let slots: UnsafeMutablePointer<pid_t> = {
        let slots = UnsafeMutablePointer<pid_t>.allocate(capacity: capacity)
        slots.initialize(repeating: 0, count: capacity)
        return slots
    }()

    static func add(_ pid: pid_t) {
        for index in 0..<capacity where slots[index] == 0 {
            slots[index] = pid
            return
        }
        // A full table only means this child is not ended on an early stop.
    }

    static func remove(_ pid: pid_t) {
        for index in 0..<capacity where slots[index] == pid || slots[index] == -pid { slots[index] = 0 }
    }

    static func markServer(_ pid: pid_t) {
        for index in 0..<capacity where slots[index] == pid { slots[index] = -pid }
    }

    /// Installs the handler for SIGINT, SIGTERM and SIGHUP: end every child, then die of the
    /// same signal. Called once at start-up (it also makes the table before any signal).
    static func installSignalHandlers() {
        _ = slots
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number) { number in
                // Only async-signal-safe calls below: kill, waitpid, nanosleep, signal, raise.
                ChildRegistry.endAll()
                signal(number, SIG_DFL)
                raise(number)
            }
        }
    }

    /// SIGTERM to every child but the servers, up to 3 s for them to end, SIGKILL to any left;
    /// then the same for the servers, with 5 s. Async-signal-safe.
    static func endAll() {
        end(servers: false, seconds: 3)
        end(servers: true, seconds: 5)
    }

    private static func end(servers: Bool, seconds: Int) {
        func matches(_ slot: pid_t) -> Bool { servers ? slot < 0 : slot > 0 }
        var any = false
        for index in 0..<capacity where matches(slots[index]) {
            kill(abs(slots[index]), SIGTERM)
            any = true
        }
        guard any else { return }
        var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
        for _ in 0..<(seconds * 100) {
            var left = false
            for index in 0..<capacity where matches(slots[index]) {
                var status: Int32 = 0
                let pid = abs(slots[index])
                let reaped = waitpid(pid, &status, WNOHANG)
                if reaped == pid || (reaped < 0 && errno == ECHILD) {
                    slots[index] = 0
                } else {
                    left = true
                }
            }
            if !left { return }
            nanosleep(&pause, nil)
        }
        for index in 0..<capacity where matches(slots[index]) {
            let pid = abs(slots[index])
            kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            slots[index] = 0
        }
    }
}
