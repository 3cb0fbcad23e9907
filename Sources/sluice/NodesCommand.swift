import ArgumentParser
import SluiceGraph

struct NodesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes",
        abstract: "List every node type with its ports and parameters."
    )

    @Argument(help: "Show only these node types.")
    var types: [String] = []

    @Flag(name: .long, help: "Print the Markdown reference of docs/graph-files.md.")
    var markdown = false

    func run() throws {
        let registry = GraphLoading.registry()
        var selected = registry.all
        if !types.isEmpty {
            for name in types where registry.type(named: name) == nil {
                let close = registry.suggestions(for: name)
                printError("error: unknown node type '\(name)'" + (close.isEmpty ? "" : "; did you mean '\(close[0])'?"))
                throw ExitCode(1)
            }
            selected = selected.filter { types.contains($0.descriptor.typeName) }
        }
        if markdown {
            print(NodeReference.markdown(of: selected.map(\.descriptor)), terminator: "")
        } else {
            print(selected.map { NodeReference.text(of: $0.descriptor) }.joined(separator: "\n"), terminator: "")
        }
    }
}
