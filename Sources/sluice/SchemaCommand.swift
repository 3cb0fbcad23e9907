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
            your own: sluice schema > my-graph.schema.json. With --installed it also lists the \
            LV2 and LADSPA plugins installed here: an editor then completes `uri:`, `library:` \
            and `label:` and checks each plugin's own parameters (this reads every bundle and \
            library, which nothing else but the listings does). See docs/graph-files.md.
            """
    )


    @Flag(name: .long, help: "Only the built-in node types, no plugins.")
    var builtin = false

    @Flag(name: .long, help: "Add the installed LV2 and LADSPA plugins: each one's parameters, and the URIs, libraries and labels to complete.")
    var installed = false

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let (registry, _) = try NodesCommand.registry(builtinOnly: builtin)
        print(GraphSchema.document(for: registry.all.map(\.descriptor), hosted: installed ? Self.installedPlugins() : []).text)
    }

    /// Every installed LV2 and LADSPA plugin Sluice can host, with the values that pick it.
    static func installedPlugins() -> [GraphSchema.HostedPlugin] {
        let (lv2, ladspa) = HostedPlugins.installed()
        return (lv2 + ladspa).map { GraphSchema.HostedPlugin(picking: $0.picking, descriptor: $0.type.descriptor) }
    }

}
