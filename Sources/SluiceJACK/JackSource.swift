import CJack
import Glibc
import SluiceGraph

/// `jack.source`: brings JACK input ports of the graph's client into the graph (live routing:
/// JACK in → nodes → JACK out). It has no thread: each period the client's process callback
/// writes the ports, interleaved, into the node's output edge, and the nodes downstream run in
/// the same callback, so a chain to a `jack.sink` adds only the latency its nodes declare. It
/// never ends by itself; the run ends when it is interrupted.
public final class JackSource: DeviceSourceNode, @unchecked Sendable {
    public static func type(defaultServer: String? = nil) -> NodeType {
        NodeType(
            NodeDescriptor(
                typeName: "jack.source", kind: .source,
                summary: "Records JACK input ports of the graph's client into the graph, in the JACK cycle; runs until interrupted.",
                outputs: [PortDescriptor("out", .frames, summary: "Float32 frames at the server's rate")],
                parameters: [
                    JackPorts.clientParameter,
                    JackPorts.serverParameter,
                    ParameterDescriptor(
                        "channels", .integer(1...64), default: .integer(2),
                        summary: "Input ports, and the channels of the stream."),
                    JackPorts.portsParameter(prefix: "in"),
                    JackPorts.waitForPortsParameter,
                    JackPorts.connectParameter(physical: "capture", others: "output port"),
                ])
        ) { parameters in
            JackSource(
                clientName: parameters.string("client"),
                server: parameters.string("server") ?? defaultServer,
                channels: parameters.integer("channels"),
                portNames: parameters["ports"] == nil ? nil : parameters.list("ports"),
                connect: parameters.list("connect"), waitForPorts: parameters.double("wait-for-ports"))
        }
    }

    public let clientName: String?
    public let server: String?
    public let channels: Int
    public let portNames: [String]?
    public let connect: [String]
    /// Seconds the `connect` ports may take to appear at the start (`wait-for-ports`).
    public let waitForPorts: Double
    /// The graph's JACK client, once the graph is compiled live.
    public internal(set) var device: JackDevice?
    /// The node's name in its graph, once compiled live.
    var nodeName = "jack.source"

    public init(clientName: String?, server: String?, channels: Int, portNames: [String]?, connect: [String], waitForPorts: Double = 0) {
        self.waitForPorts = waitForPorts
        self.clientName = clientName
        self.server = server
        self.channels = channels
        self.portNames = portNames
        self.connect = connect.isEmpty ? ["auto"] : connect
    }

    public var channelCount: Int { channels }

    /// The rate a graph checked offline assumes when no sink decides one.
    static let offlineRate = 48_000

    public var deviceKey: String { "jack:\(server ?? "")" }

    public static func makeDevice(
        for endpoints: [DeviceEndpointEntry], graphName: String, playback: PlaybackSettings
    ) throws(DeviceConfigurationError) -> any GraphDevice {
        try JackDevice.make(for: endpoints, graphName: graphName, playback: playback, defaultServer: nil)
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        if let portNames, portNames.count != channels {
            throw FormatMismatch(input: 0, required: .parameter(
                name: "ports", problem: "`ports` names \(portNames.count) ports for \(channels) channels",
                fix: "give one port name per channel"))
        }
        guard let device else {
            // Checked or drawn offline (`sluice check`, `dot`): the server decides the rate
            // when the graph runs; until then it stands at the stand-in rate the checker
            // gives, else the sinks'. An offline render refuses the graph (it has no device to
            // record from).
            return [.frames(rate: context.deviceRate ?? context.downstreamRate ?? Self.offlineRate, channels: channels)]
        }
        do {
            return [.frames(rate: try device.openClient().sampleRate, channels: channels)]
        } catch {
            throw FormatMismatch(input: 0, required: .parameter(
                name: "server", problem: error.message, fix: "start a JACK server before running a graph with jack.source"))
        }
    }

    /// The ports this source connected its inputs to, for the stats and tests.
    public var connections: [(from: String, to: String)] { device?.connections(of: nodeName) ?? [] }

    public func report(into report: inout NodeReport) {
        if let overruns = device?.overruns { report.counters["overruns"] = overruns }
    }
}
