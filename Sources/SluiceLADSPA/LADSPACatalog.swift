import SluiceGraph

/// The LADSPA plugins installed on a search path, for listings (`sluice nodes --ladspa`):
/// opening every library there, which only a listing asks for.
public struct LADSPACatalog: Sendable {
    /// Every plugin that loaded, by library file name then label.
    public var plugins: [LADSPAPlugin]
    /// One sentence per library that did not open (untrusted, not LADSPA, broken).
    public var failures: [String]

    /// Opens every library on `searchPath`. [control-thread]
    public static func installed(on searchPath: LADSPASearchPath = .standard()) -> LADSPACatalog {
        var plugins: [LADSPAPlugin] = []
        var failures: [String] = []
        for path in searchPath.libraries() {
            do throws(LADSPAError) {
                plugins += try LADSPALibrary.open(path: path).plugins
            } catch {
                failures.append(error.description)
            }
        }
        return LADSPACatalog(plugins: plugins, failures: failures)
    }

    /// How listings and `sluice nodes ladspa:…` name a plugin: `amp.so:amp_mono`.
    public static func reference(of plugin: LADSPAPlugin) -> String {
        (plugin.libraryPath.split(separator: "/").last.map(String.init) ?? plugin.libraryPath) + ":" + plugin.label
    }

    /// The node type `reference` names (`ladspa:amp.so:amp_mono`, the `ladspa:` optional),
    /// with the graph-file parameters that pick it. [control-thread]
    public static func type(named reference: String, searchPath: LADSPASearchPath = .standard()) throws(NodeCreationError) -> NodeType {
        var text = Substring(reference)
        if text.hasPrefix("ladspa:") { text = text.dropFirst("ladspa:".count) }
        guard let colon = text.lastIndex(of: ":") else {
            throw NodeCreationError(
                "'\(reference)' names no LADSPA plugin", fix: "name it as ladspa:<library>:<label>, e.g. ladspa:amp.so:amp_mono")
        }
        let library = try LADSPANodeType.open(String(text[..<colon]), in: searchPath, base: nil)
        let label = String(text[text.index(after: colon)...])
        guard let plugin = library.plugin(label: label) else {
            throw NodeCreationError(
                "'\(library.path)' has no LADSPA plugin labelled '\(label)'",
                fix: "its plugins: " + library.plugins.map(\.label).joined(separator: ", "))
        }
        return try LADSPANodeType.type(of: plugin)
    }
}
