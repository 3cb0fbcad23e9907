import CJack
import Glibc
import SluiceGraph
import Synchronization

/// `jack.sink`: plays a graph's audio through JACK output ports.
///
/// The process callback renders the sink's `Playhead` into the port buffers (watermark,
/// sample-accurate underrun fades, cancel fades) and reports what it drained. The sample rate
/// and period come from the server: in a live graph, `auto` rates upstream follow the server's
/// rate. Offline (`sluice render`) the sink is stood in for and never touches JACK.
public final class JackSink: SinkNode, @unchecked Sendable {
    /// The node type. `defaultServer` is the server used when a graph gives none (the
    /// tool's `--server`); nil follows JACK's convention (`$JACK_DEFAULT_SERVER`, then
    /// "default").
    public static func type(defaultServer: String? = nil) -> NodeType {
        NodeType(
            NodeDescriptor(
                typeName: "jack.sink", kind: .sink,
                summary: "Plays through JACK output ports, on the server's clock and rate.",
                inputs: [PortDescriptor("in", .frames, summary: "Float32 frames at the server's rate")],
                parameters: [
                    JackPorts.clientParameter(default: "sluice"),
                    JackPorts.serverParameter,
                    ParameterDescriptor(
                        "channels", .integer(1...64), default: nil,
                        summary: "Output ports; absent takes the input's channel count."),
                    JackPorts.portsParameter(prefix: "out"),
                    JackPorts.connectParameter(physical: "playback", others: "input port"),
                ])
        ) { parameters in
            JackSink(
                clientName: parameters.string("client") ?? "sluice",
                server: parameters.string("server") ?? defaultServer,
                channels: parameters["channels"] == nil ? nil : parameters.integer("channels"),
                portNames: parameters["ports"] == nil ? nil : parameters.list("ports"),
                connect: parameters.list("connect"))
        }
    }

    public let clientName: String
    public let server: String?
    public let channelCount: Int?
    public let portNames: [String]?
    public let connect: [String]

    private var client: JackClient?
    private var engine: JackSinkEngine?
    private var activated = false
    /// The ports this sink connected its outputs to, for the stats and tests.
    public private(set) var connections: [(from: String, to: String)] = []

    public init(clientName: String, server: String?, channels: Int?, portNames: [String]?, connect: [String]) {
        self.clientName = clientName
        self.server = server
        channelCount = channels
        self.portNames = portNames
        self.connect = connect.isEmpty ? ["auto"] : connect
    }

    /// The name JACK gave the client, once it is open.
    public var actualClientName: String? { client?.name }
    /// `latencyFrames` as it was when playback started (kept after `stop`).
    public private(set) var startLatency: Int?
    /// The name JACK gave the client the last time it was open (kept after `stop`).
    public private(set) var lastClientName: String?

    /// [control] Opens the client (once).
    @discardableResult
    public func openClient() throws(JackError) -> JackClient {
        if let client { return client }
        let opened = try JackClient(name: clientName, server: server)
        client = opened
        lastClientName = opened.name
        return opened
    }

    public func decidedRate(live: Bool) -> Int? {
        guard live else { return nil }
        return (try? openClient())?.sampleRate
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        guard case .frames(let rate, let channels) = inputs[0] else {
            throw FormatMismatch(input: 0, required: .medium(.frames))
        }
        if let channelCount, channelCount != channels { throw FormatMismatch(input: 0, required: .channels(channelCount)) }
        if let portNames, portNames.count != channels {
            throw FormatMismatch(input: 0, required: .parameter(
                name: "ports", problem: "`ports` names \(portNames.count) ports for \(channels) channels",
                fix: "give one port name per channel"))
        }
        if context.isLive, let serverRate = client?.sampleRate, serverRate != rate {
            throw FormatMismatch(input: 0, required: .sampleRate(serverRate))
        }
        return []
    }

    public func prepare(_ context: PrepareContext) throws {
        guard case .frames(_, let channels)? = context.inputFormats.first else { return }
        engine = JackSinkEngine(channels: channels)
    }

    public func start(_ playhead: Playhead) throws {
        guard let engine else { throw JackError("jack.sink started before it was prepared") }
        let client = try openClient()
        let handle = client.handle
        for channel in 0..<engine.channels {
            let name = portNames?[channel] ?? "out_\(channel + 1)"
            guard let port = jack_port_register(handle, name, JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0) else {
                throw JackError("JACK refused an output port named '\(name)' for client '\(client.name)'")
            }
            engine.ports[channel] = port
        }
        engine.playhead = Unmanaged.passUnretained(playhead)
        let context = Unmanaged.passUnretained(engine).toOpaque()
        jack_set_process_callback(handle, sluiceJackSinkProcess, context)
        jack_set_xrun_callback(handle, sluiceJackSinkXrun, context)
        jack_on_shutdown(handle, sluiceJackSinkShutdown, context)
        Playhead.warmUp(channels: engine.channels)
        guard jack_activate(handle) == 0 else { throw JackError("JACK did not activate client '\(client.name)'") }
        activated = true
        try connectPorts(client, engine)
        startLatency = latencyFrames
        engine.rendering.store(true, ordering: .releasing)
    }

    private func connectPorts(_ client: JackClient, _ engine: JackSinkEngine) throws(JackError) {
        let ours = (0..<engine.channels).map { "\(client.name):\(portNames?[$0] ?? "out_\($0 + 1)")" }
        connections = try JackPorts.connect(ours, as: .playback, following: connect, client: client)
    }

    public func stop() {
        engine?.rendering.store(false, ordering: .releasing)
        if activated, let client {
            jack_deactivate(client.handle)
            activated = false
        }
        engine?.playhead = nil
        client?.close()
        client = nil
    }

    public var deviceFailure: (any Error)? {
        guard let engine, engine.serverGone.load(ordering: .acquiring) else { return nil }
        return JackError("the JACK server went away while playing (client '\(actualClientName ?? clientName)')")
    }

    /// JACK's process thread for this client, while it is active (tests watch it).
    public var realtimeThread: pthread_t? {
        guard activated, let client else { return nil }
        return jack_client_thread_id(client.handle)
    }

    /// Frames from the sink's ports to the speakers, as the server reports them (the largest
    /// playback latency over the ports, plus the period the callback fills ahead), once
    /// started; nil before.
    public var latencyFrames: Int? {
        guard activated, let client, let engine else { return nil }
        var largest: jack_nframes_t = 0
        for channel in 0..<engine.channels {
            guard let port = engine.ports[channel] else { continue }
            var range = jack_latency_range_t()
            jack_port_get_latency_range(port, JackPlaybackLatency, &range)
            largest = max(largest, range.max)
        }
        return Int(largest) + client.bufferSize
    }

    /// Process callbacks run so far.
    public var callbackCount: Int { engine?.callbacks.load(ordering: .relaxed) ?? 0 }

    /// xruns the server reported while this sink was active.
    public var xruns: Int { engine?.xruns.load(ordering: .relaxed) ?? 0 }

    /// [control] Callback durations since the last call, in nanoseconds.
    public func takeCallbackDurations() -> [UInt32] {
        var values: [UInt32] = []
        engine?.takeDurations(into: &values)
        return values
    }

    public func report(into report: inout NodeReport) {
        guard let engine else { return }
        report.counters["xruns"] = engine.xruns.load(ordering: .relaxed)
        report.counters["callbacks"] = engine.callbacks.load(ordering: .relaxed)
        report.counters["oversized-periods"] = engine.oversizedPeriods.load(ordering: .relaxed)
    }
}
