import ArgumentParser
import SluiceConfig
import SluiceGraph

struct SchemaCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", _superCommandName: SluiceCommand.name,
        abstract: "Print a JSON Schema (draft 2020-12) of graph files, for editors.",
        discussion: """
            Made from the node types this host knows: the built-in ones and the plugins on the \
            search path (as `sluice nodes` lists them), each parameter with its type, range or \
            choices, default and description. An editor with a YAML language server uses it \
            through a first line in the graph file:

              # yaml-language-server: $schema=../schemas/sluice-graph.schema.json

            The repository's schemas/sluice-graph.schema.json is this command's output for the \
            built-in nodes and the plugins built beside the tool; with plugins of your own, save \
            your own: sluice schema > my-graph.schema.json. See docs/graph-files.md.
            """
    )


    @Flag(name: .long, help: "Only the built-in node types, no plugins.")
    var builtin = false

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let (registry, _) = try NodesCommand.registry(builtinOnly: builtin)
        print(GraphSchema.document(for: registry.all.map(\.descriptor)).text)
    }
}
