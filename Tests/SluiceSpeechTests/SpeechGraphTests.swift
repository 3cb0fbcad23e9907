import Foundation
import SluiceGraph
import SluiceHost
@testable import SluiceSpeech
import SluiceTestSupport
import Testing

/// The standard graph with a configuration's provider, voice and settings: each value placed at
/// the option that gave it, so an error names what the user typed, never a line of the
/// built-in graph.
@Suite struct SpeechGraphTests {
    static func registry() throws -> NodeRegistry {
        try HostRegistry.full(graphFolder: nil, pluginFolders: [CommandRunner.productsFolder.path])
    }

    static func error(_ modify: (inout SpeechConfiguration) -> Void) -> String {
        var configuration = Speech.file(FileManager.default.temporaryDirectory.appendingPathComponent("speech-graph-\(getpid()).wav").path)
        configuration.settings = [:]
        modify(&configuration)
        do {
            _ = try SpeechGraph.compile(configuration)
            return "compiled"
        } catch {
            return error.description
        }
    }

    @Test("a shipped plugin the search path lacks is a thrown error naming the plugin and how to build or install it")
    func missingPlugin() {
        let builtinOnly = HostRegistry.builtin()
        #expect(throws: SpeechError.graph(
            "the 'espeak' node type is a plugin, libsluice-espeak.so, and no plugin on the search path provides it (/opt/mine searched too): "
                + "build it beside your program with `swift build --product sluice-espeak`, put its folder on SLUICE_PLUGIN_PATH, "
                + "or install Sluice's Debian package and add \"/usr/lib/sluice/plugins\" to SpeechConfiguration.pluginFolders (docs/plugins.md)")) {
            try SpeechGraph.requirePlugins(["aligner", "espeak", "fader"], in: builtinOnly, pluginFolders: ["/opt/mine"])
        }
        // Types that are there, or are no plugin of ours, are left to the compiler's own errors.
        #expect(throws: Never.self) { try SpeechGraph.requirePlugins(["aligner", "my-own"], in: builtinOnly, pluginFolders: []) }
    }

    @Test("settings, voice and provider are declared at their options; the node at the provider's")
    func placedAtOptions() throws {
        var configuration = SpeechConfiguration()
        configuration.provider = "espeak"
        configuration.voice = "en-us"
        configuration.settings = ["rate": "200", "pitch": "40"]
        configuration.sourceNames = .init(provider: "--provider", voice: "--voice", setting: "--set")
        let declared = try SpeechGraph.declared(.standard).partial
        let description = try SpeechGraph.description(declared, for: configuration, registry: try Self.registry())
        let voice = try #require(description.nodes.first { $0.name == "voice" })
        #expect(voice.location == .option("--provider espeak"))
        #expect(voice.parameters.map { "\($0.name)@\($0.location?.description ?? "-")" }
            == ["voice@--voice en-us", "pitch@--set pitch=40", "rate@--set rate=200"])
    }

    @Test("the library's own words when the caller names no options; no line of the built-in graph in any message")
    func defaultNames() {
        let text = Self.error { $0.settings = ["rate": "fast"] }
        #expect(text.hasPrefix("error: setting rate=fast: parameter 'rate' (wpm) of node 'voice' must be an integer"), "\(text)")
        let provider = Self.error { $0.provider = "espek" }
        #expect(provider.hasPrefix("error: provider espek: unknown node type 'espek'"), "\(provider)")
        let voice = Self.error { $0.voice = "qqq" }
        #expect(voice.hasPrefix("error: voice qqq: node 'voice' (espeak):"), "\(voice)")
        for message in [text, provider, voice] { #expect(!message.contains("<standard speech graph>")) }
    }

    @Test("an option location prints as the option; a file's as file:line:column")
    func locations() {
        #expect(GraphDiagnostic("bad", at: .option("--set a=b")).description == "error: --set a=b: bad")
        #expect(GraphDiagnostic("bad", at: SourceLocation(file: "g.yaml", line: 2, column: 3)).description == "g.yaml:2:3: error: bad")
    }

    @Test("a graph file with an unknown top-level key: its other errors reported with it")
    func unknownKeyInAFile() throws {
        let folder = TemporaryFolder()
        let graph = try folder.write("""
            colour: red
            nodes:
              voice: { type: espeak, rat: 175 }
              align: { type: aligner }
              out:   { type: null.sink, rate: 22050 }
            links:
              - voice -> align -> out

            """, to: "keys.yaml")
        let text = Self.error { $0.graph = .file(path: graph.path) }
        #expect(text.contains("keys.yaml:1:1: error: unknown top-level key 'colour'"), "\(text)")
        #expect(text.contains("keys.yaml:3:26: error: node 'voice' (espeak) has no parameter 'rat'"), "\(text)")
    }
}
