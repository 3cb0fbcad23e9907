import SluiceGraph
import SluiceJACK
import SluiceLADSPA
import SluiceLV2
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

    /// The built-in node types, `jack.sink`/`jack.source` (on `server` when a graph names
    /// none) and `ladspa`: every type but Sluice's plugins'. [control-thread]
    public static func builtin(server: String? = nil) -> NodeRegistry {
        var registry = BuiltinNodes.registry()
        // Distinct from the built-in names; a CLI test checks the whole listing.
        try! registry.register(JackSink.type(defaultServer: server))
        try! registry.register(JackSource.type(defaultServer: server))
        // Opens nothing until a graph names it.
        try! registry.register(LADSPANodeType.type())
        try! registry.register(LV2NodeType.type())
        return registry
    }

    /// The registry with every plugin that loaded, and the plugin files that did not.
    public struct Loaded: Sendable {
        public var registry: NodeRegistry
        /// One message per plugin file that failed to load (not a library, a wrong ABI, a
        /// file or folder others may write). A graph that does not use its types is not
        /// affected; a graph with a type nobody provides shows these beside that error.
        public var failures: [String]
        /// The plugin file each plugin node type came from, by type name (built-in types are
        /// not here).
        public var pluginFiles: [String: String] = [:]

        /// The diagnostics with `failures` added as notes to each unknown-type error, so a
        /// graph that needed a broken plugin's type says why it is missing.
        public func explaining(_ diagnostics: GraphDiagnostics) -> GraphDiagnostics {
            guard !failures.isEmpty else { return diagnostics }
            return diagnostics.addingToUnknownTypeFixes(
                failures.map { "a plugin on the search path did not load: \($0)" }.joined(separator: "; "))
        }
    }

    /// `builtin(server:)` plus the node types of every plugin on the search path of a graph
    /// in `graphFolder` (nil: no graph folder; pass it only when the user trusts that folder,
    /// docs/plugins.md), with `pluginFolders` searched first. A plugin that fails to load is
    /// a failure in the result, not an error: it breaks only the graphs that use it.
    /// [control-thread]
    ///
    /// With `needing` (the node types a graph uses), plugins are looked up in the user's
    /// `PluginIndex` first and only those that may provide a needed type are opened; nil
    /// opens every plugin on the path.
    ///
    /// - Throws: two plugins naming one type (which one a graph meant cannot be known).
    public static func load(
        server: String? = nil, graphFolder: String?, pluginFolders: [String] = [], needing: Set<String>? = nil
    ) throws(LoadError) -> Loaded {
        var registry = builtin(server: server)
        var searchPath = PluginSearchPath.standard(graphFolder: graphFolder)
        searchPath.folders.insert(contentsOf: pluginFolders.map { PluginSearchPath.Folder($0, origin: .environment) }, at: 0)
        let wanted = needing.map { $0.filter { registry.type(named: $0) == nil } }
        let catalog = PluginCatalog(searchPath: searchPath, index: wanted == nil ? nil : PluginIndex.standard(), needing: wanted)
        do throws(PluginError) {
            try catalog.register(into: &registry)
        } catch {
            throw LoadError(problems: [error.description])
        }
        var files: [String: String] = [:]
        for library in catalog.libraries {
            for type in library.graphNodeTypes { files[type.descriptor.typeName] = library.path }
        }
        return Loaded(registry: registry, failures: catalog.failureMessages, pluginFiles: files)
    }

    /// `load(…)`'s registry. [control-thread]
    public static func full(server: String? = nil, graphFolder: String?, pluginFolders: [String] = []) throws(LoadError) -> NodeRegistry {
        try load(server: server, graphFolder: graphFolder, pluginFolders: pluginFolders).registry
    }
}
