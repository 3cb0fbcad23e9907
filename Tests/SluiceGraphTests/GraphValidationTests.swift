import SluiceConfig
import SluiceNodes
import Testing
@testable import SluiceGraph

/// One test per graph-file error the compiler finds: each asserts the message, the line and
/// column it points at, and the fix. Graphs are YAML, parsed by SluiceConfig, checked against
/// the built-in node types.
@Suite struct GraphValidationTests {
    /// The single diagnostic a graph produces.
    func diagnostic(_ yaml: String, sinkRate: Int? = nil) throws -> GraphDiagnostic {
        let description = try GraphFile.parse(yaml, file: "test.yaml")
        do {
            _ = try GraphCompiler(registry: BuiltinNodes.registry(), options: .init(sinkRate: sinkRate)).compile(description)
        } catch {
            try #require(error.diagnostics.count == 1, "\(error)")
            return error.diagnostics[0]
        }
        Issue.record("the graph compiled")
        throw CancellationError()
    }

    func expect(_ diagnostic: GraphDiagnostic, _ message: String, line: Int, column: Int, fix: String? = nil,
                sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        #expect(diagnostic.message == message, sourceLocation: sourceLocation)
        #expect(diagnostic.location == SluiceGraph.SourceLocation(file: "test.yaml", line: line, column: column), sourceLocation: sourceLocation)
        if let fix { #expect(diagnostic.fix == fix, sourceLocation: sourceLocation) }
    }

    @Test func unknownNodeTypeSuggestsTheClosestNames() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: tonee }
              out: { type: null.sink }
            links:
              - voice -> out
            """)
        expect(found, "unknown node type 'tonee' for node 'voice'", line: 2, column: 18, fix: "did you mean 'tone'?")
    }

    @Test func misspelledParameter() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: tone, frequncy: 440 }
              out: { type: null.sink }
            links:
              - voice -> out
            """)
        expect(found, "node 'voice' (tone) has no parameter 'frequncy'", line: 2, column: 24, fix: "did you mean 'frequency'?")
    }

    @Test func wrongParameterType() throws {
        let found = try diagnostic("""
            nodes:
              voice:
                type: tone
                frequency: loud
              out: { type: null.sink }
            links:
              - voice -> out
            """)
        expect(found, "parameter 'frequency' (Hz) of node 'voice' must be a number in 1…20000, got 'loud'", line: 4, column: 16)
    }

    @Test func outOfRangeValue() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: tone, frequency: 30000 }
              out: { type: null.sink }
            links:
              - voice -> out
            """)
        expect(found, "parameter 'frequency' (Hz) of node 'voice' must be a number in 1…20000, got 30000", line: 2, column: 35)
    }

    @Test func choiceValueSuggestsTheClosest() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: tone }
              rs: { type: resampler, quality: sinc-fastst, rate: 44100 }
              out: { type: null.sink }
            links:
              - voice -> rs -> out
            """)
        #expect(found.message.hasPrefix("parameter 'quality' of node 'rs' must be one of "))
        expect(found, found.message, line: 3, column: 35, fix: "did you mean 'sinc-fastest'?")
    }

    @Test func duplicateNodeName() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: tone }
              voice: { type: tone, frequency: 220 }
              out: { type: null.sink }
            links:
              - voice -> out
            """)
        expect(found, "duplicate node name 'voice' (first declared at line 2)", line: 3, column: 3, fix: "give each node its own name")
    }

    @Test func linkToAMissingNode() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: tone }
              out: { type: null.sink }
            links:
              - voice -> outt
            """)
        expect(found, "link to missing node 'outt'", line: 5, column: 14, fix: "did you mean 'out'?")
    }

    @Test func linkToAMissingPort() throws {
        let found = try diagnostic("""
            nodes:
              a: { type: tone }
              b: { type: tone }
              mix: { type: mixer, inputs: 2 }
              out: { type: null.sink }
            links:
              - a -> mix.in1
              - b -> mix.inn2
              - mix -> out
            """)
        expect(found, "node 'mix' (mixer) has no input port 'inn2'", line: 8, column: 10, fix: "did you mean 'in2'? its inputs are in1, in2")
    }

    @Test func aPortLinkedTwice() throws {
        let found = try diagnostic("""
            nodes:
              a: { type: tone }
              b: { type: tone }
              out: { type: null.sink }
            links:
              - a -> out
              - b -> out
            """)
        expect(found, "input 'out.in' is linked twice (first at line 6)", line: 7, column: 10)
        #expect(found.fix?.contains("mixer") == true)
    }

    @Test func anUnlinkedRequiredPort() throws {
        let found = try diagnostic("""
            nodes:
              a: { type: tone }
              mix: { type: mixer, inputs: 2 }
              out: { type: null.sink }
            links:
              - a -> mix.in1
              - mix -> out
            """)
        expect(found, "input 'mix.in2' is not linked", line: 3, column: 3,
               fix: "link a node into it under `links:`, e.g. `- source -> mix.in2`")
    }

    @Test func aCycle() throws {
        let found = try diagnostic("""
            nodes:
              a: { type: tone }
              mix: { type: mixer, inputs: 2 }
              split: { type: tee, outputs: 2 }
              out: { type: null.sink }
            links:
              - a -> mix.in1
              - mix -> split
              - split.out1 -> out
              - split.out2 -> mix.in2
            """)
        expect(found, "links form a cycle: mix -> split -> mix", line: 10, column: 19)
    }

    @Test func aSampleRateMismatchNamesTheResamplerToInsert() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: tone, rate: 24000 }
              out: { type: null.sink, rate: 48000 }
            links:
              - voice -> out
            """)
        expect(found, "format mismatch: sample rates differ: 'voice' gives 24000 Hz, 'out' takes 48000 Hz", line: 5, column: 14,
               fix: "insert a resampler between 'voice' (24000 Hz) and 'out' (48000 Hz)")
    }

    @Test func aChannelMismatchNamesTheChannelMapToInsert() throws {
        let found = try diagnostic("""
            nodes:
              a: { type: tone }
              b: { type: tone, channels: 2 }
              mix: { type: mixer, inputs: 2 }
              out: { type: null.sink }
            links:
              - a -> mix.in1
              - b -> mix.in2
              - mix -> out
            """)
        expect(found, "format mismatch: channel counts differ: 'b' gives stereo, 'mix' takes mono", line: 8, column: 10,
               fix: "insert a channel-map between 'b' (stereo) and 'mix' (mono)")
    }

    @Test func bytesWhereFramesAreNeededNamesTheAligner() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: bytes.source, path: /dev/null, rate: 24000 }
              rs: { type: resampler }
              out: { type: null.sink, rate: 48000 }
            links:
              - voice -> rs -> out
            """)
        expect(found, "format mismatch: 'rs' takes audio frames but 'voice' gives S16LE 24000 Hz mono bytes", line: 6, column: 14,
               fix: "insert an aligner between 'voice' (S16LE 24000 Hz mono bytes) and 'rs' (frames)")
    }

    @Test func autoRatesFollowTheSink() throws {
        let description = try GraphFile.parse("""
            nodes:
              voice: { type: bytes.source, path: /dev/null, rate: 24000 }
              align: { type: aligner }
              rs: { type: resampler }
              out: { type: null.sink, rate: 44100 }
            links:
              - voice -> align -> rs -> out
            """, file: "test.yaml")
        let graph = try GraphCompiler(registry: BuiltinNodes.registry()).compile(description)
        #expect(graph.node(named: "rs")?.outputFormats == [.frames(rate: 44100, channels: 1)])
        // `sluice render --rate` decides for a sink whose own rate is auto.
        var automatic = description
        automatic.nodes[3].parameters = []
        let rendered = try GraphCompiler(registry: BuiltinNodes.registry(), options: .init(sinkRate: 96000)).compile(automatic)
        #expect(rendered.node(named: "rs")?.outputFormats == [.frames(rate: 96000, channels: 1)])
    }

    @Test func errorsPrintAsFileLineColumn() throws {
        let found = try diagnostic("""
            nodes:
              voice: { type: tonee }
              out: { type: null.sink }
            links:
              - voice -> out
            """)
        #expect(found.description == "test.yaml:2:18: error: unknown node type 'tonee' for node 'voice'\n  fix: did you mean 'tone'?")
    }
}
