import ArgumentParser
import SluiceGraph
import SluicePlugins

struct PluginsCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugins", _superCommandName: SluiceCommand.name,
        abstract: "List the plugins on the search path, where each was found, and their node types.",
        discussion: """
            Plugins are files named libsluice-<name>.so, searched in order in the graph file's folder \
            (with --graph and --trust-graph-folder), each folder of SLUICE_PLUGIN_PATH, then the install's plugin folder \
            (<prefix>/lib/sluice/plugins, or the tool's own folder in a build tree). A file name found \
            earlier shadows the same name later. Exits 1 when a plugin fails to load or a node type \
            name is taken twice.
            """
    )


    @Option(name: .long, help: "Search this graph file's folder first, as running the graph would.", completion: .file(extensions: ["yaml", "yml"]))
    var graph: String?

    @Flag(name: .long, help: "Print each node type's ports and parameters, as `sluice nodes` does.")
    var verbose = false

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let graphFolder = graph.map(PluginsCommand.folder(of:))
        let searchPath = PluginSearchPath.standard(graphFolder: plugins.trustGraphFolder ? graphFolder : nil)
        // Every file is opened, and what each provides is remembered for graph commands.
        let catalog = PluginCatalog(searchPath: searchPath, index: PluginIndex.standard())
        print("search path:")
        if searchPath.folders.isEmpty { print("  (empty)") }
        for (index, folder) in searchPath.folders.enumerated() {
            print("  \(index + 1). \(folder.path) (\(folder.origin.rawValue))")
        }
        var failed = false
        var registry = GraphLoading.registry()
        var owners: [String: String] = [:]
        if let graphFolder, !plugins.trustGraphFolder {
            let files = PluginCatalog.pluginFiles(in: graphFolder)
            if !files.isEmpty {
                print("  (not opened: \(files.joined(separator: ", ")) in the graph's folder \(graphFolder); add --trust-graph-folder to search it)")
            }
        }
        if catalog.entries.isEmpty { print("\nno plugins found") }
        for entry in catalog.entries {
            print("\n\(entry.path) (\(entry.folder.origin.rawValue))")
            switch entry.outcome {
            case .shadowed(let first):
                print("  shadowed by \(first)")
            case .known, .knownFailure:
                break  // every file is opened here (no `needing`)
            case .failed(let error):
                print("  error: \(error)")
                failed = true
            case .loaded(let library):
                for type in library.graphNodeTypes {
                    let descriptor = type.descriptor
                    do throws(NodeRegistry.RegistrationError) {
                        try registry.register(type)
                        owners[descriptor.typeName] = library.path
                    } catch {
                        let other = owners[descriptor.typeName].map { "plugin '\($0)'" } ?? "the built-in nodes"
                        print("  error: \(PluginError.duplicateType(name: descriptor.typeName, path: library.path, other: other))")
                        failed = true
                        continue
                    }
                    if verbose {
                        print(NodeReference.text(of: descriptor).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
                    } else {
                        print("  \(descriptor.typeName) (\(descriptor.kind == .source ? "provider" : "processor")): \(descriptor.summary)")
                    }
                }
            }
        }
        if verbose { Self.printHostedPlugins() }
        if failed { throw ExitCode(1) }
    }

    /// `--verbose`: the LV2 and LADSPA plugins the `lv2` and `ladspa` node types can host, each
    /// with its parameters (reading every bundle and library: only the verbose listing does).
    static func printHostedPlugins() {
        let (lv2, ladspa) = HostedPlugins.installed()
        for (title, entries) in [
            ("LV2 plugins (`lv2` nodes; LV2_PATH or lilv's folders)", lv2),
            ("LADSPA plugins (`ladspa` nodes; LADSPA_PATH and the system's folders)", ladspa),
        ] {
            print("\n\(title): \(entries.count)")
            for entry in entries {
                print("  \(entry.reference)  \(entry.summary)")
                if !entry.parameters.isEmpty { print("    parameters: " + entry.parameters.joined(separator: ", ")) }
            }
        }
    }


    /// The folder of a graph file's path.
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
