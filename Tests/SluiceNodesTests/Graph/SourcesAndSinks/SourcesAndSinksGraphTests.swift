import CSndFile
import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("sources and sinks in graphs")
struct SourcesAndSinksGraphTests {
    static func registry() throws -> NodeRegistry {
        var registry = NodeRegistry()
        for type in BuiltinSources.types + BuiltinSinks.types { try registry.register(type) }
        return registry
    }

    /// `source → sink`, with parameters as graph files give them.
    static func graph(_ source: (String, [String: String]), _ sink: (String, [String: String])) -> GraphDescription {
        func declaration(_ name: String, _ node: (String, [String: String])) -> NodeDeclaration {
            NodeDeclaration(name: name, type: node.0, parameters: node.1.sorted { $0.key < $1.key }.map {
                ParameterDeclaration(name: $0.key, value: .scalar($0.value, quoted: false))
            })
        }
        return GraphDescription(
            name: "test", nodes: [declaration("source", source), declaration("sink", sink)],
            links: [LinkDeclaration(from: PortReference(node: "source"), to: PortReference(node: "sink"))])
    }

    static func toneSamples(_ values: [String: ParameterValue]) throws -> [Float] {
        let harness = try SourceHarness(ToneSource.type, values)
        harness.runToEnd()
        return harness.samples
    }

    @Test("the built-in lists hold each type once, of the right kind")
    func builtinLists() throws {
        #expect(BuiltinSources.types.map(\.descriptor.typeName) == ["tone", "wav.source", "bytes.source", "morse"])
        #expect(BuiltinSources.types.allSatisfy { $0.descriptor.kind == .source && $0.descriptor.inputs.isEmpty && $0.descriptor.outputs.count == 1 })
        #expect(BuiltinSinks.types.map(\.descriptor.typeName) == ["wav.sink", "null.sink"])
        #expect(BuiltinSinks.types.allSatisfy { $0.descriptor.kind == .sink && $0.descriptor.inputs.count == 1 && $0.descriptor.outputs.isEmpty })
        #expect(BytesSource.type.descriptor.outputs[0].medium == .bytes)
        _ = try Self.registry()
    }

    @Test("offline: tone → wav.sink writes the tone exactly; rate auto follows the sink")
    func offlineRender() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("tone.wav")
        let description = Self.graph(
            ("tone", ["rate": "auto", "frequency": "1000", "duration": "0.3", "channels": "2"]),
            ("wav.sink", ["path": path, "rate": "22050"]))
        let compiled = try GraphCompiler(registry: try Self.registry()).compile(description)
        let report = try OfflineRenderer(graph: compiled).run()
        #expect(report.failures.isEmpty)
        let file = try ReadBack(path)
        #expect(file.rate == 22_050)
        let expected = try Self.toneSamples(["rate": .integer(22_050), "frequency": .number(1_000), "duration": .number(0.3), "channels": .integer(2)])
        #expect(firstDifference(file.samples, expected) == nil)
    }

    @Test("live: tone → wav.sink through the sink's clock thread", .timeLimit(.minutes(1)))
    func liveFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("live.wav")
        let description = Self.graph(("tone", ["duration": "0.4", "rate": "16000"]), ("wav.sink", ["path": path]))
        let compiled = try GraphCompiler(registry: try Self.registry(), options: .init(isLive: true)).compile(description)
        let report = try LiveRun(graph: compiled).run()
        #expect(report.failures.isEmpty)
        let file = try ReadBack(path)
        #expect(firstDifference(file.samples, try Self.toneSamples(["duration": .number(0.4), "rate": .integer(16_000)])) == nil)
    }

    @Test("live: morse → null.sink at 20× real time plays the text and ends", .timeLimit(.minutes(1)))
    func liveMorse() throws {
        let description = Self.graph(("morse", ["wpm": "60", "rate": "8000"]), ("null.sink", ["speed": "20", "period": "128"]))
        let compiled = try GraphCompiler(registry: try Self.registry(), options: .init(isLive: true)).compile(description)
        let source = try #require(compiled.textSources.first)
        source.receive(text: "sos")
        source.finishText()
        let run = try LiveRun(graph: compiled)
        let report = try run.run()
        #expect(report.failures.isEmpty)
        let sink = try #require(compiled.nodes.first { $0.name == "sink" }?.instance as? NullSink)
        // S O S = 5 + 3 + 11 + 3 + 5 = 27 dits, then 7: 34 dits of 160 frames.
        #expect(sink.framesWritten >= 34 * 160)
    }
}
