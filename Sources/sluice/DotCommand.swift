import ArgumentParser
import SluiceGraph

struct DotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dot",
        abstract: "Print a graph in Graphviz DOT, with the format on every link.",
        discussion: "Pipe it to Graphviz: sluice dot graphs/speak.yaml | dot -Tsvg > speak.svg"
    )

    @Argument(help: "A graph file, or a one-line graph in quotes.")
    var graph: String

    @Option(name: .long, help: "Render every sink at this rate, as `render --rate` would.")
    var rate: Int?

    @OptionGroup var plugins: PluginOptions

    func run() throws {
        print(GraphvizDOT.text(of: try GraphLoading.compile(graph, options: .init(sinkRate: rate), trustGraphFolder: plugins.trustGraphFolder)), terminator: "")
    }
}

/// Writes a compiled graph as DOT: one box per node (name and type), one arrow per link
/// labelled with the format it carries, port names where a node has several, and the nodes
/// that run in the JACK cycle inside a dashed "JACK cycle" cluster.
enum GraphvizDOT {
    static func text(of graph: CompiledGraph) -> String {
        var lines = ["digraph \(quoted(graph.description.name)) {", "  rankdir=LR;", "  node [shape=box, fontname=\"monospace\"];"]
        // The nodes a JACK client runs inside its process callback share a box: what enters
        // it in a period leaves it in that period (docs/architecture.md).
        let placement = graph.placement
        let inCycle = graph.nodes.indices.filter { placement[$0] == .cycle }
        if !inCycle.isEmpty {
            lines.append("  subgraph \"cluster_cycle\" {")
            lines.append("    label=\"JACK cycle\"; style=dashed; fontname=\"monospace\";")
            for index in inCycle {
                let node = graph.nodes[index]
                lines.append("    \(quoted(node.name)) [label=\(quoted("\(node.name)\n\(node.descriptor.typeName)"))];")
            }
            lines.append("  }")
        }
        for (index, node) in graph.nodes.enumerated() where placement[index] != .cycle {
            lines.append("  \(quoted(node.name)) [label=\(quoted("\(node.name)\n\(node.descriptor.typeName)"))];")
        }
        for edge in graph.edges {
            let from = graph.nodes[edge.fromNode]
            let to = graph.nodes[edge.toNode]
            var attributes = ["label=\(quoted(edge.format.description))"]
            if from.outputPorts.count > 1 { attributes.append("taillabel=\(quoted(from.outputPorts[edge.fromPort].name))") }
            if to.inputPorts.count > 1 { attributes.append("headlabel=\(quoted(to.inputPorts[edge.toPort].name))") }
            lines.append("  \(quoted(from.name)) -> \(quoted(to.name)) [\(attributes.joined(separator: ", "))];")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
