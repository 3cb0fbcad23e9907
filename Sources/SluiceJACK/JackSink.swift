import CJack
import Glibc
import SluiceGraph

/// `jack.sink`: plays a graph's audio through output ports of the graph's JACK client.
///
/// The client's process callback renders the sink's `Playhead` into the ports (watermark,
/// sample-accurate underrun fades, cancel fades) after running the nodes in the cycle, and
/// reports what it drained. Every `jack.sink` and `jack.source` of a graph are ports of one
/// client (`JackDevice`). The sample rate and period come from the server: in a live graph,
/// `auto` rates upstream follow the server's rate. Offline (`sluice render`) the sink is stood
/// in for and never touches JACK.
public final class JackSink: DeviceSinkNode, @unchecked Sendable {
    /// The node type. `defaultServer` is the server used when a graph gives none (the
    /// tool's `--server`); nil follows JACK's convention (`$JACK_DEFAULT_SERVER`, then
    /// "default").
    public static func type(defaultServer: String? = nil) -> NodeType {
        NodeType(
            NodeDescriptor(
                typeName: "jack.sink", kind: .sink,
                summary: "Plays through JACK output ports of the graph's client, on the server's clock and rate.",
                inputs: [PortDescriptor("in", .frames, summary: "Float32 frames at the server's rate")],
                parameters: [
                    JackPorts.clientParameter,
                    JackPorts.serverParameter,
                    ParameterDescriptor(
                        "channels", .integer(1...64), default: nil,
                        summary: "Output ports; absent takes the input's channel count."),
                    JackPorts.portsParameter(prefix: "out"),
                    JackPorts.waitForPortsParameter,
                    JackPorts.connectParameter(physical: "playback", others: "input port"),
                ])
        ) { parameters in
            JackSink(
                clientName: parameters.string("client"),
                server: parameters.string("server") ?? defaultServer,
                channels: parameters["channels"] == nil ? nil : parameters.integer("channels"),
                portNames: parameters["ports"] == nil ? nil : parameters.list("ports"),
                connect: parameters.list("connect"), waitForPorts: parameters.double("wait-for-ports"))
        }
    }

    /// The client name this node asks for, or nil (the graph's `playback.client`, then its
    /// name, decide).
    public let clientName: String?
    public let server: String?
    public let channelCount: Int?
    public let portNames: [String]?
    public let connect: [String]
    /// Seconds the `connect` ports may take to appear at the start (`wait-for-ports`).
    public let waitForPorts: Double
    /// The graph's JACK client, once the graph is compiled live.
    public internal(set) var device: JackDevice?
    /// The node's name in its graph, once compiled live.
    var nodeName = "jack.sink"

    public init(clientName: String?, server: String?, channels: Int?, portNames: [String]?, connect: [String], waitForPorts: Double = 0) {
        self.waitForPorts = waitForPorts
        self.clientName = clientName
        self.server = server
        channelCount = channels
        self.portNames = portNames
        self.connect = connect.isEmpty ? ["auto"] : connect
    }

    // MARK: DeviceEndpoint

    public var deviceKey: String { "jack:\(server ?? "")" }

    public static func makeDevice(
        for endpoints: [DeviceEndpointEntry], graphName: String, playback: PlaybackSettings
    ) throws(DeviceConfigurationError) -> any GraphDevice {
        try JackDevice.make(for: endpoints, graphName: graphName, playback: playback, defaultServer: nil)
    }

    // MARK: SinkNode

    public func decidedRate(live: Bool) -> Int? {
        guard live else { return nil }
        return (try? device?.openClient())?.sampleRate
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
        if context.isLive, let serverRate = (try? device?.openClient())?.sampleRate, serverRate != rate {
            throw FormatMismatch(input: 0, required: .sampleRate(serverRate))
        }
        return []
    }

    /// A device sink is played by its graph's JACK client (`JackDevice`), never on its own.
    public func start(_ playhead: Playhead) throws {
        throw JackError("jack.sink plays through its graph's JACK client: run the graph with LiveRun")
    }

    public func stop() {}

    public var deviceFailure: (any Error)? { device?.failure }

    // MARK: Figures (the graph's client's, shared by its endpoints)

    /// The name JACK gave the graph's client, while it is open.
    public var actualClientName: String? { device?.clientName }
    /// The name JACK gave the client the last time it was open (kept after the run).
    public var lastClientName: String? { device?.lastClientName }
    /// The output latency in frames when playback started (the largest playback latency
    /// over the sinks' ports, plus the period rendered ahead).
    public var startLatency: Int? { device?.startLatency }
    /// The output latency now, in frames; nil when not running.
    public var latencyFrames: Int { device?.outputLatencyFrames ?? 0 }
    /// The ports this sink connected its outputs to, for the stats and tests.
    public var connections: [(from: String, to: String)] { device?.connections(of: nodeName) ?? [] }
    /// JACK's process thread for the graph's client, while it is active (tests watch it).
    public var realtimeThread: pthread_t? { device?.realtimeThread }
    /// Process callbacks of the graph's client so far.
    public var callbackCount: Int { device?.callbackCount ?? 0 }
    /// xruns the server reported while the graph's client was active.
    public var xruns: Int { device?.xruns ?? 0 }

    /// [control-thread] Callback durations since the last call, in nanoseconds.
    public func takeCallbackDurations() -> [UInt32] { device?.takeCallbackDurations() ?? [] }

    public func report(into report: inout NodeReport) {
        guard let device else { return }
        report.counters["xruns"] = device.xruns
        report.counters["callbacks"] = device.callbackCount
        report.counters["oversized-periods"] = device.oversizedPeriods
    }
}
