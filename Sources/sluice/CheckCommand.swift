import ArgumentParser
import SluiceGraph

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a graph: node types, parameters, links, cycles and formats.",
        discussion: "Exits 0 when the graph is valid, 1 with every error (file:line:column, and the fix) when not."
    )

    @Argument(help: "A graph file, or a one-line graph in quotes.")
    var graph: String

    func run() throws {
        let compiled = try GraphLoading.compile(graph)
        print("\(graph): ok (\(compiled.nodes.count) nodes, \(compiled.edges.count) links)")
    }
}
