import SluiceGraph

/// The processor node types SluiceNodes provides, ready to register in a `NodeRegistry`.
public enum BuiltinProcessors {
    public static let types: [NodeType] = [
        AlignerNode.type,
        ResamplerNode.type,
        CrossfaderNode.type,
        FaderNode.type,
        MeterNode.type,
        MixerNode.type,
        ChannelMapNode.type,
        TeeNode.type,
    ]
}
