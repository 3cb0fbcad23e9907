import SluiceGraph

/// Offline renders of compiled graphs, as the node and provider tests need them.
public enum GraphRendering {
    /// Renders `graph` offline, feeding `text` (one utterance per element) to its text-driven
    /// sources; the first sink's interleaved samples and the report.
    public static func render(
        _ graph: CompiledGraph, text: [String] = [], observer: ((OfflineRenderer.Tick) -> Void)? = nil
    ) throws -> ([Float], RunReport) {
        for source in graph.textSources {
            for line in text { source.receive(text: line) }
            source.finishText()
        }
        let renderer = try OfflineRenderer(graph: graph)
        var samples: [Float] = []
        renderer.output = { sink, buffer in if sink == 0 { samples += buffer } }
        renderer.observer = observer
        let report = try renderer.run()
        return (samples, report)
    }
}
