import CJack
import Glibc
import SluiceGraph
import Synchronization

/// One JACK client per graph: every `jack.sink` and `jack.source` of a graph (on one server)
/// is a set of ports of this client, activated once, and its process callback runs the graph's
/// real-time cycle — capture, the nodes in the cycle, playback — so what comes in during a
/// period goes out in the same period, as in a C pass-through client.
///
/// What a JACK user expects of a client, it does:
/// - port latency ranges set in the latency callback: capture → playback through the graph,
///   plus each node's own latency (`Node.latencyFrames`);
/// - the sinks' output latency passed to their playheads (heard position, timings);
/// - drain events stamped with JACK's frame time;
/// - a sample-rate change ends the run with a clear error;
/// - `connect` rules re-applied when a matching port appears again (a client that restarts is
///   reconnected, as a patchbay does);
/// - xrun counts, a server that goes away ends the run cleanly.
///
/// Threading: [control-thread] for everything public; the callbacks in JackCallbacks.swift.
public final class JackDevice: GraphDevice, @unchecked Sendable {
    /// One endpoint's ports, as the device registers and connects them.
    struct Endpoint {
        let name: String
        let node: ObjectIdentifier
        let portNames: [String]?
        let connect: [String]
        let direction: JackPorts.Direction
        /// Seconds its `connect` ports may take to appear at the start.
        var waitForPorts: Double = 0
    }

    public let server: String?
    /// The client name asked for; JACK may append -01, -02… (`clientName`).
    public let requestedName: String
    let sinks: [Endpoint]
    let sources: [Endpoint]
    private var client: JackClient?
    private var engine: JackCycleEngine?
    private var activated = false
    /// Each started endpoint with its full port names.
    private var registered: [(endpoint: Endpoint, ports: [String])] = []
    private var connectionsMade: [String: [(from: String, to: String)]] = [:]
    /// Endpoints whose `connect` ports had not all appeared at the start, with the monotonic
    /// second they must have by and why they were missing (`wait-for-ports`).
    private var awaitedPorts: [String: (deadline: Double, problem: String)] = [:]
    /// The run's control loop, woken by the engine's notification callbacks.
    private var controlWake: WakeSignal?

    init(server: String?, clientName: String, sinks: [Endpoint], sources: [Endpoint]) {
        self.server = server
        requestedName = clientName
        self.sinks = sinks
        self.sources = sources
    }

    deinit {
        stop()
    }

    // MARK: Making one for a graph

    /// The device `entries` share: one client on their server, named by `playback.client`,
    /// else by their `client` parameters (which must agree), else by the graph's name.
    static func make(
        for entries: [DeviceEndpointEntry], graphName: String, playback: PlaybackSettings, defaultServer: String?
    ) throws(DeviceConfigurationError) -> JackDevice {
        // A setting the endpoints must agree on: its value and the node that gave it first.
        var server: (value: String, node: String)?
        var name: (value: String, node: String)?
        func agree(
            _ given: String, node: String, with setting: inout (value: String, node: String)?, parameter: String,
            conflict: (_ first: (value: String, node: String)) -> (message: String, fix: String)
        ) throws(DeviceConfigurationError) {
            if let first = setting, first.value != given {
                let (message, fix) = conflict(first)
                throw DeviceConfigurationError(node: node, parameter: parameter, message: message, fix: fix)
            }
            if setting == nil { setting = (given, node) }
        }
        var sinks: [Endpoint] = []
        var sources: [Endpoint] = []
        var portOwners: [String: (node: String, direction: JackPorts.Direction, ports: [String])] = [:]
        for entry in entries {
            let settings: (server: String?, client: String?, ports: [String]?, connect: [String], wait: Double)
            let direction: JackPorts.Direction
            switch entry.node {
            case let sink as JackSink:
                settings = (sink.server, sink.clientName, sink.portNames, sink.connect, sink.waitForPorts)
                direction = .playback
            case let source as JackSource:
                settings = (source.server, source.clientName, source.portNames, source.connect, source.waitForPorts)
                direction = .capture
            default:
                continue
            }
            if let given = settings.server {
                try agree(given, node: entry.name, with: &server, parameter: "server") { first in
                    ("server '\(given)' differs from '\(first.value)' of node '\(first.node)': a graph plays through one JACK server",
                     "give every jack.sink and jack.source the same server, or none (then --server decides)")
                }
            }
            if let given = settings.client, playback.client == nil {
                try agree(given, node: entry.name, with: &name, parameter: "client") { first in
                    ("client '\(given)' differs from '\(first.value)' of node '\(first.node)': a graph is one JACK client holding all its ports",
                     "name the client once, as `playback: { client: \(first.value) }`, and drop the nodes' `client`")
                }
            }
            for port in settings.ports ?? [] {
                guard let owner = portOwners[port] else {
                    portOwners[port] = (entry.name, direction, settings.ports ?? [])
                    continue
                }
                // Sinks naming the same ports, all of them, are mixed into them; anything
                // else would give one JACK port two meanings.
                if owner.direction == .playback && direction == .playback && owner.ports == settings.ports { continue }
                throw DeviceConfigurationError(
                    node: entry.name, parameter: "ports",
                    message: "port name '\(port)' is also a port of node '\(owner.node)': the graph's ports share one client",
                    fix: direction == .playback && owner.direction == .playback
                        ? "to mix into '\(owner.node)''s ports give the same list, [\(owner.ports.joined(separator: ", "))]; else names of its own"
                        : "give each port of the graph its own name")
            }
            let endpoint = Endpoint(
                name: entry.name, node: ObjectIdentifier(entry.node), portNames: settings.ports,
                connect: settings.connect, direction: direction, waitForPorts: settings.wait)
            if direction == .playback { sinks.append(endpoint) } else { sources.append(endpoint) }
        }
        let clientName = playback.client ?? name?.value ?? Self.clientName(forGraph: graphName)
        let device = JackDevice(server: server?.value ?? defaultServer, clientName: clientName, sinks: sinks, sources: sources)
        for entry in entries {
            if let sink = entry.node as? JackSink {
                sink.device = device
                sink.nodeName = entry.name
            }
            if let source = entry.node as? JackSource {
                source.device = device
                source.nodeName = entry.name
            }
        }
        return device
    }

    /// A graph's name as a JACK client name: no ':' (JACK's separator), at most 48
    /// characters, "sluice" when nothing is left and for a one-line graph (`sluice launch`).
    static func clientName(forGraph name: String) -> String {
        guard name != "one-line" else { return "sluice" }
        let cleaned = String(name.map { $0 == ":" || $0 == " " ? "-" : $0 }.prefix(48))
        return cleaned.isEmpty ? "sluice" : cleaned
    }

    // MARK: The client

    /// [control-thread] Opens the client (once): at compile time, to learn the server's rate.
    @discardableResult
    public func openClient() throws(JackError) -> JackClient {
        if let client { return client }
        let opened = try JackClient(name: requestedName, server: server)
        client = opened
        lastClientName = opened.name
        return opened
    }

    /// The name JACK gave the client the last time it was open (kept after `stop`).
    public private(set) var lastClientName: String?
    /// The name JACK gave the client, while it is open.
    public var clientName: String? { client?.name }

    /// The default port names of an endpoint: `out_1…` / `in_1…` when the graph has one
    /// endpoint of that direction, `<node>.out_1…` when it has several.
    func portNames(of endpoint: Endpoint, channels: Int) -> [String] {
        if let given = endpoint.portNames { return given }
        let several = (endpoint.direction == .playback ? sinks : sources).count > 1
        let stem = endpoint.direction == .playback ? "out" : "in"
        return (1...max(1, channels)).map { several ? "\(endpoint.name).\(stem)_\($0)" : "\(stem)_\($0)" }
    }

    // MARK: GraphDevice

    public func start(_ cycle: GraphCycle) throws {
        let client = try openClient()
        let handle = client.handle
        var playbackEndpoints: [(endpoint: Endpoint, index: Int)] = []
        for sink in sinks {
            guard let index = cycle.playbackIndex(of: sink.node) else { continue }
            playbackEndpoints.append((sink, index))
        }
        var captureEndpoints: [(endpoint: Endpoint, index: Int)] = []
        for source in sources {
            guard let index = cycle.captureIndex(of: source.node) else { continue }
            captureEndpoints.append((source, index))
        }
        for (_, index) in playbackEndpoints where cycle.playhead(index).sampleRate != client.sampleRate {
            throw JackError("the graph plays at \(cycle.playhead(index).sampleRate) Hz but JACK server runs at \(client.sampleRate) Hz")
        }
        // Before the engine lists the lines a period reads: warming up settles what the
        // period runs (a node's frame kernel is adopted there).
        for index in 0..<cycle.playbackCount { Playhead.warmUp(channels: cycle.playbackChannels(index)) }
        cycle.warmUp(blockFrames: client.bufferSize)
        let engine = JackCycleEngine(
            cycle: cycle, client: handle, sampleRate: client.sampleRate,
            playbackChannels: playbackEndpoints.map { cycle.playbackChannels($0.index) },
            playbackIndices: playbackEndpoints.map(\.index),
            captureChannels: captureEndpoints.map { cycle.captureChannels($0.index) },
            captureIndices: captureEndpoints.map(\.index), news: controlWake)
        registered = []
        // Sinks that name the same ports mix into them: the first registers them, the later
        // ones add to what it wrote, and take their connections from it.
        var playbackPorts: [[String]: (ports: [OpaquePointer], endpoint: Endpoint)] = [:]
        for (slot, (endpoint, index)) in playbackEndpoints.enumerated() {
            let names = portNames(of: endpoint, channels: cycle.playbackChannels(index))
            if let shared = playbackPorts[names] {
                for (channel, port) in shared.ports.enumerated() { engine.setPlaybackPort(port, endpoint: slot, channel: channel) }
                engine.setMixing(endpoint: slot)
                if endpoint.connect != shared.endpoint.connect {
                    registered.append((endpoint, names.map { "\(client.name):\($0)" }))
                }
                continue
            }
            var handles: [OpaquePointer] = []
            let ports = try register(names, output: true, client: client) { channel, port in
                engine.setPlaybackPort(port, endpoint: slot, channel: channel)
                handles.append(port)
            }
            playbackPorts[names] = (handles, endpoint)
            registered.append((endpoint, ports))
        }
        for (slot, (endpoint, index)) in captureEndpoints.enumerated() {
            let names = portNames(of: endpoint, channels: cycle.captureChannels(index))
            let ports = try register(names, output: false, client: client) { engine.setCapturePort($1, endpoint: slot, channel: $0) }
            registered.append((endpoint, ports))
        }
        self.engine = engine
        let context = Unmanaged.passUnretained(engine).toOpaque()
        jack_set_process_callback(handle, sluiceJackProcess, context)
        jack_set_xrun_callback(handle, sluiceJackXrun, context)
        jack_on_shutdown(handle, sluiceJackShutdown, context)
        jack_set_sample_rate_callback(handle, sluiceJackSampleRate, context)
        jack_set_port_registration_callback(handle, sluiceJackPortRegistration, context)
        jack_set_latency_callback(handle, sluiceJackLatency, context)
        guard jack_activate(handle) == 0 else { throw JackError("JACK did not activate client '\(client.name)'") }
        activated = true
        processThread = UInt(jack_client_thread_id(handle))
        JackLibraryMessages.realtimeThreads.insert(processThread)
        for (endpoint, ports) in registered {
            do throws(JackError) {
                connectionsMade[endpoint.name] = try JackPorts.connect(ports, as: endpoint.direction, following: endpoint.connect, client: client)
            } catch {
                guard endpoint.waitForPorts > 0 else { throw error }
                // Not there yet: the port-registration callback wakes `service` when ports
                // come, and `failure` says so once the wait is over.
                let deadline = Self.monotonicSeconds() + endpoint.waitForPorts
                awaitedPorts[endpoint.name] = (deadline: deadline, problem: error.message)
            }
        }
        beforeRendering?()
        // Connections take effect in the first cycle JACK begins after them: the latest cycle
        // begun may still run without them (RenderState).
        let connected = connectionsMade.values.contains { !$0.isEmpty }
        engine.renderState.store(
            connected
                ? RenderState.armed(after: jack_last_frame_time(handle), thenSkipping: JackClient.isPipeWire ? RenderState.skippedUnderPipeWire : 0)
                : RenderState.rendering,
            ordering: .releasing)
        // After rendering starts: with the connections just made, JACK's graph change is
        // pending until the next cycle and reading a port's latency sleeps until then
        // (setLatencies). The playheads take it a moment after their first period.
        engine.outputLatencyStale.store(false, ordering: .relaxed)
        engine.updateOutputLatency()
        startLatency = engine.outputLatencyFrames
    }

    private func register(
        _ names: [String], output: Bool, client: JackClient, store: (Int, OpaquePointer) -> Void
    ) throws(JackError) -> [String] {
        let flags = UInt(output ? JackPortIsOutput.rawValue : JackPortIsInput.rawValue)
        for (channel, name) in names.enumerated() {
            guard let port = jack_port_register(client.handle, name, JACK_DEFAULT_AUDIO_TYPE, flags, 0) else {
                throw JackError("JACK refused \(output ? "an output" : "an input") port named '\(name)' for client '\(client.name)'")
            }
            store(channel, port)
        }
        return names.map { "\(client.name):\($0)" }
    }

    public func stop() {
        engine?.renderState.store(RenderState.silent, ordering: .releasing)
        if activated, let client {
            letTheCycleFinish(client)
            activated = false
            if !JackDeadline.deactivate(client.handle) {
                // A wedged server may still call the process callback: the engine and the
                // client it reads stay alive for the rest of the process, and the close,
                // which would wait on the same server, is not tried.
                JackLibraryMessages.sluiceLogger.warning(
                    "JACK server '\(JackDeadline.serverName(client.server))' did not deactivate client '\(client.name)' within \(JackDeadline.seconds(JackDeadline.closeTimeout)); leaving it")
                if let engine { _ = Unmanaged.passRetained(engine) }
                _ = Unmanaged.passRetained(client)
                client.abandon()
            }
        }
        client?.close()
        client = nil
        // libjack's messages from its process thread, counted there, are said now.
        JackLibraryMessages.realtimeThreads.remove(processThread)
        processThread = 0
        JackLibraryMessages.reportDropped()
    }

    /// [control-thread] Before deactivating: waits until the callback has begun one more
    /// period, so the server has begun a cycle after the one that carried the last audio.
    ///
    /// Why: jack2 switches to the graph without our client at the start of the next cycle even
    /// when a client downstream (a recorder, another program's input) has not yet run the
    /// cycle under way — a deactivation forces the switch and reports no xrun — and that late
    /// client then reads our port as disconnected: silence in place of the last period. Seen
    /// in a test beside two busy loops, with the server's threads not real-time: the last 160
    /// frames of a sound lost in 2 starts of about 1,760, none of 2,500 since (docs/jack.md).
    /// Once a later cycle has begun, every client has either run the earlier one or was
    /// reported late (an xrun). At most a period (or the timeout, for a server that stopped
    /// calling us); none when the server is gone.
    private func letTheCycleFinish(_ client: JackClient) {
        guard let engine, !engine.serverGone.load(ordering: .acquiring) else { return }
        let seen = engine.callbacks.load(ordering: .acquiring)
        let period = Double(jack_get_buffer_size(client.handle)) / Double(max(1, engine.sampleRate))
        let deadline = Self.monotonicSeconds() + max(0.05, 4 * period)
        while engine.callbacks.load(ordering: .acquiring) == seen && Self.monotonicSeconds() < deadline {
            usleep(500)
        }
    }

    /// The engine posts `signal` from JACK's notification thread: the server went away, its
    /// rate changed, a port appeared, a latency changed.
    public func wakesControl(with signal: WakeSignal) -> Bool {
        controlWake = signal
        return true
    }

    /// While a `wait-for-ports` deadline runs: nothing posts its passing.
    public var wantsFrequentLooks: Bool { !awaitedPorts.isEmpty }

    /// The client's JACK process thread while it is activated (0: none).
    private var processThread: UInt = 0

    public var failure: (any Error)? {
        guard let engine else { return nil }
        if engine.serverGone.load(ordering: .acquiring) {
            return JackError("the JACK server went away while playing (client '\(lastClientName ?? requestedName)')")
        }
        let rate = engine.changedRate.load(ordering: .acquiring)
        if rate != 0 {
            return JackError(
                "the JACK server's sample rate changed from \(engine.sampleRate) to \(rate) Hz while playing; "
                    + "the graph was built for \(engine.sampleRate) Hz: start the run again")
        }
        let now = Self.monotonicSeconds()
        for (node, awaited) in awaitedPorts where awaited.deadline <= now {
            let endpoint = (sinks + sources).first { $0.name == node }
            return JackError("\(awaited.problem) after waiting \(endpoint?.waitForPorts ?? 0) s (node '\(node)', wait-for-ports)")
        }
        return nil
    }

    static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Re-applies `connect` rules once a port appeared (a client that restarted): only the
    /// connections missing are made, and a pattern nothing matches yet is not an error. Reads
    /// the sinks' output latency again once JACK's latency callback said it may have changed.
    public func service() {
        guard let engine, activated, let client else { return }
        if engine.portsChanged.exchange(false, ordering: .acquiringAndReleasing) {
            reconnectPassCount.add(1, ordering: .relaxed)
            for (endpoint, ports) in registered where endpoint.connect != ["none"] {
                if let made = try? JackPorts.connect(ports, as: endpoint.direction, following: endpoint.connect, client: client) {
                    connectionsMade[endpoint.name] = made
                    awaitedPorts[endpoint.name] = nil
                }
            }
            engine.outputLatencyStale.store(true, ordering: .relaxed)
        }
        // The latency callback only marks it: reading it there could sleep (setLatencies).
        if engine.outputLatencyStale.exchange(false, ordering: .acquiringAndReleasing) { engine.updateOutputLatency() }
    }

    // MARK: Routing by command

    public func route(_ first: String, _ second: String, connected: Bool) throws -> (from: String, to: String) {
        guard activated, let client else { throw DeviceRoutingError("the JACK client is not running") }
        func port(_ name: String) throws -> (name: String, isOutput: Bool) {
            // A short name is one of this client's ports.
            let full = name.contains(":") ? name : "\(client.name):\(name)"
            guard let handle = jack_port_by_name(client.handle, full) else {
                let own = registered.flatMap(\.ports).map { $0.split(separator: ":").last.map(String.init) ?? $0 }
                throw DeviceRoutingError("JACK has no port '\(full)'; this client's ports: \(own.joined(separator: ", "))")
            }
            return (full, (jack_port_flags(handle) & Int32(JackPortIsOutput.rawValue)) != 0)
        }
        let (a, b) = (try port(first), try port(second))
        guard a.isOutput != b.isOutput else {
            throw DeviceRoutingError("'\(a.name)' and '\(b.name)' are both \(a.isOutput ? "outputs" : "inputs"): join an output to an input")
        }
        let (from, to) = a.isOutput ? (a.name, b.name) : (b.name, a.name)
        guard from.hasPrefix(client.name + ":") || to.hasPrefix(client.name + ":") else {
            throw DeviceRoutingError("neither '\(from)' nor '\(to)' is a port of this graph's client '\(client.name)'")
        }
        let status = connected ? jack_connect(client.handle, from, to) : jack_disconnect(client.handle, from, to)
        // EEXIST: already connected, which is what was asked.
        guard status == 0 || (connected && status == EEXIST) else {
            throw DeviceRoutingError("JACK could not \(connected ? "connect" : "disconnect") '\(from)' and '\(to)' (error \(status))")
        }
        return (from, to)
    }

    // MARK: Figures

    /// The connections made for the endpoint named `node`, as (from, to).
    public func connections(of node: String) -> [(from: String, to: String)] { connectionsMade[node] ?? [] }

    /// The sinks' output latency in frames when playback started (the largest playback
    /// latency over their ports plus one period); nil before.
    public private(set) var startLatency: Int?

    /// [control-thread] The output latency now, in frames, or nil when not running.
    public var outputLatencyFrames: Int? { activated ? engine?.outputLatencyFrames : nil }

    /// JACK's process thread while the client is active (tests watch it).
    /// Called on the starting thread once the client is active and connected, just before
    /// its callback begins rendering: a test that counts the process thread's allocations
    /// starts watching here, so no rendering period goes unwatched. [control-thread]
    @_spi(Testing) public var beforeRendering: (() -> Void)?
    /// [any-thread] Times `service` re-applied the `connect` rules because another client's
    /// port appeared.
    @_spi(Testing) public var reconnectPasses: Int { reconnectPassCount.load(ordering: .relaxed) }
    private let reconnectPassCount = Atomic<Int>(0)
    /// [any-thread] Registrations of the client's own ports JACK told it of, which it let pass.
    @_spi(Testing) public var ownPortNotices: Int { engine?.ownPortNotices.load(ordering: .relaxed) ?? 0 }

    public var realtimeThread: pthread_t? {
        guard activated, let client else { return nil }
        return jack_client_thread_id(client.handle)
    }

    /// Process callbacks so far.
    public var callbackCount: Int { engine?.callbacks.load(ordering: .relaxed) ?? 0 }
    /// xruns the server reported while the client was active.
    public var xruns: Int { engine?.xruns.load(ordering: .relaxed) ?? 0 }
    /// Periods whose capture was dropped because the nodes after a jack.source had not taken
    /// the earlier ones.
    public var overruns: Int { engine?.overrunsOfCycle ?? 0 }
    /// Periods larger than the cycle handles, played as silence.
    public var oversizedPeriods: Int { engine?.oversizedPeriods.load(ordering: .relaxed) ?? 0 }

    /// [control-thread] The callback durations recorded after the first `seen` (nanoseconds;
    /// the latest 65 536 at most), and how many have been recorded in all: the next call's
    /// `seen`.
    public func callbackDurations(after seen: Int) -> (durations: [UInt32], seen: Int) {
        var values: [UInt32] = []
        let count = engine?.durations(after: seen, into: &values) ?? seen
        return (values, count)
    }

    /// [control-thread] The latest callback durations (up to 65 536), in nanoseconds.
    public func takeCallbackDurations() -> [UInt32] {
        var values: [UInt32] = []
        engine?.takeDurations(into: &values)
        return values
    }
}
