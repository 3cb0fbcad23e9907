/// `meter:` on a sink: a `meter` node in front of it, so a graph measures what a sink plays
/// without a node of its own in the file (as Ardour meters every track). The sink keeps the
/// parameter (its descriptor declares it, so `check` reports a bad value at the sink's line);
/// the meter node, named `<sink>-meter`, takes it as its `interval`, and whatever fed the sink
/// feeds the meter.
extension NodeRegistry {
    /// The parameter every one-input sink type gets when registered.
    static let sinkMeterParameter = ParameterDescriptor(
        "meter", .number(0.01...10), default: nil, unit: "s",
        summary: "Measure what this sink plays (peak, RMS, true peak, loudness): a `meter` node named `<sink>-meter` in front of it, a reading every this many seconds.")

    /// `type` with `meter` added, when it is a sink with one input and declares no `meter` of its own.
    static func addingSinkMeter(to type: NodeType) -> NodeType {
        guard type.descriptor.kind == .sink, type.descriptor.inputs.count == 1,
            type.descriptor.parameter(named: "meter") == nil
        else { return type }
        var type = type
        type.descriptor.parameters.append(sinkMeterParameter)
        return type
    }
}

extension GraphDescription {
    /// The graph with a `meter` node before every sink whose declaration gives `meter:`
    /// (`registry` says which nodes are sinks); unchanged when the registry has no `meter` type.
    func insertingSinkMeters(registry: NodeRegistry) -> GraphDescription {
        guard registry.type(named: "meter") != nil else { return self }
        var result = self
        var names = Set(nodes.map(\.name))
        for declaration in nodes {
            guard let type = registry.type(named: declaration.type), type.descriptor.kind == .sink,
                type.descriptor.inputs.count == 1,
                let meter = declaration.parameters.last(where: { $0.name == "meter" })
            else { continue }
            var name = "\(declaration.name)-meter"
            var suffix = 2
            while names.contains(name) {
                name = "\(declaration.name)-meter-\(suffix)"
                suffix += 1
            }
            names.insert(name)
            result.nodes.append(NodeDeclaration(
                name: name, type: "meter",
                parameters: [ParameterDeclaration(name: "interval", value: meter.value, location: meter.location, valueLocation: meter.valueLocation)],
                location: meter.location, typeLocation: meter.location))
            var links: [LinkDeclaration] = []
            var sinkLink: LinkDeclaration?
            for link in result.links {
                guard link.to.node == declaration.name else {
                    links.append(link)
                    continue
                }
                links.append(LinkDeclaration(from: link.from, to: PortReference(node: name, location: link.to.location)))
                if sinkLink == nil { sinkLink = link }
            }
            if let sinkLink {
                // The link's own settings stay on the link into the sink, where check refuses them.
                links.append(LinkDeclaration(
                    from: PortReference(node: name, location: meter.location), to: sinkLink.to, capacity: sinkLink.capacity,
                    whenFull: sinkLink.whenFull, optionsLocation: sinkLink.optionsLocation))
            }
            result.links = links
        }
        return result
    }
}
