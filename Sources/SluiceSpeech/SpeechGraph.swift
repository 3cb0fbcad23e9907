import Foundation
import SluiceConfig
import SluiceGraph
import SluiceHost
import SluiceJACK
import SluiceNodes
import SluicePlugins

/// The graph a ``SpeechController`` speaks through: the standard one or a file, with the
/// configuration's provider, voice and playback settings applied, compiled for JACK or for a
/// file.
public enum SpeechGraph {
    /// The standard speech graph, the same as `graphs/speak.yaml` (a test holds them equal):
    /// espeak-ng streamed into the aligner, resampled to the sink's rate, utterances joined
    /// by the crossfader, breaks kept click-free by the fader, mono copied to both ports.
    public static let standardYAML = """
        name: speak
        nodes:
          voice:    { type: espeak, voice: en, rate: 175, buffer: 1.0 }
          align:    { type: aligner }
          resample: { type: resampler }
          xfade:    { type: crossfader, duration: 0.1 }
          fade:     { type: fader, length: 256 }
          stereo:   { type: channel-map, channels: 2 }
          out:      { type: jack.sink, client: sluice-speak, connect: auto }
        links:
          - voice -> align -> resample -> xfade -> fade -> stereo -> out
        playback: { strategy: auto, max-buffered: 3.0 }
        """

    /// The node types a speech graph can use: `HostRegistry.load` (the built-in ones,
    /// `jack.sink`/`jack.source` on `server` when a graph names none, and every plugin on the
    /// search path; `graphFolder` only when the user trusts it), two plugins naming one type as
    /// a `SpeechError.graph`.
    public static func plugins(
        server: String?, graphFolder: String?, pluginFolders: [String] = [], needing: Set<String>? = nil
    ) throws(SpeechError) -> HostRegistry.Loaded {
        do throws(HostRegistry.LoadError) {
            return try HostRegistry.load(server: server, graphFolder: graphFolder, pluginFolders: pluginFolders, needing: needing)
        } catch {
            throw .graph(error.description)
        }
    }

    /// `plugins(…)`'s registry.
    public static func registry(server: String?, graphFolder: String?, pluginFolders: [String] = []) throws(SpeechError) -> NodeRegistry {
        try plugins(server: server, graphFolder: graphFolder, pluginFolders: pluginFolders).registry
    }

    /// The graph the configuration names, as declared. A file whose only problems are keys the
    /// reader skipped (an unknown top-level key) is kept with them, so compiling it reports
    /// its other errors too.
    static func declared(_ choice: SpeechGraphChoice) throws(SpeechError) -> GraphFileReading {
        let reading: GraphFileReading
        switch choice {
        case .standard: reading = GraphFile.read(standardYAML, file: standardFile)
        case .file(let path): reading = GraphFile.read(path: path)
        case .description(let given): reading = GraphFileReading(partial: given, diagnostics: [], onlySkippedKeys: true)
        }
        guard reading.diagnostics.isEmpty || reading.onlySkippedKeys else {
            throw .graph(GraphDiagnostics(reading.diagnostics).description)
        }
        return reading
    }

    /// `declared` with the configuration's playback settings, provider, voice and settings
    /// applied; `registry` tells sources from the rest.
    static func description(
        _ declared: GraphDescription, for configuration: SpeechConfiguration, registry: NodeRegistry
    ) throws(SpeechError) -> GraphDescription {
        var description = declared
        if let strategy = configuration.strategy { description.playback = strategy.apply(to: description.playback) }
        if let maxBuffered = configuration.maxBuffered { description.playback.maxBuffered = maxBuffered }
        if configuration.provider != nil || configuration.voice != nil || !configuration.settings.isEmpty {
            let index = try speakingNode(in: description, registry: registry)
            var node = description.nodes[index]
            let names = configuration.sourceNames
            // Each value is placed at the option that gave it, so an error names what the user
            // typed (`--set rate=fast`), not a line of the graph they did not write.
            var given = configuration.settings.sorted(by: { $0.key < $1.key }).map {
                (name: $0.key, value: $0.value, place: SourceLocation.option("\(names.setting) \($0.key)=\($0.value)"))
            }
            if let voice = configuration.voice {
                given.removeAll { $0.name == "voice" }
                given.insert(("voice", voice, SourceLocation.option("\(names.voice) \(voice)")), at: 0)
            }
            if let provider = configuration.provider {
                // Another provider's parameters differ: only what the configuration gives applies.
                node.type = provider
                node.parameters = []
                let place = SourceLocation.option("\(names.provider) \(provider)")
                node.location = place
                node.typeLocation = place
            } else if choiceIsStandard(declared) {
                // The standard graph's node: an error creating it (a voice the provider does not
                // have) is placed at the first option that changed it.
                node.location = given.first?.place ?? node.location
                node.typeLocation = nil
            }
            for (name, value, place) in given {
                node.parameters.removeAll { $0.name == name }
                node.parameters.append(ParameterDeclaration(name: name, value: .scalar(value, quoted: true), location: place, valueLocation: place))
            }
            description.nodes[index] = node
        }
        return description
    }

    /// Whether `description` is the standard graph (which the user did not write).
    static func choiceIsStandard(_ description: GraphDescription) -> Bool {
        description.file == standardFile
    }

    /// The standard graph's name in messages about the graph itself.
    static let standardFile = "<standard speech graph>"

    /// The node the provider, voice and settings apply to: the only source, or the source
    /// named `voice` when there are several.
    static func speakingNode(in description: GraphDescription, registry: NodeRegistry) throws(SpeechError) -> Int {
        let sources = description.nodes.indices.filter { index in
            registry.type(named: description.nodes[index].type)?.descriptor.kind == .source
        }
        if sources.count == 1 { return sources[0] }
        if let named = sources.first(where: { description.nodes[$0].name == "voice" }) { return named }
        throw .graph("graph '\(description.name)' has \(sources.count) sources; name the one that speaks `voice` so the provider and voice apply to it")
    }

    /// A compiled speech graph and its text-driven source.
    struct Compiled {
        let graph: CompiledGraph
        let sourceName: String
        let source: any TextDrivenSource
        /// The language its voice speaks, when the voice is named by one: where sentences end.
        let language: String?
    }

    /// The node types Sluice ships as plugins, and the product that builds each.
    static let shippedPlugins = ["espeak", "elevenlabs", "openai", "http-pcm", "ducker"]

    /// Throws, naming the plugin and how to get it, when `types` include a shipped plugin's type
    /// that no plugin on the search path provides: a library user's program finds plugins
    /// beside its executable or in `pluginFolders`, not where `sluice` keeps them.
    static func requirePlugins(_ types: Set<String>, in registry: NodeRegistry, pluginFolders: [String]) throws(SpeechError) {
        for type in types.sorted() where shippedPlugins.contains(type) && registry.type(named: type) == nil {
            let searched = pluginFolders.isEmpty ? "" : " (\(pluginFolders.joined(separator: ", ")) searched too)"
            throw .graph(
                "the '\(type)' node type is a plugin, libsluice-\(type).so, and no plugin on the search path provides it\(searched): "
                    + "build it beside your program with `swift build --product sluice-\(type)`, put its folder on SLUICE_PLUGIN_PATH, "
                    + "or install Sluice's Debian package and add \"/usr/lib/sluice/plugins\" to SpeechConfiguration.pluginFolders "
                    + "(docs/plugins.md)")
        }
    }

    static func compile(_ configuration: SpeechConfiguration) throws(SpeechError) -> Compiled {
        let reading = try declared(configuration.graph)
        let declared = reading.partial
        let live: Bool
        var server: String?
        switch configuration.output {
        case .jack(let name):
            live = true
            server = name
        case .file:
            live = false
        }
        // Only the plugins the graph (and a provider chosen in the configuration) may use are
        // opened, as far as the plugin index knows.
        var needing = Set(declared.nodes.map(\.type))
        if let provider = configuration.provider { needing.insert(provider) }
        let loaded = try plugins(
            server: server, graphFolder: configuration.trustGraphFolder ? declared.baseDirectory : nil, pluginFolders: configuration.pluginFolders,
            needing: needing)
        let registry = loaded.registry
        try requirePlugins(needing, in: registry, pluginFolders: configuration.pluginFolders)
        let description = try description(declared, for: configuration, registry: registry)
        let graph: CompiledGraph
        do {
            graph = try GraphCompiler(registry: registry, options: .init(isLive: live)).compile(description)
        } catch {
            throw .graph(reading.combined(with: loaded.explaining(error)).description)
        }
        guard reading.diagnostics.isEmpty else { throw .graph(GraphDiagnostics(reading.diagnostics).description) }
        let speaking = graph.nodes.filter { $0.instance is any TextDrivenSource }
        guard speaking.count == 1, let node = speaking.first, let source = node.instance as? any TextDrivenSource else {
            throw .graph(speaking.isEmpty
                ? "graph '\(description.name)' has no text-driven source to speak (a provider such as espeak, or morse)"
                : "graph '\(description.name)' has \(speaking.count) text-driven sources (\(speaking.map { "'\($0.name)'" }.joined(separator: ", "))); a speech controller speaks through one")
        }
        guard !graph.sinks.isEmpty else { throw .graph("graph '\(description.name)' has no sink to play the speech") }
        return Compiled(
            graph: graph, sourceName: node.name, source: source,
            language: SentenceChunker.language(ofParameters: node.parameters.values))
    }
}
