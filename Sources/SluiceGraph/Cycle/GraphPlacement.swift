/// Where each node of a graph runs when a device drives it: inside the device's real-time
/// cycle, or on a thread of its own feeding the cycle through rings.
///
/// The rule (docs/architecture.md, "Nodes in the cycle"):
/// - a device source (`jack.source`) and a device sink (`jack.sink`) run in the cycle;
/// - a processor runs in the cycle when every input comes from a node in the cycle — so
///   everything downstream of a JACK input runs in the same cycle that captured it, and what
///   comes in during a period goes out in that period;
/// - every other processor runs on the graph's worker thread, and every other source on a
///   thread of its own: they may block or take longer than a period (providers, files).
///
/// The edges from the worker into the cycle are the boundary: there the sink's playhead holds
/// the watermark, fades underruns and reports drain events, sample-exactly.
public enum NodePlacement: String, Sendable, Hashable {
    /// In the device's process callback.
    case cycle
    /// On the graph's worker thread (processors fed by a non-real-time source).
    case worker
    /// On the source's own thread.
    case sourceThread = "source-thread"
    /// A sink driven by a clock thread of its own (files, `null.sink`).
    case clockThread = "clock-thread"
}

extension CompiledGraph {
    /// [control-thread] Where each node runs in a live run, in `nodes` order.
    public var placement: [NodePlacement] {
        var placement: [NodePlacement] = []
        placement.reserveCapacity(nodes.count)
        var inputsFrom = [[Int]](repeating: [], count: nodes.count)
        for edge in edges { inputsFrom[edge.toNode].append(edge.fromNode) }
        // `boundary: source` moves the processors fed by sources into the cycle too, when a
        // device runs one.
        let hasDevice = nodes.contains { $0.instance is any DeviceEndpoint }
        let boundaryAtSource = playback.boundary == .source && hasDevice
        // `nodes` is in topological order, so every input's placement is known first.
        for (index, node) in nodes.enumerated() {
            switch node.instance {
            case is any DeviceSourceNode, is any DeviceSinkNode:
                placement.append(.cycle)
            case is any SourceNode:
                placement.append(.sourceThread)
            case is any SinkNode:
                placement.append(.clockThread)
            default:
                let inputs = inputsFrom[index]
                let inCycle = !inputs.isEmpty && inputs.allSatisfy {
                    placement[$0] == .cycle || (boundaryAtSource && placement[$0] == .sourceThread)
                }
                placement.append(inCycle ? .cycle : .worker)
            }
        }
        return placement
    }

    /// [control-thread] For each node, whether everything upstream of it is a device source:
    /// live audio, which a sink plays at once with no watermark.
    func fedByDevicesOnly() -> [Bool] {
        var inputsFrom = [[Int]](repeating: [], count: nodes.count)
        for edge in edges { inputsFrom[edge.toNode].append(edge.fromNode) }
        var fed: [Bool] = []
        for (index, node) in nodes.enumerated() {
            if node.instance is any DeviceSourceNode {
                fed.append(true)
            } else {
                let inputs = inputsFrom[index]
                fed.append(!inputs.isEmpty && inputs.allSatisfy { fed[$0] })
            }
        }
        return fed
    }

    /// [control-thread] Frames by which the nodes in the cycle delay audio from each node to the
    /// input of `node` (at `node`'s input rate), for nodes whose inputs are all in the cycle;
    /// the largest over the paths. Nil when some path into `node` leaves the cycle.
    func cycleLatency(into node: Int, placement: [NodePlacement]) -> [Int: Int] {
        // latencies[i]: for each device source s upstream of node i's output, the frames from
        // s's output to i's output.
        var latencies = [[Int: Int]](repeating: [:], count: nodes.count)
        var inputsFrom = [[Int]](repeating: [], count: nodes.count)
        for edge in edges { inputsFrom[edge.toNode].append(edge.fromNode) }
        for index in 0...node where placement[index] == .cycle {
            let instance = nodes[index].instance
            if instance is any DeviceSourceNode {
                latencies[index] = [index: 0]
                continue
            }
            var merged: [Int: Int] = [:]
            for input in inputsFrom[index] {
                for (source, frames) in latencies[input] { merged[source] = max(merged[source] ?? 0, frames) }
            }
            if index == node { return merged }
            let own = instance.latencyFrames
            latencies[index] = merged.mapValues { $0 + own }
        }
        return [:]
    }
}

extension CompiledGraph {
    /// [control-thread] For each node, whether it runs in the cycle's direct section: the
    /// period's own buffers carry its audio, with no ring on any of its links (docs/architecture.md,
    /// "Frame for frame"). Those are the device sources, the processors that process frame for
    /// frame (`ProcessorNode.processesFrameForFrame`, no latency) and the device sinks they
    /// feed, linked only among themselves: a link to or from any other node keeps its ring,
    /// so both its ends stay out.
    public func directInCycle(placement: [NodePlacement]) -> [Bool] {
        let fed = fedByDevicesOnly()
        var direct: [Bool] = nodes.indices.map { index in
            guard placement[index] == .cycle else { return false }
            let node = nodes[index]
            let framesOnly = (node.inputFormats + node.outputFormats).allSatisfy { $0.medium == .frames }
            switch node.instance {
            case is any DeviceSourceNode:
                return framesOnly
            case is any DeviceSinkNode:
                return framesOnly && fed[index]
            case let processor as any ProcessorNode:
                return framesOnly && processor.processesFrameForFrame && processor.latencyFrames == 0
            default:
                return false
            }
        }
        // A link is direct only when both its ends are: drop, until none is left, every node
        // with a link to or from a node that is not.
        var changed = true
        while changed {
            changed = false
            for edge in edges where direct[edge.fromNode] != direct[edge.toNode] {
                direct[edge.fromNode] = false
                direct[edge.toNode] = false
                changed = true
            }
        }
        return direct
    }
}
