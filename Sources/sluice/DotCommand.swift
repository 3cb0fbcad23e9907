import ArgumentParser
import SluiceGraph

struct DotCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "dot", _superCommandName: SluiceCommand.name,
        abstract: "Print a graph in Graphviz DOT, with the format on every link.",
        discussion: """
            Pipe it to Graphviz: sluice dot graphs/speak.yaml | dot -Tsvg > speak.svg

            Sources are blue, speech providers (text-driven sources) purple, processors grey, \
            sinks green; a node with several inputs or outputs shows them as named cells. The \
            nodes a live run puts in the JACK cycle share a dashed box (as `sluice check \
            --verbose` lists them). A rate the JACK server decides when the graph runs is drawn \
            `auto` (--rate decides every sink's, as `render --rate` would).
            """
    )

    @Argument(help: "A graph file, or a one-line graph in quotes.", completion: .file(extensions: ["yaml", "yml"]))
    var graph: String

    @Option(name: .long, help: "Render every sink at this rate, as `render --rate` would.")
    var rate: Int?

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        // Checked twice with the JACK server standing at two rates: a link whose rate differs
        // between them has its rate decided by the server.
        let trust = plugins.trustGraphFolder
        let compiled = try GraphLoading.compile(graph, options: .init(sinkRate: rate, deviceRate: GraphvizDOT.standInRates.0), trustGraphFolder: trust)
        var serverRated: Set<Int> = []
        if rate == nil, compiled.nodes.contains(where: { $0.instance is any DeviceEndpoint }),
           let other = try? GraphLoading.checked(graph, options: .init(deviceRate: GraphvizDOT.standInRates.1), trustGraphFolder: trust),
           other.edges.count == compiled.edges.count {
            serverRated = Set(compiled.edges.indices.filter { compiled.edges[$0].format != other.edges[$0].format })
        }
        print(GraphvizDOT.text(of: compiled, serverRated: serverRated), terminator: "")
    }
}

/// Writes a compiled graph as DOT: one box per node (name and type) coloured by kind, a node
/// with several ports as a table whose cells are its ports (links attach to them), one arrow
/// per link labelled with the format it carries (`auto` for a rate the server decides), and
/// the nodes that run in the JACK cycle inside a dashed "JACK cycle" cluster.
enum GraphvizDOT {
    /// The two rates `sluice dot` checks a graph at, standing for the JACK server's.
    static let standInRates = (48_000, 44_100)

    /// The colour of each kind of node, and the legend that names them.
    enum Kind: String {
        case source, provider, processor, sink

        init(_ node: CompiledNode) {
            switch node.descriptor.kind {
            case .source: self = node.instance is any TextDrivenSource ? .provider : .source
            case .processor: self = .processor
            case .sink: self = .sink
            }
        }

        var colour: String {
            switch self {
            case .source: "lightblue"
            case .provider: "plum"
            case .processor: "gray92"
            case .sink: "palegreen"
            }
        }
    }

    static let legend = "sources blue, providers purple, processors grey, sinks green; dashed: the JACK cycle; auto: the server's rate"

    /// - Parameter serverRated: the edges whose rate the JACK server decides, drawn `auto`.
    static func text(of graph: CompiledGraph, serverRated: Set<Int> = []) -> String {
        var lines = [
            "digraph \(quoted(graph.description.name)) {",
            "  rankdir=LR;",
            "  label=\(quoted(legend)); labelloc=b; fontname=\"monospace\"; fontsize=10;",
            "  node [shape=box, style=filled, fontname=\"monospace\"];",
            "  edge [fontname=\"monospace\", fontsize=10];",
        ]
        // The nodes a JACK client runs inside its process callback share a box: what enters
        // it in a period leaves it in that period (docs/architecture.md).
        let placement = graph.placement
        let inCycle = graph.nodes.indices.filter { placement[$0] == .cycle }
        if !inCycle.isEmpty {
            lines.append("  subgraph \"cluster_cycle\" {")
            lines.append("    label=\"JACK cycle\"; labelloc=t; style=dashed; fontname=\"monospace\"; fontsize=12;")
            for index in inCycle { lines.append("    " + nodeLine(graph.nodes[index])) }
            lines.append("  }")
        }
        for (index, node) in graph.nodes.enumerated() where placement[index] != .cycle {
            lines.append("  " + nodeLine(node))
        }
        for (index, edge) in graph.edges.enumerated() {
            let from = graph.nodes[edge.fromNode]
            let to = graph.nodes[edge.toNode]
            let tail = hasPortCells(from) ? "\(quoted(from.name)):\(quoted(from.outputPorts[edge.fromPort].name)):e" : quoted(from.name)
            let head = hasPortCells(to) ? "\(quoted(to.name)):\(quoted(to.inputPorts[edge.toPort].name)):w" : quoted(to.name)
            lines.append("  \(tail) -> \(head) [label=\(quoted(label(edge.format, serverRated: serverRated.contains(index))))];")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A link's format: `F32 48000 Hz stereo`, or `F32 auto Hz stereo` when the server decides
    /// the rate.
    static func label(_ format: StreamFormat, serverRated: Bool) -> String {
        guard serverRated else { return format.description }
        switch format {
        case .frames(let rate, _): return format.description.replacingOccurrences(of: "\(rate) Hz", with: "auto Hz")
        case .bytes: return format.description
        }
    }

    /// A node with more than one input or output shows its ports as cells.
    static func hasPortCells(_ node: CompiledNode) -> Bool {
        node.inputPorts.count > 1 || node.outputPorts.count > 1
    }

    static func nodeLine(_ node: CompiledNode) -> String {
        let colour = Kind(node).colour
        guard hasPortCells(node) else {
            return "\(quoted(node.name)) [label=\(quoted("\(node.name)\n\(node.descriptor.typeName)")), fillcolor=\(quoted(colour))];"
        }
        // An HTML-like table: inputs down the left, the node in the middle, outputs down the
        // right, so each link meets its port's own cell and no label lies on an arrow.
        let rows = max(node.inputPorts.count, node.outputPorts.count, 1)
        var table = "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"4\">"
        let filled = "bgcolor=\"\(colour)\""
        for row in 0..<rows {
            table += "<tr>"
            if row < node.inputPorts.count {
                let name = html(node.inputPorts[row].name)
                table += "<td port=\"\(name)\" \(filled)>\(name)</td>"
            } else if row == node.inputPorts.count {
                table += "<td rowspan=\"\(rows - row)\" border=\"0\"></td>"
            }
            if row == 0 {
                table += "<td rowspan=\"\(rows)\" \(filled)>\(html(node.name))<br/>\(html(node.descriptor.typeName))</td>"
            }
            if row < node.outputPorts.count {
                let name = html(node.outputPorts[row].name)
                table += "<td port=\"\(name)\" \(filled)>\(name)</td>"
            } else if row == node.outputPorts.count {
                table += "<td rowspan=\"\(rows - row)\" border=\"0\"></td>"
            }
            table += "</tr>"
        }
        table += "</table>"
        return "\(quoted(node.name)) [shape=plain, style=\"\", label=<\(table)>];"
    }

    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }

    /// Text inside an HTML-like label.
    static func html(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
