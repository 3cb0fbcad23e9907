/// A graph that passed every check: nodes created, links resolved, formats decided. Run it
/// with `OfflineRenderer` or `LiveRun`.
public final class CompiledGraph: @unchecked Sendable {
    public let description: GraphDescription
    /// Nodes in topological order: every node after all nodes feeding it.
    public let nodes: [CompiledNode]
    public let edges: [CompiledEdge]
    public let playback: PlaybackSettings
    public let isLive: Bool
    /// The devices the graph's endpoints share (one JACK client per server), live graphs only.
    public let devices: [any GraphDevice]

    init(
        description: GraphDescription, nodes: [CompiledNode], edges: [CompiledEdge], playback: PlaybackSettings,
        isLive: Bool, devices: [any GraphDevice] = []
    ) {
        self.devices = devices
        self.description = description
        self.nodes = nodes
        self.edges = edges
        self.playback = playback
        self.isLive = isLive
    }

    public func node(named name: String) -> CompiledNode? { nodes.first { $0.name == name } }

    public var sources: [CompiledNode] { nodes.filter { $0.descriptor.kind == .source } }
    public var sinks: [CompiledNode] { nodes.filter { $0.descriptor.kind == .sink } }

    /// A link's name as counters, events and pages show it: `from.port -> to.port`.
    public func linkName(of edge: CompiledEdge) -> String {
        let from = nodes[edge.fromNode], to = nodes[edge.toNode]
        return "\(from.name).\(from.outputPorts[edge.fromPort].name) -> \(to.name).\(to.inputPorts[edge.toPort].name)"
    }

    /// The text-driven sources `--text` feeds.
    public var textSources: [any TextDrivenSource] { nodes.compactMap { $0.instance as? any TextDrivenSource } }
}

/// One node of a compiled graph.
public struct CompiledNode: @unchecked Sendable {
    public let name: String
    public let descriptor: NodeDescriptor
    public let parameters: NodeParameters
    public let instance: any Node
    /// The ports this node has in this graph (a mixer's first `inputs` inputs).
    public let inputPorts: [PortDescriptor]
    public let outputPorts: [PortDescriptor]
    public let inputFormats: [StreamFormat]
    public let outputFormats: [StreamFormat]
}

/// One link of a compiled graph, with the format it carries.
public struct CompiledEdge: Sendable, Hashable {
    /// Index into `CompiledGraph.nodes`, and port index on that node.
    public let fromNode: Int
    public let fromPort: Int
    public let toNode: Int
    public let toPort: Int
    public let format: StreamFormat
    /// How much the link holds, as its declaration says (nil: the runtime's default).
    public var capacity: LinkCapacity? = nil
    /// What it does when full.
    public var whenFull: LinkPolicy = .block
}
