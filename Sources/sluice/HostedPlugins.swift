import SluiceGraph
import SluiceLADSPA
import SluiceLV2

/// The installed LV2 and LADSPA plugins the `lv2` and `ladspa` node types can host, each with
/// its node type, for the listings (`plugins --verbose`, `schema --installed`). Reads every
/// LV2 bundle and opens every LADSPA library: only these listings ask for that.
enum HostedPlugins {
    struct Entry {
        /// How the listing names it: the URI, or `library.so:label`.
        var reference: String
        var summary: String
        /// The graph-file parameters that pick it, with their values.
        var picking: [(name: String, value: String)]
        var type: NodeType
        /// Its own parameters (its controls), by name.
        var parameters: [String]
    }

    static func installed() -> (lv2: [Entry], ladspa: [Entry]) {
        let lv2 = LV2World.shared.installedPlugins().plugins.compactMap { plugin -> Entry? in
            guard let type = try? LV2NodeType.type(of: plugin) else { return nil }
            return Entry(reference: plugin.uri, summary: plugin.summary, picking: [("uri", plugin.uri)], type: type,
                parameters: plugin.controls.map(\.symbol))
        }
        let ladspa = LADSPACatalog.installed().plugins.compactMap { plugin -> Entry? in
            guard let type = try? LADSPANodeType.type(of: plugin) else { return nil }
            let reference = LADSPACatalog.reference(of: plugin)
            let library = String(reference.prefix { $0 != ":" })
            return Entry(reference: reference, summary: plugin.summary, picking: [("library", library), ("label", plugin.label)], type: type,
                parameters: plugin.controls.map(\.symbol))
        }
        return (lv2, ladspa)
    }
}
