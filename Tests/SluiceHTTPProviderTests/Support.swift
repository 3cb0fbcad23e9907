import Foundation
import HTTPTestSupport
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluicePlugins
import SluiceTestSupport
import Testing

/// The provider plugins `swift build` put beside the test runner, graphs using them, and the
/// PCM the test server serves.
enum Providers {
    /// `libsluice-<name>.so`, loaded through the real loader.
    static func library(_ name: String) throws -> PluginLibrary {
        try PluginLibrary.load(path: CommandRunner.productsFolder.appendingPathComponent("libsluice-\(name).so").path)
    }

    /// A graph: `voice` (the provider node's YAML body) → aligner [→ fader] → null.sink.
    static func graph(plugin: String, voice: String, rate: Int, channels: Int = 1, fade: Int? = nil, playback: String = "") throws -> CompiledGraph {
        var registry = BuiltinNodes.registry()
        try PluginCatalog.register([try library(plugin)], into: &registry)
        let fader = fade.map { "  fade:  { type: fader, length: \($0) }\n" } ?? ""
        let chain = fade == nil ? "voice -> align -> out" : "voice -> align -> fade -> out"
        let yaml = """
            name: provider-test
            nodes:
              voice: { \(voice) }
              align: { type: aligner }
            \(fader)  out:   { type: null.sink, rate: \(rate), channels: \(channels) }
            links:
              - \(chain)
            \(playback)
            """
        return try GraphCompiler(registry: registry).compile(try GraphFile.parse(yaml, file: "test.yaml"))
    }

    static func provider(_ graph: CompiledGraph) -> PluginProviderSource? {
        graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource
    }

    /// `frames` of S16LE noise-like PCM, different for each `seed`, every byte value likely.
    static func pcm(frames: Int, seed: Int = 0) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let sample = UInt16(truncatingIfNeeded: (frame &+ seed &* 7_919) &* 2_654_435_761 >> 13)
            bytes[2 * frame] = UInt8(sample & 0xFF)
            bytes[2 * frame + 1] = UInt8(sample >> 8)
        }
        return bytes
    }

    /// S16LE bytes as the aligner turns them into Float32.
    static func floats(_ pcm: [UInt8]) -> [Float] {
        stride(from: 0, to: pcm.count - 1, by: 2).map { index in
            Float(Int16(bitPattern: UInt16(pcm[index]) | UInt16(pcm[index + 1]) << 8)) / 32768
        }
    }
}

/// Compares sample arrays without printing thousands of values: the counts, then the first
/// index where they differ.
func expectSame(_ actual: [Float], _ expected: [Float], sourceLocation: Testing.SourceLocation = #_sourceLocation) {
    #expect(actual.count == expected.count, "sample count", sourceLocation: sourceLocation)
    if let index = (0..<min(actual.count, expected.count)).first(where: { actual[$0] != expected[$0] }) {
        Issue.record("first difference at sample \(index) of \(expected.count): \(actual[index]) instead of \(expected[index])", sourceLocation: sourceLocation)
    }
}
