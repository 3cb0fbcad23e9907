import SluiceGraph
import SluiceJACK
import SluiceNodes
import SluicePlugins

/// Every node type this host can run, in one place: the built-in nodes, the JACK endpoints,
/// and the plugins found on a graph's search path. The `sluice` tool and the speech layer
/// both take their registry from here.
public enum HostRegistry {
    /// A plugin on the search path failed to load, or two plugins name one type: every
    /// problem, one per entry.
    public struct LoadError: Error, Sendable, Hashable, CustomStringConvertible {
        public var problems: [String]

        /// One problem per line, each after the first an `error:` line of its own once printed
        /// after the first's prefix.
        public var description: String { problems.joined(separator: "\nerror: ") }
    }

    /// The built-in node types and `jack.sink`/`jack.source` (on `server` when a graph
    /// names none): every type but the plugins'. [control-thread]
    public static func builtin(server: String? = nil) -> NodeRegistry {
        var registry = BuiltinNodes.registry()
        // Distinct from the built-in names; a CLI test checks the whole listing.
        try! registry.register(JackSink.type(defaultServer: server))
        try! registry.register(JackSource.type(defaultServer: server))
        return registry
    }

    /// `builtin(server:)` plus the node types of every plugin on the search path of a graph
    /// in `graphFolder` (nil: no graph folder), with `pluginFolders` searched first.
    /// [control-thread]
    public static func full(server: String? = nil, graphFolder: String?, pluginFolders: [String] = []) throws(LoadError) -> NodeRegistry {
        var registry = builtin(server: server)
        var searchPath = PluginSearchPath.standard(graphFolder: graphFolder)
        searchPath.folders.insert(contentsOf: pluginFolders.map { PluginSearchPath.Folder($0, origin: .environment) }, at: 0)
        let catalog = PluginCatalog(searchPath: searchPath)
        var problems = catalog.errors.map(\.description)
        do throws(PluginError) {
            try catalog.register(into: &registry)
        } catch {
            problems.append(error.description)
        }
        guard problems.isEmpty else { throw LoadError(problems: problems) }
        return registry
    }
}
