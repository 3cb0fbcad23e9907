import SluiceControl
import SluiceGraph

/// A served graph as the page draws it (`/api/graph`): its nodes (type, kind, where each runs,
/// ports, formats), its links (with a dropping link's policy and what its buffer holds), and every live parameter with
/// its range and the value in force — the graph file's, or the last one set.
enum GraphShape {
    static func json(of served: ServedGraph) -> JSONValue {
        let graph = served.graph
        let placement = graph.placement
        let direct = graph.directInCycle(placement: placement)
        let setValues = served.liveValues
        let nodes: [JSONValue] = graph.nodes.enumerated().map { index, node in
            let live = node.descriptor.parameters.filter(\.isLive).map { parameter -> JSONValue in
                var entry = NodeReference.json(of: parameter)
                let value = setValues[node.name]?[parameter.name] ?? node.parameters[parameter.name]
                if case .object(var members) = entry {
                    members.append(.init("value", value?.json ?? .null))
                    entry = .object(members)
                }
                return entry
            }
            return .object([
                ("name", .string(node.name)),
                ("type", .string(node.descriptor.typeName)),
                ("kind", .string(node.descriptor.kind.rawValue)),
                ("placement", .string(direct[index] ? "jack-direct" : placement[index].rawValue)),
                ("inputs", .array(node.inputPorts.map { .string($0.name) })),
                ("outputs", .array(node.outputPorts.map { .string($0.name) })),
                ("formats", .array(node.outputFormats.map { .string($0.description) })),
                ("parameters", .array(live)),
            ])
        }
        let capacities = Dictionary(served.linkFills.map { ($0.link, $0.capacitySeconds) }, uniquingKeysWith: { $1 })
        let links: [JSONValue] = graph.edges.map { edge in
            let from = graph.nodes[edge.fromNode]
            let to = graph.nodes[edge.toNode]
            let name = graph.linkName(of: edge)
            return .object([
                ("name", .string(name)),
                // Seconds the link's buffer holds; null for a link carried in place in the cycle.
                ("capacity", capacities[name].map { .number($0) } ?? .null),
                ("from", .string(from.name)), ("fromPort", .string(from.outputPorts[edge.fromPort].name)),
                ("to", .string(to.name)), ("toPort", .string(to.inputPorts[edge.toPort].name)),
                ("format", .string(edge.format.description)),
                ("whenFull", .string(edge.whenFull.rawValue)),
            ])
        }
        return .object([("graph", .string(served.name)), ("nodes", .array(nodes)), ("links", .array(links))])
    }
}
