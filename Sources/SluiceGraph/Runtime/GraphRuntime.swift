import SluiceAudio

/// A compiled graph made runnable: edges allocated, nodes prepared, slots for the worker and
/// the sources, a playhead per sink. The offline driver and a live run both drive one of
/// these; only who calls what, and on which thread, differs.
final class GraphRuntime: @unchecked Sendable {
    let graph: CompiledGraph
    /// For each sink, the index in `sources` of the first source upstream of it (0 when none
    /// is): the source whose production sizes that sink's `auto` watermark.
    let sinkSources: [Int]
    /// The processors the worker (or the offline driver) runs.
    let processors: [ProcessorSlot]
    /// The processors a device's cycle runs (live runs), in its order: between rings or in
    /// its direct section.
    let cycleProcessors: [ProcessorSlot]
    let sources: [SourceSlot]
    let sinks: [SinkSlot]
    /// The live parameter queues of the nodes whose output gains a sink's playhead applies,
    /// with the parameters each queue takes and the index of that sink in `sinks`.
    let outputGainParameters: [(node: String, queue: ParameterQueue, parameters: [Int], sink: Int)]
    /// The links whose policy drops (`when-full`), by name (`from.port -> to.port`), with the
    /// writer that counts their drops.
    let droppingLinks: [(link: String, writer: EdgeWriter)]
    /// Every link that has a buffer (not one carried in place within the cycle), by name, with
    /// its writer: what a page draws as the link's fill.
    let bufferedLinks: [(link: String, writer: EdgeWriter)]
    /// Posted when the worker has something to do (live runs); nil offline.
    let workerWake: WakeSignal?
    private var lastDrySpells: [Int]

    /// The sizes of an inner edge (not into a sink), in units: `minimum`, at least four periods,
    /// and for an edge the cycle writes two of the largest (its reader runs in the same period,
    /// or for the worker soon after); `keep`, what it keeps (its `capacity`, or `defaultKeep`);
    /// `defaultKeep`, the inner edges' default (`innerEdgeSeconds`, at least `minimum`).
    static func innerEdgeSizes(_ edge: CompiledEdge, blockFrames: Int, writtenInCycle: Bool) -> (minimum: Int, keep: Int, defaultKeep: Int) {
        let unitsPerFrame = edge.format.unitsPerSecond / max(1, edge.format.sampleRate)
        let minimum = max(4 * blockFrames * unitsPerFrame, writtenInCycle ? 2 * GraphCycle.maximumFrames * unitsPerFrame : 0)
        let defaultKeep = max(minimum, Int(innerEdgeSeconds * Double(edge.format.unitsPerSecond)))
        let keep = edge.capacity.map { $0.frames(at: edge.format.sampleRate) * unitsPerFrame } ?? defaultKeep
        return (minimum, keep, defaultKeep)
    }

    /// Room of an edge between two nodes, in seconds of audio: enough for several blocks,
    /// small enough that latency and memory stay low.
    static let innerEdgeSeconds = 0.1

    struct SinkSlot {
        let name: String
        let node: any SinkNode
        let playhead: Playhead
        let events: DrainEventReader
        let writer: FrameEdgeWriter
        var controller: FlowController
        /// Fed by a node in the device's cycle (live audio): it plays what the cycle made at
        /// once, after the cycle's latency as silence, with no watermark.
        let fedInCycle: Bool
    }

    /// The real-time part a device runs each period; nil offline, and for live graphs with
    /// no device endpoint.
    let cycle: GraphCycle?
    /// Where each node runs (`graph.nodes` order); every node on the driver's thread offline.
    let placement: [NodePlacement]

    /// - Parameter prepareSinks: false when the sinks' audio goes elsewhere (an offline
    ///   render to a file): they are then never prepared, started or finished.
    /// - Parameter eventWake: posted by every sink's playhead when it posts a drain event.
    init(graph: CompiledGraph, live: Bool, prepareSinks: Bool = true, eventWake: WakeSignal? = nil) throws {
        if !live, let device = graph.nodes.first(where: { $0.instance is any DeviceSourceNode }) {
            throw OfflineDeviceError(node: device.name, type: device.descriptor.typeName)
        }
        self.graph = graph
        let settings = graph.playback
        let placement = live ? graph.placement : Array(repeating: NodePlacement.worker, count: graph.nodes.count)
        self.placement = placement
        let workerWake = live ? WakeSignal() : nil
        self.workerWake = workerWake
        let threadSource: [Bool] = graph.nodes.map { $0.instance is any SourceNode }
        let sourceWakes: [WakeSignal?] = threadSource.map { live && $0 ? WakeSignal() : nil }
        let inCycle: [Bool] = placement.map { live && $0 == .cycle }
        let deviceFed = live ? graph.fedByDevicesOnly() : Array(repeating: false, count: graph.nodes.count)
        // Links between nodes of the direct section are the period's buffers, not rings.
        let direct = live ? graph.directInCycle(placement: placement) : Array(repeating: false, count: graph.nodes.count)
        var linkChannels: [Int] = []
        var inputLinks = [[Int]](repeating: [], count: graph.nodes.count)
        var outputLinks = [[Int]](repeating: [], count: graph.nodes.count)
        var sinkLinks: [Int?] = []

        var writers = [[EdgeWriter?]](repeating: [], count: graph.nodes.count)
        var readers = [[EdgeReader?]](repeating: [], count: graph.nodes.count)
        for (index, node) in graph.nodes.enumerated() {
            writers[index] = Array(repeating: nil, count: node.outputPorts.count)
            readers[index] = Array(repeating: nil, count: node.inputPorts.count)
            inputLinks[index] = Array(repeating: -1, count: node.inputPorts.count)
            outputLinks[index] = Array(repeating: -1, count: node.outputPorts.count)
        }
        var sinks: [SinkSlot] = []
        var sinkNodeIndices: [Int] = []
        var droppingLinks: [(link: String, writer: EdgeWriter)] = []
        var bufferedLinks: [(link: String, writer: EdgeWriter)] = []
        var largestUnits = 0
        // The most one step of a node can write: what its input edge holds (an inner edge's
        // default, or a link's `capacity`). A dropping link has room for that beyond what it
        // keeps, so a reader that keeps up loses nothing to the worker's batches.
        let largestStep = graph.edges.map { edge -> Int in
            guard !(graph.nodes[edge.toNode].instance is any SinkNode) else { return 0 }
            let sizes = Self.innerEdgeSizes(edge, blockFrames: settings.blockFrames, writtenInCycle: inCycle[edge.fromNode])
            return max(sizes.keep, sizes.defaultKeep)
        }.max() ?? 0
        for edge in graph.edges {
            let target = graph.nodes[edge.toNode]
            var link: Int?
            if direct[edge.fromNode] && direct[edge.toNode] {
                link = linkChannels.count
                linkChannels.append(edge.format.channels)
                outputLinks[edge.fromNode][edge.fromPort] = linkChannels.count - 1
                inputLinks[edge.toNode][edge.toPort] = linkChannels.count - 1
            }
            if let sink = target.instance as? any SinkNode {
                let rate = edge.format.sampleRate
                let period = settings.blockFrames
                let fedInCycle = inCycle[edge.fromNode] && deviceFed[edge.fromNode]
                // A sink fed in the cycle holds what one period makes (two of the largest, for
                // a node's look-ahead); one behind the boundary holds `max-buffered`.
                let capacity = fedInCycle
                    ? 2 * GraphCycle.maximumFrames
                    : max(2 * period, inCycle[edge.fromNode] ? 2 * GraphCycle.maximumFrames : 0,
                          Int((settings.maxBuffered * Double(rate)).rounded(.up)))
                let controller = FlowController(
                    strategy: fedInCycle ? .stream : settings.strategy, rate: rate, periodFrames: period,
                    watermarkSeconds: settings.watermark, capacityFrames: capacity)
                let preroll = fedInCycle
                    ? graph.cycleLatency(into: edge.toNode, placement: placement).values.max() ?? 0 : 0
                let (writer, playhead, events) = makeSinkEdge(
                    rate: rate, channels: edge.format.channels, capacityFrames: capacity,
                    fadeFrames: Self.fadeFrames(rate: rate),
                    watermarkFrames: fedInCycle ? 1 : controller.initialWatermark,
                    eventCapacity: 4096,
                    // Whoever fills this edge sleeps until the playhead frees room: the worker,
                    // or a source linked straight to the sink. The cycle fills it itself.
                    workerWake: inCycle[edge.fromNode] ? nil : threadSource[edge.fromNode] ? sourceWakes[edge.fromNode] : workerWake,
                    eventWake: eventWake,
                    prerollFrames: preroll)
                // A live run reports the edge's peak from its commits, not from its looks.
                writer.tracksFill = live && !fedInCycle
                if link == nil { writers[edge.fromNode][edge.fromPort] = writer }
                largestUnits = max(largestUnits, capacity)
                sinkLinks.append(link)
                sinks.append(SinkSlot(
                    name: target.name, node: sink, playhead: playhead, events: events, writer: writer,
                    controller: controller, fedInCycle: fedInCycle))
                sinkNodeIndices.append(edge.toNode)
            } else if link == nil {
                let (minimum, keep, _) = Self.innerEdgeSizes(edge, blockFrames: settings.blockFrames, writtenInCycle: inCycle[edge.fromNode])
                // A dropping edge has room for a writer's step beyond what it keeps (the worker
                // moves audio in batches); a `drop-oldest` reader trims back to `keep` after
                // each of its steps. Offline nothing is late (every branch runs to its end):
                // links keep their capacity, and block.
                let policy = live ? edge.whenFull : .block
                let burst = policy == .block ? 0 : max(minimum, largestStep)
                let units = max(keep, minimum) + burst
                let (writer, reader) = makeEdge(
                    format: edge.format, capacityUnits: units, readerWake: inCycle[edge.toNode] ? nil : workerWake,
                    writerWake: threadSource[edge.fromNode] ? sourceWakes[edge.fromNode] : nil)
                if policy != .block, let frames = writer as? FrameEdgeWriter {
                    frames.setPolicy(policy, keepUnits: keep, burstUnits: burst, scratchUnits: minimum)
                    if policy == .dropOldest { reader.skipsOldest(for: writer) }
                    droppingLinks.append((graph.linkName(of: edge), writer))
                }
                writers[edge.fromNode][edge.fromPort] = writer
                readers[edge.toNode][edge.toPort] = reader
                largestUnits = max(largestUnits, units)
            }
            if let writer = writers[edge.fromNode][edge.fromPort], link == nil {
                bufferedLinks.append((graph.linkName(of: edge), writer))
            }
        }

        // Output gains of nodes before a sink's buffer go to its playhead (OutputGainNode).
        let handovers = live ? Self.outputGainHandovers(in: graph, sinkNodes: sinkNodeIndices, skipping: sinks.map(\.fedInCycle)) : [:]
        var handedOver = [[(node: String, queue: ParameterQueue, gains: any OutputGains, parameters: [Int])]](
            repeating: [], count: sinks.count)

        var processors: [ProcessorSlot] = []
        var cycleProcessors: [ProcessorSlot] = []
        var ringCycleProcessors: [ProcessorSlot] = []
        var directSteps: [DirectSection.Step] = []
        var captures: [GraphCycle.Capture] = []
        var sources: [SourceSlot] = []
        for (index, node) in graph.nodes.enumerated() {
            if node.descriptor.kind == .sink && !prepareSinks { continue }
            try node.instance.prepare(PrepareContext(
                inputFormats: node.inputFormats, outputFormats: node.outputFormats,
                maximumUnits: largestUnits, blockFrames: settings.blockFrames))
            let ports = NodePorts(inputs: node.inputFormats, outputs: node.outputFormats)
            switch node.instance {
            case let source as any SourceNode:
                let output = writers[index][0]!
                sources.append(SourceSlot(
                    name: node.name, node: source, ports: ports, output: output, wake: sourceWakes[index],
                    chunked: !sinks.contains { $0.writer === output }))
                // Text arriving wakes the source's thread, which idles between looks at a
                // provider that had nothing (LiveRun.runSource).
                if let text = source as? any TextDrivenSource, let wake = sourceWakes[index] {
                    text.onTextArrival { wake.post() }
                }
            case let capture as any DeviceSourceNode:
                if direct[index] {
                    captures.append(GraphCycle.Capture(
                        name: node.name, node: capture, writer: nil, channels: capture.channelCount, directLink: outputLinks[index][0]))
                    continue
                }
                guard let writer = writers[index][0] as? FrameEdgeWriter else { continue }
                captures.append(GraphCycle.Capture(name: node.name, node: capture, writer: writer, channels: capture.channelCount, directLink: nil))
            case let processor as any ProcessorNode where direct[index]:
                let slot = ProcessorSlot(name: node.name, node: processor, ports: ports, inputs: [], outputs: [])
                directSteps.append(DirectSection.Step(slot: slot, inputs: inputLinks[index], outputs: outputLinks[index]))
                cycleProcessors.append(slot)
            case let processor as any ProcessorNode:
                var keepsParameters = true
                if let sink = handovers[index], let gains = processor as? any OutputGainNode {
                    let parameters = gains.outputGainParameters
                    handedOver[sink].append((
                        node.name, ParameterQueue(wake: nil), gains.handOverOutputGains(sampleRate: sinks[sink].playhead.sampleRate),
                        parameters))
                    keepsParameters = node.descriptor.parameters.indices.contains {
                        node.descriptor.parameters[$0].isLive && !parameters.contains($0)
                    }
                }
                let slot = ProcessorSlot(
                    name: node.name, node: processor, ports: ports,
                    inputs: readers[index].map { $0! }, outputs: writers[index].map { $0! },
                    parameterWake: inCycle[index] ? nil : workerWake, parametersElsewhere: !keepsParameters)
                if inCycle[index] {
                    cycleProcessors.append(slot)
                    ringCycleProcessors.append(slot)
                } else {
                    processors.append(slot)
                }
            default:
                break
            }
        }
        // Each sink's own source sizes its `auto` watermark: with many voices in one graph, the
        // primary source alone is no measure of a voice that waits its turn for a shared
        // engine (espeak-ng synthesises one voice at a time).
        let sourceNodes = graph.nodes.indices.filter { graph.nodes[$0].instance is any SourceNode }
        var feeders = [[Int]](repeating: [], count: graph.nodes.count)
        for edge in graph.edges { feeders[edge.toNode].append(edge.fromNode) }
        sinkSources = sinkNodeIndices.map { sink in
            var upstream: Set<Int> = [sink]
            var frontier = [sink]
            while let node = frontier.popLast() {
                for feeder in feeders[node] where upstream.insert(feeder).inserted { frontier.append(feeder) }
            }
            return sourceNodes.firstIndex { upstream.contains($0) } ?? 0
        }
        for (sink, nodes) in handedOver.enumerated() where !nodes.isEmpty {
            sinks[sink].playhead.outputGains = PlayheadGains(
                channels: sinks[sink].playhead.channels, nodes: nodes.map { ($0.node, $0.queue, $0.gains) })
        }
        self.droppingLinks = droppingLinks
        self.bufferedLinks = bufferedLinks
        outputGainParameters = handedOver.enumerated().flatMap { sink, nodes in
            nodes.map { (node: $0.node, queue: $0.queue, parameters: $0.parameters, sink: sink) }
        }
        self.processors = processors
        self.cycleProcessors = cycleProcessors
        self.sources = sources
        self.sinks = sinks
        lastDrySpells = Array(repeating: 0, count: sinks.count)

        let deviceSinks = sinks.indices.filter { sinks[$0].node is any DeviceSinkNode }
        if live && (!captures.isEmpty || !deviceSinks.isEmpty) {
            let captureNodes = graph.nodes.indices.filter { graph.nodes[$0].instance is any DeviceSourceNode }
            let latencies: [[Int?]] = deviceSinks.map { sink in
                guard sinks[sink].fedInCycle else { return Array(repeating: nil, count: captureNodes.count) }
                let frames = graph.cycleLatency(into: sinkNodeIndices[sink], placement: placement)
                return captureNodes.map { frames[$0] }
            }
            cycle = GraphCycle(
                processors: ringCycleProcessors,
                direct: linkChannels.isEmpty ? nil : DirectSection(linkChannels: linkChannels, steps: directSteps),
                captures: captures,
                playbacks: deviceSinks.map {
                    GraphCycle.Playback(name: sinks[$0].name, node: sinks[$0].node, playhead: sinks[$0].playhead, directLink: sinkLinks[$0])
                },
                latencies: latencies)
        } else {
            cycle = nil
        }
    }

    /// [control-thread] The nodes whose output gains a sink's playhead applies (node index →
    /// index in `sinkNodes`): walking up from each sink that plays from a buffer (not
    /// `skipping`), through nodes with one input link and one output link, each
    /// `OutputGainNode` met, as long as the nodes between it and the sink are
    /// `GainTransparentNode`s — that keep channels apart, for gains that differ by channel.
    static func outputGainHandovers(in graph: CompiledGraph, sinkNodes: [Int], skipping: [Bool]) -> [Int: Int] {
        var inputs = [[Int]](repeating: [], count: graph.nodes.count)
        var outputCount = [Int](repeating: 0, count: graph.nodes.count)
        for edge in graph.edges {
            inputs[edge.toNode].append(edge.fromNode)
            outputCount[edge.fromNode] += 1
        }
        var handovers: [Int: Int] = [:]
        for (sink, sinkNode) in sinkNodes.enumerated() where !skipping[sink] && inputs[sinkNode].count == 1 {
            var node = inputs[sinkNode][0]
            var channelsMixed = false
            while inputs[node].count == 1 && outputCount[node] == 1, graph.nodes[node].instance is any ProcessorNode {
                let instance = graph.nodes[node].instance
                if let gains = instance as? any OutputGainNode, handovers[node] == nil,
                    gains.outputGainsAreUniform || !channelsMixed
                {
                    handovers[node] = sink
                }
                guard let transparent = instance as? any GainTransparentNode else { break }
                channelsMixed = channelsMixed || !transparent.keepsChannelsApart
                node = inputs[node][0]
            }
        }
        return handovers
    }

    /// Underrun and cancel fades: 5 ms, as short as a fade can be without a click.
    static func fadeFrames(rate: Int) -> Int { max(16, rate / 200) }

    // MARK: Worker

    /// Moves audio through every processor in topological order until nothing moves.
    /// Returns whether anything moved.
    @discardableResult
    func workerPass() -> Bool {
        var movedAtAll = false
        var moved = true
        while moved {
            moved = false
            for index in processors.indices {
                let slot = processors[index]
                var rounds = 0
                while slot.step() {
                    moved = true
                    rounds += 1
                    if rounds == 64 { break }
                }
            }
            movedAtAll = movedAtAll || moved
        }
        if !movedAtAll && sinkStarved() {
            for index in processors.indices where processors[index].drain() { movedAtAll = true }
            if movedAtAll { workerPass() }
        }
        return movedAtAll
    }

    /// The `auto` strategy: re-sizes each buffering sink's watermark from the primary
    /// source's production so far (docs/flow-control.md). Reads only the source's atomics, so
    /// a live run's control thread may call it. Index loops: the offline driver calls this
    /// every tick.
    func updateAutoWatermarks(at time: Double) {
        guard !sources.isEmpty else { return }
        for index in sinks.indices {
            let sink = sinks[index]
            let source = sources[sinkSources[index]]
            guard sink.controller.strategy == .auto, sink.playhead.state == .buffering else { continue }
            let played = Double(sink.playhead.playedFrames) / Double(sink.playhead.sampleRate)
            // Production is measured from the current reply's first output (the stream's, but in
            // a served graph): time before it (waiting for text that had not arrived) says
            // nothing about how fast the source synthesises.
            guard let first = source.segmentFirstOutputGraphTime else { continue }
            if let watermark = sink.controller.autoWatermark(
                producedSeconds: source.segmentProducedSeconds, sourceFinished: source.finished.load(ordering: .acquiring),
                elapsed: time - first, expectedDuration: source.node.expectedDuration, playedSeconds: played) {
                sink.playhead.watermarkFrames = watermark
            }
        }
    }

    /// Whether a sink has run dry since the last look (an underrun, or waiting for the next utterance).
    private func sinkStarved() -> Bool {
        var starved = false
        for index in sinks.indices {
            let sink = sinks[index]
            let drySpells = sink.playhead.drySpells
            if drySpells != lastDrySpells[index] {
                lastDrySpells[index] = drySpells
                starved = true
            }
        }
        return starved
    }

    // MARK: Teardown

    func deactivate() {
        for node in graph.nodes { node.instance.deactivate() }
    }

    var droppedPartialFrames: Int {
        var total = 0
        for node in graph.nodes {
            var report = NodeReport()
            node.instance.report(into: &report)
            total += report.droppedPartialFrames
        }
        return total
    }

    var counters: [String: Int] {
        var all: [String: Int] = [:]
        for node in graph.nodes {
            var report = NodeReport()
            node.instance.report(into: &report)
            if report.droppedPartialFrames > 0 { all["\(node.name).dropped-partial-frames"] = report.droppedPartialFrames }
            for (key, value) in report.counters { all["\(node.name).\(key)"] = value }
        }
        return all
    }
}

/// An offline render of a graph that records from a device (`jack.source`): there is no
/// device to record from.
public struct OfflineDeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var node: String
    public var type: String

    public var description: String {
        "node '\(node)' (\(type)) records from a live device, so the graph plays only live: run it with `sluice run`, not render"
    }
}
