import SluiceGraph

/// The source node types SluiceNodes provides, ready to register in a `NodeRegistry`.
public enum BuiltinSources {
    public static let types: [NodeType] = [
        ToneSource.type,
        WavSource.type,
        BytesSource.type,
        MorseSource.type,
    ]
}
