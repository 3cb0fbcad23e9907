/// Checks a `GraphDescription` against a `NodeRegistry` and builds a `CompiledGraph`: node
/// types and parameters, names, links and ports, cycles, and the format on every link (with
/// `auto` rates taken from the sink downstream). Every problem becomes a `GraphDiagnostic`
/// naming the place in the file and what would fix it; all are reported together.
public struct GraphCompiler {
    public struct Options: Sendable {
        /// Whether a live device will drive the graph (nodes that are not real-time safe
        /// refuse). Offline rendering is not live.
        public var isLive: Bool
        /// Plays every sink at this rate (`sluice render --rate`), in place of a sink's own
        /// `rate` parameter; nil keeps the sinks' own.
        public var sinkRate: Int?
        /// Checked offline (not live): the rate every device endpoint stands at, in place of a
        /// server's — a device sink decides it for the `auto` rates upstream, a device source
        /// records at it. `sluice dot` checks a graph at two such rates to tell the links whose
        /// rate a server decides (drawn `auto`) from the rest. Nil: offline, a device sink
        /// decides no rate (its input's stands) and a device source takes the sinks'.
        public var deviceRate: Int?

        public init(isLive: Bool = false, sinkRate: Int? = nil, deviceRate: Int? = nil) {
            self.isLive = isLive
            self.sinkRate = sinkRate
            self.deviceRate = deviceRate
        }
    }

    public let registry: NodeRegistry
    public let options: Options

    public init(registry: NodeRegistry, options: Options = Options()) {
        self.registry = registry
        self.options = options
    }

    /// - Throws: every problem found, in file order.
    public func compile(_ description: GraphDescription) throws(GraphDiagnostics) -> CompiledGraph {
        var state = CompileState(description: description.insertingSinkMeters(registry: registry))
        checkLimits(&state)
        guard state.diagnostics.isEmpty else { throw state.sortedDiagnostics }
        createNodes(&state)
        resolveLinks(&state)
        guard state.diagnostics.isEmpty else { throw state.sortedDiagnostics }
        // Cycles first: a cycle leaves ports that look unlinked, and naming the cycle is the
        // useful message.
        guard let order = topologicalOrder(&state) else { throw state.sortedDiagnostics }
        checkCompleteness(&state)
        guard state.diagnostics.isEmpty else { throw state.sortedDiagnostics }
        // Devices before formats: a JACK sink's rate is its client's, shared by the graph.
        let devices = options.isLive ? makeDevices(&state) : []
        guard state.diagnostics.isEmpty else { throw state.sortedDiagnostics }
        let graph = negotiateFormats(&state, order: order, devices: devices)
        guard state.diagnostics.isEmpty, let graph else { throw state.sortedDiagnostics }
        return graph
    }

    // MARK: Limits

    /// `GraphLimits`, for graphs from any source (a file's reader checks its own size,
    /// nesting and playback values with their places; a graph built in code is checked here).
    private func checkLimits(_ state: inout CompileState) {
        let description = state.description
        if description.nodes.count > GraphLimits.nodes {
            state.error("the graph has \(description.nodes.count) nodes; the limit is \(GraphLimits.nodes)",
                        at: description.nodes[GraphLimits.nodes].location, fix: "split it into graphs of at most \(GraphLimits.nodes) nodes")
        }
        if description.links.count > GraphLimits.links {
            state.error("the graph has \(description.links.count) links; the limit is \(GraphLimits.links)",
                        at: description.links[GraphLimits.links].from.location, fix: "split it into graphs of at most \(GraphLimits.links) links")
        }
        let playback = description.playback
        let seconds = 0...GraphLimits.playbackSeconds
        if !seconds.contains(playback.watermark) {
            state.error("playback watermark is \(playback.watermark) s; it must be 0…\(Int(GraphLimits.playbackSeconds)) s",
                        at: playback.location, fix: "watermark: 0.5")
        }
        if !(playback.maxBuffered > 0 && playback.maxBuffered <= GraphLimits.playbackSeconds) {
            state.error("playback max-buffered is \(playback.maxBuffered) s; it must be more than 0 and at most \(Int(GraphLimits.playbackSeconds)) s",
                        at: playback.location, fix: "max-buffered: 3.0")
        }
        if !GraphLimits.blockFrames.contains(playback.blockFrames) {
            state.error("playback block is \(playback.blockFrames) frames; it must be \(GraphLimits.blockFrames.lowerBound)…\(GraphLimits.blockFrames.upperBound)",
                        at: playback.location, fix: "block: 256")
        }
    }

    // MARK: Nodes and parameters

    private func createNodes(_ state: inout CompileState) {
        var firstDeclared: [String: NodeDeclaration] = [:]
        for declaration in state.description.nodes {
            if let first = firstDeclared[declaration.name] {
                state.error(
                    "duplicate node name '\(declaration.name)' (first declared at \(first.location.map { "line \($0.line)" } ?? "an earlier entry"))",
                    at: declaration.location, fix: "give each node its own name")
                continue
            }
            firstDeclared[declaration.name] = declaration
            guard let registered = registry.type(named: declaration.type) else {
                let close = registry.suggestions(for: declaration.type)
                let fix = close.isEmpty
                    ? "run `sluice nodes` to list the node types"
                    : "did you mean " + close.map { "'\($0)'" }.joined(separator: " or ") + "?"
                state.error(GraphDiagnostics.unknownTypePrefix + "'\(declaration.type)' for node '\(declaration.name)'",
                            at: declaration.typeLocation ?? declaration.location, fix: fix)
                continue
            }
            guard let type = resolveHostedPlugin(declaration, registered, &state),
                let parameters = checkParameters(declaration, type.descriptor, &state)
            else { continue }
            let instance: any Node
            do {
                instance = try type.make(parameters)
            } catch let error as NodeCreationError {
                let location = error.parameter.flatMap { name in
                    declaration.parameters.first { $0.name == name }?.valueLocation
                } ?? declaration.location
                state.error("node '\(declaration.name)' (\(declaration.type)): \(error.message)", at: location, fix: error.fix)
                continue
            } catch {
                state.error("node '\(declaration.name)' (\(declaration.type)): \(error)", at: declaration.location)
                continue
            }
            guard Self.kindMatches(instance, type.descriptor.kind) else {
                state.error(
                    "node type '\(declaration.type)' says it is a \(type.descriptor.kind.rawValue) but its node is not a \(type.descriptor.kind.rawValue)",
                    at: declaration.typeLocation, fix: "make the factory return a \(type.descriptor.kind.rawValue) node")
                continue
            }
            state.nodeIndex[declaration.name] = state.nodes.count
            state.nodes.append(NodeEntry(
                declaration: declaration, descriptor: type.descriptor, parameters: parameters,
                instance: instance, inputPorts: Self.inputPorts(of: type.descriptor, parameters),
                outputPorts: Self.outputPorts(of: type.descriptor, parameters)))
        }
    }

    /// For a type hosting another plugin format, the type of the plugin its picking
    /// parameters name (checked first, alone); every other type as it is. Nil after an error.
    private func resolveHostedPlugin(
        _ declaration: NodeDeclaration, _ type: NodeType, _ state: inout CompileState
    ) -> NodeType? {
        guard let resolve = type.resolve else { return type }
        let picking = Set(type.descriptor.parameters.map(\.name))
        var pickingOnly = declaration
        pickingOnly.parameters = declaration.parameters.filter { picking.contains($0.name) }
        guard let values = checkParameters(pickingOnly, type.descriptor, &state) else { return nil }
        do {
            return try resolve(values)
        } catch let error as NodeCreationError {
            let location = error.parameter.flatMap { name in
                declaration.parameters.first { $0.name == name }?.valueLocation
            } ?? declaration.typeLocation ?? declaration.location
            state.error("node '\(declaration.name)' (\(declaration.type)): \(error.message)", at: location, fix: error.fix)
        } catch {
            state.error("node '\(declaration.name)' (\(declaration.type)): \(error)", at: declaration.location)
        }
        return nil
    }

    private static func kindMatches(_ node: any Node, _ kind: NodeKind) -> Bool {
        switch kind {
        case .source: node is any SourceNode || node is any DeviceSourceNode
        case .processor: node is any ProcessorNode
        case .sink: node is any SinkNode
        }
    }

    /// A node's input ports in this graph: all declared ones, or the first `inputs` of them
    /// for types with a variable input count.
    static func inputPorts(of descriptor: NodeDescriptor, _ parameters: NodeParameters) -> [PortDescriptor] {
        guard let name = descriptor.inputCountParameter else { return descriptor.inputs }
        let count = min(parameters.integer(name), descriptor.inputs.count)
        return Array(descriptor.inputs.prefix(count)).map { port in
            var port = port
            port.isRequired = true
            return port
        }
    }

    /// A node's output ports in this graph, likewise.
    static func outputPorts(of descriptor: NodeDescriptor, _ parameters: NodeParameters) -> [PortDescriptor] {
        guard let name = descriptor.outputCountParameter else { return descriptor.outputs }
        return Array(descriptor.outputs.prefix(min(parameters.integer(name), descriptor.outputs.count)))
    }

    private func checkParameters(
        _ declaration: NodeDeclaration, _ descriptor: NodeDescriptor, _ state: inout CompileState
    ) -> NodeParameters? {
        var values: [String: ParameterValue] = [:]
        var valid = true
        var seen: Set<String> = []
        for parameter in declaration.parameters {
            guard let expected = descriptor.parameter(named: parameter.name) else {
                let close = closestNames(to: parameter.name, among: descriptor.parameters.map(\.name))
                let fix = close.isEmpty
                    ? (descriptor.parameters.isEmpty
                        ? "'\(descriptor.typeName)' takes no parameters"
                        : "its parameters are " + descriptor.parameters.map(\.name).joined(separator: ", "))
                    : "did you mean " + close.map { "'\($0)'" }.joined(separator: " or ") + "?"
                state.error("node '\(declaration.name)' (\(descriptor.typeName)) has no parameter '\(parameter.name)'",
                            at: parameter.location, fix: fix)
                valid = false
                continue
            }
            guard seen.insert(parameter.name).inserted else {
                state.error("parameter '\(parameter.name)' of node '\(declaration.name)' is given twice",
                            at: parameter.location, fix: "keep one of them")
                valid = false
                continue
            }
            switch ParameterChecking.check(parameter.value, as: expected.type) {
            case .success(let value):
                values[parameter.name] = value
            case .failure(let refusal):
                let unit = expected.unit.map { " (\($0))" } ?? ""
                state.error("parameter '\(parameter.name)'\(unit) of node '\(declaration.name)' \(refusal.message)",
                            at: parameter.valueLocation ?? parameter.location,
                            fix: refusal.fix ?? "\(parameter.name): \(expected.defaultValue.map(\.description) ?? "<\(expected.type)>") — \(expected.summary)")
                valid = false
            }
        }
        for expected in descriptor.parameters where values[expected.name] == nil && !seen.contains(expected.name) {
            if let value = expected.defaultValue {
                values[expected.name] = value
            } else if expected.isRequired {
                state.error("node '\(declaration.name)' (\(descriptor.typeName)) needs parameter '\(expected.name)'",
                            at: declaration.location, fix: "add `\(expected.name): …` — \(expected.summary)")
                valid = false
            }
        }
        // `sinkRate` plays every sink at that rate, in place of the rate its graph gives it:
        // `auto` rates upstream follow it, and a sink keeping its own would refuse its input.
        if let sinkRate = options.sinkRate, descriptor.kind == .sink,
           case .rate? = descriptor.parameter(named: "rate")?.type {
            values["rate"] = .integer(sinkRate)
        }
        guard valid else { return nil }
        var parameters = NodeParameters(values, baseDirectory: state.description.baseDirectory)
        parameters.given = seen
        return parameters
    }

    // MARK: Links

    private func resolveLinks(_ state: inout CompileState) {
        let names = state.description.nodes.map(\.name)
        let declared = Set(names)
        state.sizeLinkIndexes()
        var inputLinks: [PortKey: LinkDeclaration] = [:]
        var outputLinks: [PortKey: LinkDeclaration] = [:]
        for link in state.description.links {
            // Both ends, always: a bad source end must not hide a bad target end.
            let from = resolve(link.from, output: true, names: names, declared: declared, &state)
            let to = resolve(link.to, output: false, names: names, declared: declared, &state)
            guard let from, let to else { continue }
            if let first = outputLinks[from] {
                state.error("output '\(portName(from, output: true, state))' is linked twice (first at \(first.from.location.map { "line \($0.line)" } ?? "an earlier link"))",
                            at: link.from.location, fix: "an output feeds one input; add a second output node or link once")
                continue
            }
            if let first = inputLinks[to] {
                state.error("input '\(portName(to, output: false, state))' is linked twice (first at \(first.to.location.map { "line \($0.line)" } ?? "an earlier link"))",
                            at: link.to.location, fix: "mix the streams with a mixer: `- a -> mix.in1`, `- b -> mix.in2`, `- mix -> \(link.to.node)`")
                continue
            }
            outputLinks[from] = link
            inputLinks[to] = link
            state.addLink(ResolvedLink(from: from, to: to, declaration: link))
        }
    }

    private func resolve(
        _ reference: PortReference, output: Bool, names: [String], declared: Set<String>, _ state: inout CompileState
    ) -> PortKey? {
        guard let index = state.nodeIndex[reference.node] else {
            if declared.contains(reference.node) { return nil }  // declared, but already reported
            let close = closestNames(to: reference.node, among: names)
            let fix = close.isEmpty
                ? "declare '\(reference.node)' under `nodes:`"
                : "did you mean " + close.map { "'\($0)'" }.joined(separator: " or ") + "?"
            state.error("link to missing node '\(reference.node)'", at: reference.location, fix: fix)
            return nil
        }
        let node = state.nodes[index]
        let ports = output ? node.outputPorts : node.inputPorts
        let side = output ? "output" : "input"
        guard !ports.isEmpty else {
            state.error("node '\(node.declaration.name)' (\(node.descriptor.typeName)) has no \(side)",
                        at: reference.location,
                        fix: output ? "a \(node.descriptor.kind.rawValue) ends a chain; link from it to nothing" : "a \(node.descriptor.kind.rawValue) starts a chain; nothing links into it")
            return nil
        }
        guard let portName = reference.port else { return PortKey(node: index, port: 0) }
        guard let port = ports.firstIndex(where: { $0.name == portName }) else {
            let all = (output ? node.descriptor.outputs : node.descriptor.inputs).map(\.name)
            let close = closestNames(to: portName, among: ports.map(\.name), limit: 1)
            let fix: String
            if all.contains(portName) {
                let parameter = (output ? node.descriptor.outputCountParameter : node.descriptor.inputCountParameter) ?? "\(side)s"
                fix = "'\(node.declaration.name)' has \(ports.count) \(side)s here; raise its `\(parameter)` parameter"
            } else {
                fix = (close.first.map { "did you mean '\($0)'? " } ?? "") + "its \(side)s are " + ports.map(\.name).joined(separator: ", ")
            }
            state.error("node '\(node.declaration.name)' (\(node.descriptor.typeName)) has no \(side) port '\(portName)'",
                        at: reference.location, fix: fix)
            return nil
        }
        return PortKey(node: index, port: port)
    }

    private func portName(_ key: PortKey, output: Bool, _ state: CompileState) -> String {
        let node = state.nodes[key.node]
        let ports = output ? node.outputPorts : node.inputPorts
        return "\(node.declaration.name).\(ports[key.port].name)"
    }

    // MARK: Completeness and order

    private func checkCompleteness(_ state: inout CompileState) {
        let linkedInputs = Set(state.links.map(\.to))
        let linkedOutputs = Set(state.links.map(\.from))
        for (index, node) in state.nodes.enumerated() {
            for (port, descriptor) in node.inputPorts.enumerated() where descriptor.isRequired {
                guard !linkedInputs.contains(PortKey(node: index, port: port)) else { continue }
                state.error("input '\(node.declaration.name).\(descriptor.name)' is not linked",
                            at: node.declaration.location,
                            fix: "link a node into it under `links:`, e.g. `- source -> \(node.declaration.name).\(descriptor.name)`")
            }
            for (port, descriptor) in node.outputPorts.enumerated() {
                guard !linkedOutputs.contains(PortKey(node: index, port: port)) else { continue }
                state.error("output '\(node.declaration.name).\(descriptor.name)' is not linked",
                            at: node.declaration.location,
                            fix: "link it on to a sink (`- \(node.declaration.name) -> out`) or remove the node")
            }
        }
        if state.diagnostics.isEmpty && !state.nodes.contains(where: { $0.descriptor.kind == .sink }) {
            state.error("the graph has no sink", at: state.description.nodes.first?.location,
                        fix: "end the chain in a sink such as wav.sink, null.sink or jack.sink")
        }
    }

    /// Kahn's algorithm; a node left over sits on a cycle, reported at the link closing it.
    private func topologicalOrder(_ state: inout CompileState) -> [Int]? {
        var incoming = [Int](repeating: 0, count: state.nodes.count)
        for link in state.links { incoming[link.to.node] += 1 }
        // A queue read from `head`, so the order is the same as first-in first-out.
        var ready = incoming.indices.filter { incoming[$0] == 0 }
        var head = 0
        var order: [Int] = []
        order.reserveCapacity(state.nodes.count)
        while head < ready.count {
            let next = ready[head]
            head += 1
            order.append(next)
            for linkIndex in state.outgoing[next] {
                let target = state.links[linkIndex].to.node
                incoming[target] -= 1
                if incoming[target] == 0 { ready.append(target) }
            }
        }
        guard order.count < state.nodes.count else { return order }
        // Walk back along links from a node on the cycle until a node repeats: that loop is
        // a cycle. Report it at its link written last in the file, naming the nodes from
        // that link's target round to its source.
        let stuck = Set(incoming.indices.filter { incoming[$0] > 0 })
        var path = [stuck.min()!]
        var onPath = [path[0]: 0]
        var cycle: [Int] = []
        while cycle.isEmpty {
            let last = path.last!
            let linkIndex = state.incoming[last].first { stuck.contains(state.links[$0].from.node) }!
            let from = state.links[linkIndex].from.node
            if let start = onPath[from] {
                cycle = Array(path[start...].reversed())  // in link direction
            } else {
                onPath[from] = path.count
                path.append(from)
            }
        }
        var cyclePosition: [Int: Int] = [:]
        for (position, node) in cycle.enumerated() { cyclePosition[node] = position }
        let cycleLinks = state.links.indices.filter { index in
            let link = state.links[index]
            guard let position = cyclePosition[link.from.node] else { return false }
            return cycle[(position + 1) % cycle.count] == link.to.node
        }
        let closing = cycleLinks.max()!
        let startNode = state.links[closing].to.node
        let offset = cyclePosition[startNode]!
        let names = (0...cycle.count).map { state.nodes[cycle[(offset + $0) % cycle.count]].declaration.name }
        let declaration = state.links[closing].declaration
        state.error("links form a cycle: " + names.joined(separator: " -> "),
                    at: declaration.to.location ?? declaration.from.location,
                    fix: "remove one of these links; audio must flow one way from sources to sinks")
        return nil
    }

    // MARK: Devices

    /// One device per `deviceKey`, shared by the graph's endpoints with that key (one JACK
    /// client holding every jack.sink and jack.source port).
    private func makeDevices(_ state: inout CompileState) -> [any GraphDevice] {
        var keys: [String] = []
        var groups: [String: [DeviceEndpointEntry]] = [:]
        for node in state.nodes {
            guard let endpoint = node.instance as? any DeviceEndpoint else { continue }
            let key = endpoint.deviceKey
            if groups[key] == nil { keys.append(key) }
            groups[key, default: []].append(DeviceEndpointEntry(name: node.declaration.name, node: endpoint))
        }
        var devices: [any GraphDevice] = []
        for key in keys {
            let entries = groups[key]!
            do throws(DeviceConfigurationError) {
                devices.append(try Self.makeDevice(entries, graphName: state.description.name, playback: state.description.playback))
            } catch {
                let declaration = state.nodes.first { $0.declaration.name == error.node }?.declaration
                let location = error.parameter.flatMap { name in
                    declaration?.parameters.first { $0.name == name }?.valueLocation
                } ?? declaration?.location
                state.error("node '\(error.node)': \(error.message)", at: location, fix: error.fix)
            }
        }
        return devices
    }

    private static func makeDevice(
        _ entries: [DeviceEndpointEntry], graphName: String, playback: PlaybackSettings
    ) throws(DeviceConfigurationError) -> any GraphDevice {
        func open<Endpoint: DeviceEndpoint>(_ first: Endpoint) throws(DeviceConfigurationError) -> any GraphDevice {
            try Endpoint.makeDevice(for: entries, graphName: graphName, playback: playback)
        }
        return try open(entries[0].node)
    }

    // MARK: Formats

    private func negotiateFormats(_ state: inout CompileState, order: [Int], devices: [any GraphDevice]) -> CompiledGraph? {
        let block = state.description.playback.blockFrames
        // Backward: the rate the nearest sink downstream decides.
        var downstreamRate = [Int?](repeating: nil, count: state.nodes.count)
        for index in order.reversed() {
            let node = state.nodes[index]
            if let sink = node.instance as? any SinkNode {
                let standIn = !options.isLive && node.instance is any DeviceEndpoint ? options.deviceRate : nil
                downstreamRate[index] = options.sinkRate ?? standIn ?? sink.decidedRate(live: options.isLive)
            } else {
                downstreamRate[index] = nil
                for linkIndex in state.outgoing[index] {
                    if let rate = downstreamRate[state.links[linkIndex].to.node] {
                        downstreamRate[index] = rate
                        break
                    }
                }
            }
        }
        // Forward: each node's outputs from its inputs.
        var outputFormats = [[StreamFormat]?](repeating: nil, count: state.nodes.count)
        var inputFormats = [[StreamFormat]](repeating: [], count: state.nodes.count)
        for index in order {
            let node = state.nodes[index]
            var inputs: [StreamFormat] = []
            var known = true
            for port in node.inputPorts.indices {
                guard let link = state.link(into: PortKey(node: index, port: port)) else {
                    continue  // an optional input left unlinked
                }
                guard let format = outputFormats[link.from.node]?[link.from.port] else {
                    known = false
                    break
                }
                inputs.append(format)
            }
            guard known else { continue }  // upstream already failed
            var context = FormatContext(downstreamRate: downstreamRate[index], blockFrames: block, isLive: options.isLive)
            if !options.isLive { context.deviceRate = options.deviceRate }
            do throws(FormatMismatch) {
                let outputs = try node.instance.outputFormats(for: inputs, context: context)
                precondition(outputs.count == node.outputPorts.count,
                             "'\(node.descriptor.typeName)' returned \(outputs.count) formats for \(node.outputPorts.count) outputs")
                outputFormats[index] = outputs
                inputFormats[index] = inputs
            } catch {
                reportMismatch(error, at: index, inputs: inputs, &state)
            }
        }
        guard state.diagnostics.isEmpty else { return nil }
        checkLinkOptions(&state, outputFormats: outputFormats)
        guard state.diagnostics.isEmpty else { return nil }

        var positions: [Int: Int] = [:]
        for (position, index) in order.enumerated() { positions[index] = position }
        let nodes = order.map { index in
            let entry = state.nodes[index]
            return CompiledNode(
                name: entry.declaration.name, descriptor: entry.descriptor, parameters: entry.parameters,
                instance: entry.instance, inputPorts: entry.inputPorts, outputPorts: entry.outputPorts,
                inputFormats: inputFormats[index], outputFormats: outputFormats[index] ?? [])
        }
        let edges = state.links.map { link in
            CompiledEdge(
                fromNode: positions[link.from.node]!, fromPort: link.from.port,
                toNode: positions[link.to.node]!, toPort: link.to.port,
                format: outputFormats[link.from.node]![link.from.port],
                capacity: link.declaration.capacity, whenFull: link.declaration.whenFull)
        }
        return CompiledGraph(
            description: state.description, nodes: nodes, edges: edges,
            playback: state.description.playback, isLive: options.isLive, devices: devices)
    }

    /// A link's `capacity` and `when-full`: not on a link into a sink (the sink's buffer is
    /// `playback.max-buffered`); drops only where the link carries frames (bytes dropped
    /// would split a sample); `capacity-frames` only on frames.
    private func checkLinkOptions(_ state: inout CompileState, outputFormats: [[StreamFormat]?]) {
        for link in state.links where link.declaration.capacity != nil || link.declaration.whenFull != .block {
            let declaration = link.declaration
            let place = declaration.optionsLocation ?? declaration.from.location
            let hop = "\(declaration.from) -> \(declaration.to)"
            if state.nodes[link.to.node].instance is any SinkNode {
                state.error("the link \(hop) feeds a sink, whose buffer is set by the graph's playback: section, not by the link",
                            at: place, fix: "set `playback: { max-buffered: … }` for the sink's buffer, and put capacity and when-full on a link before it")
                continue
            }
            guard let format = outputFormats[link.from.node]?[link.from.port], case .frames = format else {
                if declaration.whenFull != .block {
                    state.error("the link \(hop) carries bytes, which cannot be dropped without splitting a sample",
                                at: place, fix: "put when-full on a link after the aligner, where the audio is frames")
                } else if case .frames? = declaration.capacity {
                    state.error("the link \(hop) carries bytes, not frames", at: place,
                                fix: "give its capacity in seconds: `capacity: 0.1`")
                }
                continue
            }
            // A source on its own thread makes audio as fast as its link takes it: a link that
            // never holds it up would have it make audio only to drop it, as fast as it can.
            if declaration.whenFull != .block, state.nodes[link.from.node].instance is any SourceNode {
                state.error(
                    "the link \(hop) is written by source '\(declaration.from.node)', which makes audio as fast as the link takes it: dropping there would keep it making audio only to drop it",
                    at: place, fix: "drop on a branch: `- \(declaration.from.node) -> split`, then `{ chain: split.out2 -> …, when-full: \(declaration.whenFull.rawValue) }`")
            }
        }
    }

    private func reportMismatch(_ mismatch: FormatMismatch, at index: Int, inputs: [StreamFormat], _ state: inout CompileState) {
        let node = state.nodes[index]
        let name = node.declaration.name
        if case .parameter(let parameter, let problem, let fix) = mismatch.required {
            // A parameter's problem is the node's own, whatever its inputs (a jack.source with
            // no server has none).
            let declared = node.declaration.parameters.first { $0.name == parameter }
            state.error("node '\(name)' (\(node.descriptor.typeName)): \(problem)",
                        at: declared?.valueLocation ?? node.declaration.location, fix: fix)
            return
        }
        guard let link = state.link(into: PortKey(node: index, port: mismatch.input)),
              mismatch.input < inputs.count else {
            state.error("node '\(name)' (\(node.descriptor.typeName)) cannot use its inputs", at: node.declaration.location)
            return
        }
        let upstream = state.nodes[link.from.node].declaration.name
        let format = inputs[mismatch.input]
        let location = link.declaration.to.location ?? link.declaration.from.location
        let message: String
        let fix: String
        switch mismatch.required {
        case .medium(.frames):
            message = "'\(name)' takes audio frames but '\(upstream)' gives \(format) bytes"
            fix = "insert an aligner between '\(upstream)' (\(format) bytes) and '\(name)' (frames)"
        case .medium(.bytes):
            message = "'\(name)' takes PCM bytes but '\(upstream)' gives \(format) frames"
            fix = "link '\(name)' straight from a byte source (a provider, bytes.source); nothing turns frames back into bytes"
        case .sampleRate(let rate):
            message = "sample rates differ: '\(upstream)' gives \(format.sampleRate) Hz, '\(name)' takes \(rate) Hz"
            fix = "insert a resampler between '\(upstream)' (\(format.sampleRate) Hz) and '\(name)' (\(rate) Hz)"
        case .channels(let channels):
            message = "channel counts differ: '\(upstream)' gives \(channelWord(format.channels)), '\(name)' takes \(channelWord(channels))"
            fix = "insert a channel-map between '\(upstream)' (\(channelWord(format.channels))) and '\(name)' (\(channelWord(channels)))"
        case .other(let sentence):
            message = "'\(name)' cannot take \(format) from '\(upstream)'"
            fix = "use \(sentence)"
        case .parameter:
            return  // reported above
        }
        state.error("format mismatch: " + message, at: location, fix: fix)
    }
}

struct PortKey: Hashable {
    var node: Int
    var port: Int
}

struct NodeEntry {
    var declaration: NodeDeclaration
    var descriptor: NodeDescriptor
    var parameters: NodeParameters
    var instance: any Node
    var inputPorts: [PortDescriptor]
    var outputPorts: [PortDescriptor]
}

struct ResolvedLink {
    var from: PortKey
    var to: PortKey
    var declaration: LinkDeclaration
}

/// What the compiler has built so far, with the indexes that keep every step linear in
/// nodes and links (a graph file may come from elsewhere, and be large).
struct CompileState {
    let description: GraphDescription
    var nodes: [NodeEntry] = []
    /// Node index by name.
    var nodeIndex: [String: Int] = [:]
    private(set) var links: [ResolvedLink] = []
    /// Link indices by the node they leave, and by the node they enter.
    private(set) var outgoing: [[Int]] = []
    private(set) var incoming: [[Int]] = []
    /// The link into each linked input port.
    private var linkInto: [PortKey: Int] = [:]
    var diagnostics: [GraphDiagnostic] = []

    /// Once every node is created, before the first link.
    init(description: GraphDescription) {
        self.description = description
    }

    mutating func sizeLinkIndexes() {
        outgoing = Array(repeating: [], count: nodes.count)
        incoming = Array(repeating: [], count: nodes.count)
    }

    mutating func addLink(_ link: ResolvedLink) {
        outgoing[link.from.node].append(links.count)
        incoming[link.to.node].append(links.count)
        linkInto[link.to] = links.count
        links.append(link)
    }

    func link(into port: PortKey) -> ResolvedLink? {
        linkInto[port].map { links[$0] }
    }

    mutating func error(_ message: String, at location: SourceLocation?, fix: String? = nil) {
        diagnostics.append(GraphDiagnostic(message, at: location ?? description.file.map { SourceLocation(file: $0, line: 1, column: 1) }, fix: fix))
    }

    var sortedDiagnostics: GraphDiagnostics {
        GraphDiagnostics(diagnostics.enumerated().sorted { a, b in
            let left = a.element.location.map { ($0.line, $0.column) } ?? (Int.max, 0)
            let right = b.element.location.map { ($0.line, $0.column) } ?? (Int.max, 0)
            return left != right ? left < right : a.offset < b.offset
        }.map(\.element))
    }
}
