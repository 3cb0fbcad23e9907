import CJack
import Glibc
import Synchronization

/// A private JACK server for tests: `jackd --no-realtime -n NAME -d dummy -r RATE -p PERIOD`.
///
/// Most tests share one server per test process (`shared()`), started on first use. Tests that
/// kill or stop a server make their own with `start(name:)` and own it: it stops when they call
/// `stop()`, or when the object is released.
///
/// One server per process: libjack keeps a single server's state per process, so the clients
/// open in a process at any moment must all belong to one server. A test that needs a server
/// of its own (to kill it, or to run at another rate) runs in an exit test
/// (`#expect(processExitsWith: .success) { … }`), a child process of its own.
///
/// No server outlives the test process:
/// - each jackd is the child of a small supervisor (`/bin/sh`) that waits on a socket whose
///   other end only the test process holds. `stop()` (and the release of an independent
///   server) closes it and waits; so does an `atexit` handler, for every server still
///   running when the process exits (also after failed tests). If the test process dies any
///   other way (a crash, SIGKILL), the kernel closes the socket, and the supervisor stops
///   jackd all the same. It stops jackd with SIGTERM (SIGKILL after 8 s), reaps it, and
///   after an unclean exit frees the server's slot in JACK's registry (8 per machine) and
///   its files in /dev/shm;
/// - `/tmp/sluice-jackd-NAME.pid` holds "SERVER_PID OWNER_PID" while a server runs, and the
///   first `shared()` of a later run ends servers whose owner is gone (should a supervisor
///   itself have been killed).
///
/// A server someone else runs: with `SLUICE_TEST_JACK_SERVER=NAME` in the environment,
/// `shared()` adopts the running server NAME instead of starting jackd (its rate and period are
/// read from it, and it is never stopped). `scripts/test-pipewire` runs the playback tests this
/// way against a private PipeWire instance through `pw-jack` (docs/jack.md).
///
/// Threading: [thread-safe].
public final class JackTestServer: Sendable {
    /// The server name: pass it to `jack_client_open` (with `JackServerName`) or set
    /// `JACK_DEFAULT_SERVER` to it.
    public let name: String
    /// The rate the server runs at, in Hz.
    public let sampleRate: Int
    /// Frames per process cycle.
    public let periodFrames: Int
    /// The jackd process.
    public let pid: pid_t
    /// jackd's standard output and error. Removed when the server is stopped; kept when jackd
    /// exits by itself, to tell why.
    public let logPath: String

    /// True for a server adopted from `SLUICE_TEST_JACK_SERVER` (pid 0, no log): this process
    /// neither started it nor ever stops it.
    public let isExternal: Bool

    /// Set by `kill()`.
    private let killed = Atomic<Bool>(false)

    private init(
        name: String, sampleRate: Int, periodFrames: Int, pid: pid_t, logPath: String, isExternal: Bool = false
    ) {
        self.name = name
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.pid = pid
        self.logPath = logPath
        self.isExternal = isExternal
    }

    deinit {
        // Only independent servers are ever released; the shared one lives in a static.
        stop()
    }

    // MARK: Defaults and the shared server

    private struct Defaults {
        var sampleRate = 48_000
        var periodFrames = 256
    }

    private static let defaults = Mutex(Defaults())

    /// The sample rate of servers started from now on without an explicit rate (48000).
    public static var defaultSampleRate: Int {
        get { defaults.withLock { $0.sampleRate } }
        set { defaults.withLock { $0.sampleRate = newValue } }
    }

    /// The period of servers started from now on without an explicit one (256 frames).
    public static var defaultPeriodFrames: Int {
        get { defaults.withLock { $0.periodFrames } }
        set { defaults.withLock { $0.periodFrames = newValue } }
    }

    /// How long `start` waits for a new server to answer.
    public static let startTimeout: Duration = .seconds(10)

    private struct SharedState {
        var server: JackTestServer?
        var generation = 0
        var orphansChecked = false
    }

    private static let sharedState = Mutex(SharedState())

    /// The server shared by every test of this process, started on first use
    /// (`sluice-test-<pid>`). If it has died (a test killed it), a new one with a fresh name
    /// (`sluice-test-<pid>-2`, …) takes its place.
    ///
    /// Do not stop or kill the shared server: other tests run on it at the same time. Start
    /// your own with `start(name:)` instead.
    public static func shared() throws -> JackTestServer {
        try sharedState.withLock { state throws(JackTestError) -> JackTestServer in
            // An adopted server is not ours to replace, so it is not probed again on every call.
            if let server = state.server, server.isExternal || server.isRunning { return server }
            if let external = getenv(externalServerVariable).map({ String(cString: $0) }), !external.isEmpty {
                let server = try adopt(name: external)
                state.server = server
                return server
            }
            if !state.orphansChecked {
                state.orphansChecked = true
                endOrphanedServers()
            }
            state.generation += 1
            let suffix = state.generation == 1 ? "" : "-\(state.generation)"
            let server = try start(name: "sluice-test-\(getpid())\(suffix)")
            state.server = server
            return server
        }
    }

    /// The environment variable naming a running server for `shared()` to adopt.
    public static let externalServerVariable = "SLUICE_TEST_JACK_SERVER"

    /// The running server `name`, with the rate and period it reports.
    private static func adopt(name: String) throws(JackTestError) -> JackTestServer {
        let client: OpaquePointer
        do {
            client = try BoundedClients.open("probe", server: name)
        } catch {
            throw JackTestError("\(externalServerVariable) names the JACK server '\(name)', which does not answer: \(error)")
        }
        defer { BoundedClients.close(client, server: name) }
        return JackTestServer(
            name: name, sampleRate: Int(jack_get_sample_rate(client)),
            periodFrames: Int(jack_get_buffer_size(client)), pid: 0, logPath: "", isExternal: true)
    }

    private static let independentCount = Atomic<Int>(0)

    /// Starts a server that belongs to the caller alone, and waits until it answers.
    ///
    /// libjack keeps the state of one server per process: while clients of one server are
    /// open in this process, do not open clients of another (they would share, and corrupt,
    /// that state). Use an independent server's clients in an exit test
    /// (`#expect(processExitsWith:)`), which runs in a process of its own. The harness itself
    /// follows the rule: it probes a server through libjack only while that server is the
    /// only one this process runs, and otherwise through its socket.
    ///
    /// - Parameters:
    ///   - name: the server name; nil picks a fresh one (`sluice-test-<pid>-i<n>`).
    ///   - sampleRate: nil means `defaultSampleRate`.
    ///   - periodFrames: nil means `defaultPeriodFrames`.
    /// - Throws: `JackTestError`, with the tail of jackd's log, if a server of that name is
    ///   already running, or jackd exits or does not answer within `startTimeout`.
    ///   - driver: jackd's driver and its options; nil means the dummy backend at
    ///     `sampleRate` and `periodFrames` (a NetJack2 slave passes `["net", …]`, and the rate
    ///     and period its master runs at).
    ///   - namespace: a network namespace to run jackd in (`ip netns exec`); its clients
    ///     still reach it through its socket in /dev/shm.
    public static func start(
        name: String? = nil, sampleRate: Int? = nil, periodFrames: Int? = nil, driver: [String]? = nil, namespace: String? = nil
    ) throws(JackTestError) -> JackTestServer {
        let name = name ?? "sluice-test-\(getpid())-i\(independentCount.add(1, ordering: .relaxed).newValue)"
        let sampleRate = sampleRate ?? defaultSampleRate
        let periodFrames = periodFrames ?? defaultPeriodFrames
        guard !ServerSocket.accepts(name) else {
            throw JackTestError("a JACK server named '\(name)' is already running; pick another name")
        }
        let logPath = "/tmp/sluice-jackd-\(ServerRegistry.fileSafe(name)).log"
        let command =
            (namespace.map { ["ip", "netns", "exec", $0] } ?? [])
            + ["jackd", "--no-realtime", "-n", name, "-d"]
            + (driver ?? ["dummy", "-r", "\(sampleRate)", "-p", "\(periodFrames)"])
        // JACK runs at most 8 servers per machine. Entries of servers that died are freed and
        // the start tried again; while live servers (other tests') hold all 8, it waits.
        let clock = ContinuousClock()
        let slotDeadline = clock.now + slotWait
        while true {
            let entry = try ServerRegistry.spawn(command, name: name, logPath: logPath)
            let server = JackTestServer(
                name: name, sampleRate: sampleRate, periodFrames: periodFrames, pid: entry.pid, logPath: logPath)
            guard let problem = waitUntilAnswering(server) else { return server }
            let log = ChildProcess.tail(of: logPath)
            ServerRegistry.end(server.pid)
            let noSlot = log.contains("Too many servers")
            if noSlot, clock.now < slotDeadline {
                if JackServerSlots.reclaimDeadEntries() == 0 { usleep(250_000) }
                continue
            }
            var hint = ""
            if noSlot {
                let holders = JackServerSlots.entriesInUse().map { "\($0.prefix) (pid \($0.pid))" }
                hint = "\nJACK allows 8 servers per machine (/dev/shm/jack-shm-registry), all still "
                    + "held after \(slotWait) by live servers: \(holders.joined(separator: ", "))"
            }
            throw JackTestError(
                "the test JACK server '\(name)' (`\(command.joined(separator: " "))`) \(problem). "
                    + "jackd's log ends:\n\(log)\(hint)")
        }
    }

    /// How long `start` waits for one of JACK's 8 server slots while other servers hold them.
    public static let slotWait: Duration = .seconds(30)

    /// Polls every 20 ms until the server answers. Returns nil once it does, or what went
    /// wrong.
    ///
    /// The server answers when its socket accepts a connection and, if this is the only
    /// server this process runs, when a client named "probe" opens on it through libjack.
    private static func waitUntilAnswering(_ server: JackTestServer) -> String? {
        let clock = ContinuousClock()
        let deadline = clock.now + startTimeout
        while true {
            if !server.isRunning { return "exited while starting" }
            if ServerSocket.accepts(server.name) {
                let probed = ServerRegistry.probeInProcess(server.pid) { probe(server.name) }
                if probed ?? true { return nil }
            }
            if clock.now >= deadline { return "did not answer within \(startTimeout)" }
            usleep(20_000)
        }
    }

    /// Opens and closes a client named "probe" on `server`; true when that worked.
    static func probe(_ server: String) -> Bool {
        guard let client = try? BoundedClients.open("probe", server: server) else { return false }
        return BoundedClients.close(client, server: server)
    }

    // MARK: Using and ending a server

    /// True while jackd runs (an external server: while a client can open on it).
    public var isRunning: Bool { isExternal ? Self.probe(name) : ServerRegistry.isRunning(pid) }

    /// True while jackd runs and accepts connections on its socket (checked without libjack,
    /// so asking never disturbs clients of other servers; an external server is probed).
    public var answers: Bool { isExternal ? Self.probe(name) : isRunning && ServerSocket.accepts(name) }

    /// The environment variable naming the log of the PipeWire instance an external server
    /// runs in (scripts/test-pipewire sets it, with PipeWire's node debug messages on).
    public static let pipeWireLogVariable = "SLUICE_TEST_PIPEWIRE_LOG"

    /// Cycles the server ran late so far, where it does not report them as xruns: under
    /// PipeWire (0.3.65), a graph not finished by the next cycle is only logged ("graph not
    /// finished"); no JACK client's xrun callback hears of it. 0 for jackd, which reports a
    /// late cycle to its clients as an xrun.
    public var lateCycles: Int {
        guard isExternal, let path = getenv(Self.pipeWireLogVariable).map({ String(cString: $0) }),
            let file = fopen(path, "r")
        else { return 0 }
        defer { fclose(file) }
        var count = 0
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) >= 0 {
            if let line, strstr(line, "graph not finished") != nil { count += 1 }
        }
        return count
    }

    /// Opens a client on this server (never starting one), waiting at most
    /// `JackDeadline.openTimeout`. Close it with ``closeClient(_:)``.
    public func openClient(named clientName: String, options: jack_options_t = JackNullOption)
        throws(JackTestError) -> OpaquePointer
    {
        try BoundedClients.open(clientName, options: options, server: name)
    }

    /// Closes a client ``openClient(named:options:)`` opened, waiting at most
    /// `JackDeadline.closeTimeout`; false when the server did not answer in time.
    @discardableResult
    public func closeClient(_ client: OpaquePointer) -> Bool {
        BoundedClients.close(client, server: name)
    }

    /// Port names on this server matching `pattern` (a regular expression; nil: all) with all
    /// of `flags`.
    public func ports(matching pattern: String? = nil, type: String? = nil, flags: [JackPortFlags] = [])
        throws(JackTestError) -> [String]
    {
        try JackQuery.ports(matching: pattern, type: type, flags: flags, server: name)
    }

    /// Names of the ports connected to `port` on this server.
    public func connections(of port: String) throws(JackTestError) -> [String] {
        try JackQuery.connections(of: port, server: name)
    }

    /// The last part of jackd's log, for failure messages.
    public func logTail(maximumBytes: Int = 2_000) -> String {
        if isExternal { return "(an external server; its log is its owner's)" }
        return ChildProcess.tail(of: logPath, maximumBytes: maximumBytes)
    }

    /// Ends the server and waits (up to 30 s, usually milliseconds) until it is gone: SIGTERM,
    /// SIGKILL after 8 s; then, if it did not exit cleanly (after `kill()`), its slot in JACK's
    /// server registry is freed by starting and cleanly stopping a server of the same name, and
    /// its files in /dev/shm are removed. The log is removed too, unless jackd had exited by
    /// itself. Safe to call more than once.
    public func stop() {
        if isExternal { return }
        let exitedByItself = !isRunning && !killed.load(ordering: .acquiring)
        ServerRegistry.end(pid, keepingLog: exitedByItself)
    }

    /// Kills the server at once with SIGKILL, as a crash would. Its clients get their
    /// shutdown callbacks (close them before opening clients of another server). Safe to
    /// call more than once.
    ///
    /// Clean-up waits for `stop()` (or the release of this object, or the process's exit),
    /// so nothing under this server's name appears again while the test watches its clients.
    public func kill() {
        precondition(!isExternal, "an external JACK server is not the tests' to kill")
        killed.store(true, ordering: .releasing)
        ServerRegistry.kill(pid)
    }

    /// Ends servers left by earlier test processes that died without cleaning up (their
    /// supervisors normally do this already). Only jackd processes whose pid file names a
    /// dead owner, and whose command line matches, are touched.
    public static func endOrphanedServers() {
        for file in ChildProcess.entries(of: "/tmp")
        where file.hasPrefix("sluice-jackd-") && file.hasSuffix(".pid") {
            let path = "/tmp/\(file)"
            guard let text = ChildProcess.read(path) else { continue }
            let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pid_t($0) }
            guard fields.count == 2 else { continue }
            let (serverPid, ownerPid) = (fields[0], fields[1])
            if ownerPid == getpid() { continue }
            if Glibc.kill(ownerPid, 0) == 0 || errno == EPERM { continue }  // owner alive
            let name = String(file.dropFirst("sluice-jackd-".count).dropLast(".pid".count))
            if let commandLine = ChildProcess.commandLine(of: serverPid),
                commandLine.contains("jackd"), commandLine.contains("-n \(name) ")
            {
                Glibc.kill(serverPid, SIGTERM)
            }
            unlink(path)
        }
    }
}
