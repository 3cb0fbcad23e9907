import Glibc

/// Two hosts joined by NetJack2, on one machine: two network namespaces the test makes, a
/// veth pair between them with addresses of the test's own, a JACK *master* in one (the dummy
/// backend, `jack_load netmanager`) and a *slave* in the other (`jackd -d net`). The slave's
/// `system:playback_N` reach the master as `<slaveClient>:from_slave_N`, and the master's
/// `<slaveClient>:to_slave_N` reach the slave as `system:capture_N`.
///
/// Nothing else on any network is addressed: the namespaces hold only the veth pair (and
/// their own loopback), the addresses are a /30 of 10.0.0.0/8 picked per run, and NetJack2's
/// multicast discovery uses an administratively scoped group and a UDP port picked per run,
/// routed only onto the veth. Needs root (`ip netns`), iproute2 and JACK 2's `jack_net.so`
/// and `netmanager.so`: `isAvailable` says whether this machine has them.
///
/// `stop()` (or release) stops both servers and deletes the namespaces, which takes the veth
/// pair with them.
///
/// Threading: [thread-safe] for the properties; `stop`, `dropLink` and `restoreLink` from one
/// thread at a time.
public final class NetJackPair: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): every stored property is a constant; the servers are
    // Sendable and the namespaces are handled only by the calls the doc comment names.
    public let master: JackTestServer
    public let slave: JackTestServer
    /// The master's client for the slave: its ports `from_slave_N` and `to_slave_N`.
    public let slaveClient: String
    /// Periods of network latency the slave was started with (`jackd -d net -l`).
    public let latencyCycles: Int
    let masterNamespace: String
    let slaveNamespace: String
    let masterInterface: String

    /// Whether NetJack2 pairs can be made here: root, `ip`, and JACK 2's net driver and
    /// net manager.
    public static var isAvailable: Bool {
        geteuid() == 0 && commandExists("ip") && commandExists("jack_load")
            && ["jack_net.so", "netmanager.so"].allSatisfy { driver in
                ["/usr/lib/x86_64-linux-gnu/jack", "/usr/lib/aarch64-linux-gnu/jack", "/usr/lib/jack", "/usr/local/lib/jack"]
                    .contains { access("\($0)/\(driver)", R_OK) == 0 }
            }
    }

    /// Makes the namespaces and the link, starts the master and loads its net manager, then
    /// starts the slave, which joins it; returns once the master shows the slave's ports.
    public init(sampleRate: Int = 48_000, periodFrames: Int = 256, latencyCycles: Int = 2, channels: Int = 2) throws(JackTestError) {
        Self.deleteOrphanedNamespaces()
        let serial = Self.count.add(1)
        let tag = "\(getpid() % 100_000)x\(serial)"
        masterNamespace = "sluice-nj-\(tag)-m"
        slaveNamespace = "sluice-nj-\(tag)-s"
        masterInterface = "snj\(tag)m"
        let slaveInterface = "snj\(tag)s"
        slaveClient = "sluice-slave-\(tag)"
        self.latencyCycles = latencyCycles
        // A /30 of 10.0.0.0/8 and a multicast group and port of this run's own.
        let subnet = (Int(getpid()) &* 7 &+ serial &* 13) % 60_000
        let base = "10.\(200 + subnet / 1_000 % 50).\(subnet % 250)"
        let masterAddress = "\(base).1", slaveAddress = "\(base).2"
        let group = "239.255.\(subnet / 250 % 250).\(1 + subnet % 250)"
        let port = 20_000 + subnet % 20_000

        let setUp: [[String]] = [
            ["ip", "netns", "add", masterNamespace],
            ["ip", "netns", "add", slaveNamespace],
            ["ip", "link", "add", masterInterface, "type", "veth", "peer", "name", slaveInterface],
            ["ip", "link", "set", masterInterface, "netns", masterNamespace],
            ["ip", "link", "set", slaveInterface, "netns", slaveNamespace],
            ["ip", "-n", masterNamespace, "addr", "add", "\(masterAddress)/30", "dev", masterInterface],
            ["ip", "-n", slaveNamespace, "addr", "add", "\(slaveAddress)/30", "dev", slaveInterface],
            ["ip", "-n", masterNamespace, "link", "set", "lo", "up"],
            ["ip", "-n", slaveNamespace, "link", "set", "lo", "up"],
            ["ip", "-n", masterNamespace, "link", "set", masterInterface, "up"],
            ["ip", "-n", slaveNamespace, "link", "set", slaveInterface, "up"],
            // Discovery's multicast goes onto the link and nowhere else.
            ["ip", "-n", masterNamespace, "route", "add", "224.0.0.0/4", "dev", masterInterface],
            ["ip", "-n", slaveNamespace, "route", "add", "224.0.0.0/4", "dev", slaveInterface],
        ]
        var masterServer: JackTestServer?
        do {
            for command in setUp { try Self.run(command) }
            let master = try JackTestServer.start(
                name: "sluice-nj-master-\(tag)", sampleRate: sampleRate, periodFrames: periodFrames, namespace: masterNamespace)
            masterServer = master
            try Self.run(["jack_load", "-s", master.name, "netmanager", "-i", "-a \(group) -p \(port)"])
            slave = try JackTestServer.start(
                name: "sluice-nj-slave-\(tag)", sampleRate: sampleRate, periodFrames: periodFrames,
                driver: [
                    "net", "-a", group, "-p", "\(port)", "-l", "\(latencyCycles)", "-n", slaveClient,
                    "-C", "\(channels)", "-P", "\(channels)", "-i", "0", "-o", "0",
                ],
                namespace: slaveNamespace)
            self.master = master
        } catch {
            masterServer?.stop()
            Self.deleteNamespaces(masterNamespace, slaveNamespace)
            throw error
        }
        guard Self.waitUntil(seconds: 10, { (try? master.ports(matching: "^\(slaveClient):from_slave_").count) == channels }) else {
            let problem = "the master never showed the slave's ports (\(slaveClient):from_slave_*); the slave's log ends:\n\(slave.logTail())"
            stop()
            throw JackTestError(problem)
        }
    }

    deinit { stop() }

    /// Stops both servers and deletes the namespaces (and with them the link). Idempotent.
    public func stop() {
        slave.stop()
        master.stop()
        Self.deleteNamespaces(masterNamespace, slaveNamespace)
    }

    /// Takes the link down (the master's end), as a cable pulled out.
    public func dropLink() throws(JackTestError) {
        try Self.run(["ip", "-n", masterNamespace, "link", "set", masterInterface, "down"])
    }

    /// Brings the link back up, with its multicast route.
    public func restoreLink() throws(JackTestError) {
        try Self.run(["ip", "-n", masterNamespace, "link", "set", masterInterface, "up"])
        try? Self.run(["ip", "-n", masterNamespace, "route", "replace", "224.0.0.0/4", "dev", masterInterface])
    }

    // MARK: Helpers

    private static let count = Counter()

    private final class Counter: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): `value` is only touched under `lock`.
        private var lock = pthread_mutex_t()
        private var current = 0
        init() { pthread_mutex_init(&lock, nil) }
        var value: Int {
            pthread_mutex_lock(&lock)
            defer { pthread_mutex_unlock(&lock) }
            return current
        }
        func add(_ amount: Int) -> Int {
            pthread_mutex_lock(&lock)
            defer { pthread_mutex_unlock(&lock) }
            current += amount
            return current
        }
    }

    /// Namespaces a test process that died made (its jackds ended with it: their
    /// supervisors stop them) are deleted: `sluice-nj-<pid>x<n>-m|s` of a pid no longer alive.
    private static func deleteOrphanedNamespaces() {
        for name in ChildProcess.entries(of: "/run/netns") where name.hasPrefix("sluice-nj-") {
            let pidPart = name.dropFirst("sluice-nj-".count).prefix { $0.isNumber }
            guard let pid = Int32(pidPart), pid != getpid() % 100_000, kill(pid, 0) != 0 || errno == ESRCH else { continue }
            try? run(["ip", "netns", "delete", name], quietly: true)
        }
    }

    private static func deleteNamespaces(_ names: String...) {
        for name in names { try? run(["ip", "netns", "delete", name], quietly: true) }
    }

    /// Runs a command to its end (10 s at most); throws with its output when it fails.
    static func run(_ arguments: [String], quietly: Bool = false) throws(JackTestError) {
        let log = "/tmp/sluice-netjack-\(getpid())-\(count.add(0)).log"
        defer { unlink(log) }
        let pid: pid_t
        do { pid = try ChildProcess.spawn(arguments, standardInput: nil, output: .file(log)) } catch {
            throw JackTestError("could not run `\(arguments.joined(separator: " "))`: \(error)")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard clock.now < deadline else {
                ChildProcess.terminate(pid, signal: SIGKILL)
                throw JackTestError("`\(arguments.joined(separator: " "))` did not finish within 10 s")
            }
            usleep(5_000)
        }
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            if quietly { throw JackTestError("") }
            throw JackTestError("`\(arguments.joined(separator: " "))` failed (status \(status)): \(ChildProcess.tail(of: log))")
        }
    }

    private static func commandExists(_ name: String) -> Bool {
        ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin"].contains { access("\($0)/\(name)", X_OK) == 0 }
    }

    private static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(seconds * 1_000))
        while !condition() {
            if clock.now >= deadline { return false }
            usleep(20_000)
        }
        return true
    }
}
