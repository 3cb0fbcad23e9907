import Foundation
import SluiceAudio
import SluiceGraph
import SluicePlugins
import SluiceTestKit
import SluiceTestSupport
import Testing

/// A plugin built against ABI version 1 (Tests/Fixtures/Plugins/abi-v1, compiled with version 1's
/// headers kept beside it) still loads and runs: the host reads its structs as the part before
/// version 2's `size` and gives it no events (docs/plugins.md).
@Suite struct ABIVersion1Tests {
    static func library() throws -> PluginLibrary { try PluginLibrary.load(path: Plugins.abiVersion1) }

    @Test("it loads as version 1, and its four parameters read right through version 1's stride")
    func descriptors() throws {
        let library = try Self.library()
        #expect(library.abiVersion == 1)
        #expect(library.nodeTypes.map(\.descriptor.typeName) == ["test-v1-gain", "test-v1-pcm"])
        #expect(library.nodeTypes.map(\.kind) == [.processor, .provider])
        let gain = library.nodeTypes[0].descriptor
        #expect(gain.parameters.map(\.name) == ["gain", "bias", "mode", "label"])
        #expect(gain.parameters.map(\.type) == [.number(0...4), .number(-1...1), .choice(["plain", "inverted"]), .string])
        #expect(gain.parameters.map(\.defaultValue) == [.number(1), .number(0), .string("plain"), nil])
        #expect(gain.parameter(named: "bias")?.unit == "FS")
        #expect(gain.parameters.map(\.isRequired) == [false, false, false, true])
        #expect(gain.parameters.allSatisfy { !$0.isLive }, "version 1 had no live parameters")
    }

    @Test("its processor runs in a graph, exactly, without events and without calls of 0 frames")
    func processor() throws {
        let library = try Self.library()
        let tone = "name: t\nnodes:\n  a: { type: tone, frequency: 440, duration: 0.5, rate: 48000, channels: 2 }\n"
        let sink = "  out: { type: null.sink, rate: 48000, channels: 2 }\n"
        let plain = try Plugins.compile(tone + sink + "links:\n  - a -> out\n", libraries: [library])
        let scaled = try Plugins.compile(
            tone + "  g: { type: test-v1-gain, gain: 0.5, bias: 0.25, mode: inverted, label: x }\n" + sink
                + "links:\n  - a -> g -> out\n",
            libraries: [library])
        let (reference, _) = try GraphRendering.render(plain)
        let (samples, report) = try GraphRendering.render(scaled)
        #expect(reference.count == 48_000)
        #expect(samples == reference.map { Float((Double($0) * 0.5 + 0.25) * -1) })
        // It fails a call of 0 frames (version 1 never allowed one): none came.
        #expect(report.counters["g.plugin-errors"] == nil, "\(report.counters)")
    }

    @Test("its node takes no live changes, and markers pass through it as before")
    func markersPass() throws {
        let node = try Plugins.processor("test-v1-gain", from: Plugins.abiVersion1, NodeParameters(["label": .string("x")]))
        #expect(!(node is any LiveParameterNode))
        let bench = try NodeTestBench(node, inputs: [.frames(rate: 48_000, channels: 1)], seed: 5)
        let markers = [
            Marker(position: 0, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 700, event: .utteranceEnd(UtteranceID(1))),
            Marker(position: 1_000, event: .endOfStream),
        ]
        bench.feed([Float](repeating: 0.5, count: 1_000), markers: markers)
        bench.run()
        #expect(bench.violations.isEmpty)
        #expect(bench.markers[0] == markers)
        #expect(bench.output() == [Float](repeating: 0.5, count: 1_000))
    }

    @Test("its provider speaks in a graph: version 1's provider vtable, read without its size")
    func provider() throws {
        let library = try Self.library()
        let graph = try Plugins.compile(
            """
            name: speech
            nodes:
              voice: { type: test-v1-pcm }
              align: { type: aligner }
              out:   { type: null.sink, rate: 16000, channels: 1 }
            links:
              - voice -> align -> out
            """, libraries: [library])
        let (samples, report) = try GraphRendering.render(graph, text: ["ab", "cde"])
        #expect(samples == SwiftKitPluginTests.expectedSpeech(["ab", "cde"]))
        #expect(report.underruns == 0)
    }
}
