import ArgumentParser
import SluiceGraph

struct CheckCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", _superCommandName: SluiceCommand.name,
        abstract: "Check a graph: node types, parameters, links, cycles and formats.",
        discussion: """
            Exits 0 when the graph is valid, 1 with every error (file:line:column, and the fix) \
            when not. The verdict goes to standard error; --verbose lists the nodes on standard output.
            """
    )


    @Argument(help: "A graph file, or a one-line graph in quotes.", completion: .file(extensions: ["yaml", "yml"]))
    var graph: String

    @Flag(name: .shortAndLong, help: "Also list each node, its formats and where it runs in a live run (the JACK cycle, on the period's buffers when direct; the worker; its own thread).")
    var verbose = false

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let compiled = try GraphLoading.compile(graph, trustGraphFolder: plugins.trustGraphFolder)
        printError("\(graph): ok (\(compiled.nodes.count) nodes, \(compiled.edges.count) links)")
        guard verbose else { return }
        let placement = compiled.placement
        let direct = compiled.directInCycle(placement: placement)
        let width = compiled.nodes.map(\.name.count).max() ?? 0
        for (index, node) in compiled.nodes.enumerated() {
            let formats = node.outputFormats.isEmpty
                ? node.inputFormats.map(\.description).joined(separator: ", ")
                : node.outputFormats.map(\.description).joined(separator: ", ")
            let padded = node.name + String(repeating: " ", count: width - node.name.count)
            let choice = node.instance.compiledChoice.map { "  (\($0))" } ?? ""
            print("  \(padded)  \(direct[index] ? Self.directLabel : Self.describe(placement[index]))  \(node.descriptor.typeName)  \(formats)\(choice)")
        }
    }

    /// A node in the JACK cycle whose audio goes through the period's own buffers, no ring
    /// (docs/architecture.md, "Frame for frame").
    static let directLabel = "jack-direct  "

    static func describe(_ placement: NodePlacement) -> String {
        switch placement {
        case .cycle: "jack-cycle   "
        case .worker: "worker       "
        case .sourceThread: "source-thread"
        case .clockThread: "clock-thread "
        }
    }
}
