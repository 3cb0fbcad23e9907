import SluiceGraph

/// The sink node types SluiceNodes provides that need no device, ready to register in a
/// `NodeRegistry`.
public enum BuiltinSinks {
    public static let types: [NodeType] = [
        WavSink.type,
        NullSink.type,
    ]
}
