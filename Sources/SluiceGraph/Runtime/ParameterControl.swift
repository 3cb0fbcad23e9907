import Glibc

/// Changes live parameters of a running graph (`LiveRun.parameters`): checks a change against
/// the node's descriptor, queues it for the thread that runs the node, and waits until that
/// thread has applied it, to say at which frame.
///
/// Threading: [control-thread], from any number of threads at once.
public final class ParameterControl: Sendable {
    struct Target: Sendable {
        let name: String
        let descriptor: NodeDescriptor
        /// Where changes go: the node's own queue, and the playhead's for the output gains it
        /// handed over (by parameter index), each with where a change is heard.
        let own: Route?
        let handed: [Int: Route]

        func route(_ parameter: Int) -> Route? { handed[parameter] ?? own }
    }

    struct Route: Sendable {
        let queue: ParameterQueue
        /// Where the change is heard, when the node's output reaches a sink.
        let heard: HeardAt?
    }

    /// How a frame of a node's output maps to a sink's stream: through the nodes between
    /// (their latency, their rate changes), or the same frame when the sink's playhead applies
    /// the change itself.
    struct HeardAt: Sendable {
        let playhead: Playhead
        /// Sink frames per node output frame (a resampler between changes it).
        let ratio: Double
        /// What the nodes between delay the audio by, in the sink's frames.
        let latencyFrames: Int
    }

    private let targets: [String: Target]
    /// Every node in the graph, for "did you mean" and "has no live parameters".
    private let nodeNames: [String]

    init(runtime: GraphRuntime) {
        var own: [String: Route] = [:]
        var handed: [String: [Int: Route]] = [:]
        let slots = (runtime.processors + runtime.cycleProcessors).map { ($0.name, $0.parameters) } + runtime.sources.map { ($0.name, $0.parameters) }
        for (name, parameters) in slots {
            guard let queue = parameters, let index = runtime.graph.nodes.firstIndex(where: { $0.name == name }) else { continue }
            own[name] = Route(queue: queue, heard: Self.heard(from: index, in: runtime))
        }
        // Output gains a playhead applies: their frames are the sink's own.
        for gains in runtime.outputGainParameters {
            let route = Route(queue: gains.queue, heard: HeardAt(playhead: runtime.sinks[gains.sink].playhead, ratio: 1, latencyFrames: 0))
            for parameter in gains.parameters { handed[gains.node, default: [:]][parameter] = route }
        }
        var targets: [String: Target] = [:]
        for node in runtime.graph.nodes where own[node.name] != nil || handed[node.name] != nil {
            targets[node.name] = Target(name: node.name, descriptor: node.descriptor, own: own[node.name], handed: handed[node.name] ?? [:])
        }
        self.targets = targets
        nodeNames = runtime.graph.nodes.map(\.name)
    }

    /// [control-thread] Where node `index`'s output is heard: the sink reached by following
    /// each node's first output link, with the latency and rate changes of the nodes between;
    /// nil when it reaches no sink with a playhead.
    private static func heard(from index: Int, in runtime: GraphRuntime) -> HeardAt? {
        let graph = runtime.graph
        guard case .frames(let nodeRate, _)? = graph.nodes[index].outputFormats.first else { return nil }
        var node = index
        var latency = 0.0  // in seconds: the rates between may differ
        while let edge = graph.edges.first(where: { $0.fromNode == node }) {
            let next = edge.toNode
            if let sink = runtime.sinks.first(where: { $0.name == graph.nodes[next].name }) {
                let rate = Double(sink.playhead.sampleRate)
                return HeardAt(
                    playhead: sink.playhead, ratio: rate / Double(nodeRate), latencyFrames: Int((latency * rate).rounded()))
            }
            guard case .frames(let rate, _)? = graph.nodes[next].outputFormats.first, rate > 0 else { return nil }
            latency += Double(graph.nodes[next].instance.latencyFrames) / Double(rate)
            node = next
        }
        return nil
    }

    /// [control-thread] The sink's stream frame at which a change of `parameter` applied at
    /// `frame` (`Applied.frame`) is heard, and the seconds from now until then (0 when already
    /// heard); nil when the node's output reaches no sink. Exact for a gain its sink's playhead
    /// applies; for other nodes the nodes' reported latencies and rates between, as the
    /// compiled graph states them.
    public func heard(node: String, parameter: String, frame: Int) -> (frame: Int, inSeconds: Double)? {
        guard let target = targets[node], let index = target.descriptor.parameters.firstIndex(where: { $0.name == parameter }),
            let heard = target.route(index)?.heard
        else { return nil }
        let sinkFrame = Int((Double(frame) * heard.ratio).rounded()) + heard.latencyFrames
        let playhead = heard.playhead
        let ahead = sinkFrame - playhead.playedFrames + playhead.outputLatencyFrames
        return (sinkFrame, max(0, Double(ahead) / Double(playhead.sampleRate)))
    }

    /// Where a change was applied.
    public struct Applied: Sendable, Hashable {
        public var node: String
        public var parameter: String
        public var value: Double
        /// The node's output frame, counted since its stream began, from which the new value
        /// holds (a ramp starts there). Nil when the node ran no period within the wait (a
        /// graph whose audio has stopped): the change is queued and applies when it runs.
        public var frame: Int?
        /// The change's number among the node's, for `appliedFrame(of:)` later.
        public var sequence: UInt64 = 0
    }

    /// [control-thread] The frame a change returned without one (`Applied.frame` nil) was
    /// applied at, once the node has run it; nil until then, or for an unknown node.
    public func appliedFrame(of change: Applied) -> Int? {
        guard let target = targets[change.node],
            let index = target.descriptor.parameters.firstIndex(where: { $0.name == change.parameter })
        else { return nil }
        return target.route(index)?.queue.acknowledgedFrame(of: change.sequence)
    }

    /// The live parameters of each node that has any, by node name.
    public var liveParameters: [String: [ParameterDescriptor]] {
        targets.mapValues { $0.descriptor.parameters.filter(\.isLive) }
    }

    /// Current values are the nodes' own; this only queues changes. Checks `value` and queues
    /// it; then waits up to `timeout` seconds for the acknowledgement.
    /// - Parameter atFrame: the node's output frame to apply it at (counted since its stream
    ///   began; a frame `set` replied with earlier says where the stream is), or nil for at
    ///   once. A frame already passed applies at once.
    public func set(node: String, parameter: String, value: ParameterValue, atFrame: Int? = nil, timeout: Double = 1)
        throws(ParameterControlError) -> Applied
    {
        guard let target = targets[node] else {
            if nodeNames.contains(node) {
                throw .noLiveParameters(node: node, liveNodes: targets.keys.sorted())
            }
            throw .unknownNode(node, suggestions: closestNames(to: node, among: nodeNames))
        }
        let parameters = target.descriptor.parameters
        guard let index = parameters.firstIndex(where: { $0.name == parameter }) else {
            throw .unknownParameter(
                node: node, parameter: parameter,
                suggestions: closestNames(to: parameter, among: parameters.filter(\.isLive).map(\.name)))
        }
        let descriptor = parameters[index]
        guard descriptor.isLive else {
            throw .notLive(node: node, parameter: parameter, live: parameters.filter(\.isLive).map(\.name))
        }
        let number: Double
        switch value {
        case .number(let value): number = value
        case .integer(let value): number = Double(value)
        default: throw .notANumber(node: node, parameter: parameter, value: value.description)
        }
        switch descriptor.type {
        case .number(let range) where !range.contains(number) || !number.isFinite:
            throw .outOfRange(node: node, parameter: parameter, value: number, type: descriptor.type)
        case .integer(let range) where number != number.rounded() || !range.contains(Int(exactly: number) ?? .min):
            throw .outOfRange(node: node, parameter: parameter, value: number, type: descriptor.type)
        default:
            break
        }
        guard let queue = target.route(index)?.queue else {
            throw .notLive(node: node, parameter: parameter, live: parameters.filter(\.isLive).map(\.name))
        }
        guard let sequence = queue.send(parameter: index, value: number, atFrame: max(0, atFrame ?? 0)) else {
            throw .queueFull(node: node)
        }
        var applied = Applied(node: node, parameter: parameter, value: number, frame: nil, sequence: sequence)
        let deadline = monotonicSeconds() + timeout
        while applied.frame == nil {
            // Acknowledgements arrive in order; a concurrent caller may take this one's, so each
            // keeps the ones it took in the queue's log.
            applied.frame = queue.acknowledgedFrame(of: sequence)
            if applied.frame != nil || monotonicSeconds() >= deadline { break }
            usleep(500)
        }
        return applied
    }
}

/// Why a live parameter change was refused. The graph keeps playing.
public enum ParameterControlError: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownNode(String, suggestions: [String])
    case noLiveParameters(node: String, liveNodes: [String])
    case unknownParameter(node: String, parameter: String, suggestions: [String])
    case notLive(node: String, parameter: String, live: [String])
    case notANumber(node: String, parameter: String, value: String)
    case outOfRange(node: String, parameter: String, value: Double, type: ParameterType)
    case queueFull(node: String)

    /// A stable, machine-readable name, for replies.
    public var code: String {
        switch self {
        case .unknownNode: "unknown-node"
        case .noLiveParameters: "no-live-parameters"
        case .unknownParameter: "unknown-parameter"
        case .notLive: "not-live"
        case .notANumber: "not-a-number"
        case .outOfRange: "out-of-range"
        case .queueFull: "queue-full"
        }
    }

    public var description: String {
        func hint(_ names: [String]) -> String {
            names.isEmpty ? "" : "; did you mean " + names.map { "'\($0)'" }.joined(separator: " or ") + "?"
        }
        func list(_ names: [String]) -> String {
            names.isEmpty ? "none" : names.map { "'\($0)'" }.joined(separator: ", ")
        }
        switch self {
        case .unknownNode(let node, let suggestions):
            return "the graph has no node '\(node)'\(hint(suggestions))"
        case .noLiveParameters(let node, let liveNodes):
            return "node '\(node)' has no parameter that can change while it plays; nodes that have: \(list(liveNodes))"
        case .unknownParameter(let node, let parameter, let suggestions):
            return "node '\(node)' has no parameter '\(parameter)'\(hint(suggestions))"
        case .notLive(let node, let parameter, let live):
            return "'\(parameter)' of node '\(node)' is fixed while the graph plays; live ones: \(list(live))"
        case .notANumber(let node, let parameter, let value):
            return "'\(parameter)' of node '\(node)' takes a number, not '\(value)'"
        case .outOfRange(let node, let parameter, let value, let type):
            return "\(format(value)) is out of range for '\(parameter)' of node '\(node)': it takes a \(type)"
        case .queueFull(let node):
            return "node '\(node)' has \(ParameterQueue.capacity) changes waiting; send fewer, or wait for it to run"
        }
    }
}
