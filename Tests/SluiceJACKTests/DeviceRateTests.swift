import SluiceConfig
import SluiceGraph
import SluiceJACK
import SluiceNodes
import Testing

/// `GraphCompiler.Options.deviceRate`: offline, JACK endpoints stand at a given rate, so a
/// checker can tell the links whose rate the server decides (`sluice dot` draws them `auto`).
@Suite struct DeviceRateTests {
    static func compile(_ graph: String, deviceRate: Int?) throws -> [String] {
        var registry = BuiltinNodes.registry()
        try registry.register(JackSink.type())
        try registry.register(JackSource.type())
        let compiled = try GraphCompiler(registry: registry, options: .init(deviceRate: deviceRate)).compile(OneLineGraph.parse(graph))
        return compiled.edges.map(\.format.description)
    }

    @Test("a jack.sink decides the auto rates upstream; a fixed source's rate stays")
    func sinkDecides() throws {
        let graph = "tone rate=24000 ! resampler ! fader ! jack.sink"
        #expect(try Self.compile(graph, deviceRate: 44_100) == ["F32 24000 Hz mono", "F32 44100 Hz mono", "F32 44100 Hz mono"])
        #expect(try Self.compile(graph, deviceRate: 48_000) == ["F32 24000 Hz mono", "F32 48000 Hz mono", "F32 48000 Hz mono"])
        // Without a stand-in rate the sink decides nothing offline: its input's rate stands.
        #expect(try Self.compile(graph, deviceRate: nil) == ["F32 24000 Hz mono", "F32 24000 Hz mono", "F32 24000 Hz mono"])
    }

    @Test("a jack.source records at the stand-in rate; a wav.sink's own rate is not the server's")
    func sourceRecordsAtIt() throws {
        #expect(try Self.compile("jack.source ! fader ! jack.sink", deviceRate: 44_100) == ["F32 44100 Hz stereo", "F32 44100 Hz stereo"])
        #expect(try Self.compile("tone ! fader ! wav.sink path=x.wav rate=48000", deviceRate: 44_100) == ["F32 48000 Hz mono", "F32 48000 Hz mono"])
    }
}
