import SluiceGraph

/// Every node type SluiceNodes provides: sources, processors and sinks.
public enum BuiltinNodes {
    public static var types: [NodeType] { BuiltinSources.types + BuiltinProcessors.types + BuiltinSinks.types }

    /// A registry holding the built-in node types; add plugins and custom nodes to it.
    public static func registry() -> NodeRegistry {
        var registry = NodeRegistry()
        for type in types {
            // The built-in names are distinct; BuiltinNodesTests checks.
            try! registry.register(type)
        }
        return registry
    }
}
