import Foundation
import SluiceGraph
import Testing
@testable import SluiceConfig

/// YAML graph files: the exact description a valid file reads into, and every diagnostic
/// with its message and place.
@Suite struct GraphFileTests {
    static let file = "speak.yaml"

    func at(_ line: Int, _ column: Int) -> SluiceGraph.SourceLocation {
        SluiceGraph.SourceLocation(file: Self.file, line: line, column: column)
    }

    func parse(_ text: String, baseDirectory: String? = nil) throws(GraphDiagnostics) -> GraphDescription {
        try GraphFile.parse(text, file: Self.file, baseDirectory: baseDirectory)
    }

    func errors(_ text: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) -> [GraphDiagnostic] {
        diagnostics({ () throws(GraphDiagnostics) in try parse(text) }, sourceLocation: sourceLocation)
    }

    // MARK: A valid file

    static let example = """
        name: speak
        nodes:
          voice:    { type: tone, frequency: 440, duration: 2 }
          align:    { type: aligner }
          resample: { type: resampler, quality: sinc-medium }   # target rate: the sink's
          mix:      { type: mixer, inputs: 2 }
          out:
            type: wav.sink
            path: out.wav
            title: "A title"
            ports: [a, b]          # sequences become RawValue.list
        links:
          - voice -> align -> resample -> mix.in1
          - other -> mix.in2
          - mix -> out
        playback: { strategy: auto, watermark: 0.5, max-buffered: 3.0, block: 256 }

        """

    @Test func fullExampleReadsIntoTheExactDescription() throws {
        let description = try parse(Self.example, baseDirectory: "/graphs")
        let expected = GraphDescription(
            name: "speak", file: Self.file, baseDirectory: "/graphs",
            nodes: [
                NodeDeclaration(name: "voice", type: "tone", parameters: [
                    ParameterDeclaration(name: "frequency", value: .scalar("440", quoted: false), location: at(3, 27), valueLocation: at(3, 38)),
                    ParameterDeclaration(name: "duration", value: .scalar("2", quoted: false), location: at(3, 43), valueLocation: at(3, 53)),
                ], location: at(3, 3), typeLocation: at(3, 21)),
                NodeDeclaration(name: "align", type: "aligner", location: at(4, 3), typeLocation: at(4, 21)),
                NodeDeclaration(name: "resample", type: "resampler", parameters: [
                    ParameterDeclaration(name: "quality", value: .scalar("sinc-medium", quoted: false), location: at(5, 32), valueLocation: at(5, 41)),
                ], location: at(5, 3), typeLocation: at(5, 21)),
                NodeDeclaration(name: "mix", type: "mixer", parameters: [
                    ParameterDeclaration(name: "inputs", value: .scalar("2", quoted: false), location: at(6, 28), valueLocation: at(6, 36)),
                ], location: at(6, 3), typeLocation: at(6, 21)),
                NodeDeclaration(name: "out", type: "wav.sink", parameters: [
                    ParameterDeclaration(name: "path", value: .scalar("out.wav", quoted: false), location: at(9, 5), valueLocation: at(9, 11)),
                    ParameterDeclaration(name: "title", value: .scalar("A title", quoted: true), location: at(10, 5), valueLocation: at(10, 12)),
                    ParameterDeclaration(name: "ports", value: .list(["a", "b"]), location: at(11, 5), valueLocation: at(11, 12)),
                ], location: at(7, 3), typeLocation: at(8, 11)),
            ],
            links: [
                LinkDeclaration(from: PortReference(node: "voice", location: at(13, 5)), to: PortReference(node: "align", location: at(13, 14))),
                LinkDeclaration(from: PortReference(node: "align", location: at(13, 14)), to: PortReference(node: "resample", location: at(13, 23))),
                LinkDeclaration(from: PortReference(node: "resample", location: at(13, 23)), to: PortReference(node: "mix", port: "in1", location: at(13, 35))),
                LinkDeclaration(from: PortReference(node: "other", location: at(14, 5)), to: PortReference(node: "mix", port: "in2", location: at(14, 14))),
                LinkDeclaration(from: PortReference(node: "mix", location: at(15, 5)), to: PortReference(node: "out", location: at(15, 12))),
            ],
            playback: PlaybackSettings(strategy: .auto, watermark: 0.5, maxBuffered: 3.0, blockFrames: 256, location: at(16, 1)))
        #expect(description.name == expected.name)
        #expect(description.nodes == expected.nodes)
        #expect(description.links == expected.links)
        #expect(description.playback == expected.playback)
        #expect(description == expected)
    }

    @Test func chainsGiveOneLinkPerHopWithPortsAndColumns() throws {
        let description = try parse("nodes: { a: { type: x } }\nlinks:\n  - a.out->b -> c.in2   ->d\n")
        #expect(description.links == [
            LinkDeclaration(from: PortReference(node: "a", port: "out", location: at(3, 5)), to: PortReference(node: "b", location: at(3, 12))),
            LinkDeclaration(from: PortReference(node: "b", location: at(3, 12)), to: PortReference(node: "c", port: "in2", location: at(3, 17))),
            LinkDeclaration(from: PortReference(node: "c", port: "in2", location: at(3, 17)), to: PortReference(node: "d", location: at(3, 27))),
        ])
    }

    @Test func quotedChainsArePlacedPastTheQuote() throws {
        let description = try parse("nodes: { a: { type: x } }\nlinks:\n  - 'a -> b.in2'\n  - \"fader-2->x_y\"\n")
        #expect(description.links == [
            LinkDeclaration(from: PortReference(node: "a", location: at(3, 6)), to: PortReference(node: "b", port: "in2", location: at(3, 11))),
            LinkDeclaration(from: PortReference(node: "fader-2", location: at(4, 6)), to: PortReference(node: "x_y", location: at(4, 15))),
        ])
    }

    @Test func chainsNotWrittenAsTheyReadArePlacedAtTheirStart() throws {
        // The escape makes the text differ from the content, so offsets inside cannot be trusted.
        let description = try parse("nodes: { a: { type: x } }\nlinks:\n  - \"a -> \\x62\"\n")
        #expect(description.links == [
            LinkDeclaration(from: PortReference(node: "a", location: at(3, 5)), to: PortReference(node: "b", location: at(3, 5))),
        ])
    }

    @Test func absentSectionsTakeTheirDefaults() throws {
        let description = try GraphFile.parse("nodes:\n  out: { type: wav.sink }\n", file: "graphs/my.graph.yaml")
        #expect(description.name == "my.graph")
        #expect(description.file == "graphs/my.graph.yaml")
        #expect(description.baseDirectory == nil)
        #expect(description.links.isEmpty)
        #expect(description.playback == PlaybackSettings())
        let empty = try parse("nodes:\n  out: { type: wav.sink }\nlinks:\nplayback:\n")
        #expect(empty.links.isEmpty)
        #expect(empty.playback == PlaybackSettings(location: at(4, 1)))
        #expect(empty.name == "speak")
    }

    @Test func parameterValuesKeepTheirShapeAndQuoting() throws {
        let description = try parse("""
            nodes:
              n:
                type: 'tone'
                a: '440'
                b: 1,2,3
                c: []
                d: { x: 1 }
                e: |
                  text
                f:
                g: [1, "two"]

            """)
        let node = try #require(description.nodes.first)
        #expect(node.type == "tone")
        #expect(node.typeLocation == at(3, 11))
        #expect(node.parameters.map(\.name) == ["a", "b", "c", "d", "e", "f", "g"])
        #expect(node.parameters.map(\.value) == [
            .scalar("440", quoted: true), .scalar("1,2,3", quoted: false), .list([]), .mapping,
            .scalar("text\n", quoted: true), .scalar("", quoted: false), .list(["1", "two"]),
        ])
        #expect(node.parameters[3].valueLocation == at(7, 8))
    }

    // MARK: Duplicates (kept for the compiler, which reports both places)

    @Test func duplicateNodeNamesAndParametersAreKeptInFileOrder() throws {
        let description = try parse("""
            nodes:
              a: { type: x }
              b: { type: y, q: 1, q: 2 }
              'a': { type: z }
              b: { type: w }
              a: { type: v }

            """)
        #expect(description.nodes.map(\.name) == ["a", "b", "a", "b", "a"])
        #expect(description.nodes.map(\.type) == ["x", "y", "z", "w", "v"])
        #expect(description.nodes.map(\.location) == [at(2, 3), at(3, 3), at(4, 3), at(5, 3), at(6, 3)])
        #expect(description.nodes[1].parameters == [
            ParameterDeclaration(name: "q", value: .scalar("1", quoted: false), location: at(3, 17), valueLocation: at(3, 20)),
            ParameterDeclaration(name: "q", value: .scalar("2", quoted: false), location: at(3, 23), valueLocation: at(3, 26)),
        ])
    }

    @Test func duplicateTopLevelKey() {
        expectOne(errors("nodes:\n  a: { type: x }\nnodes:\n  b: { type: y }\n"),
                  "duplicate key 'nodes' (first at line 1)", line: 3, column: 1, file: Self.file, fix: "keep one of them")
    }

    // MARK: Top level

    @Test func unknownTopLevelKeySuggestsTheClosest() {
        expectOne(errors("nodes:\n  a: { type: x }\nlink:\n  - a -> b\n"),
                  "unknown top-level key 'link'", line: 3, column: 1, file: Self.file, fix: "did you mean 'links'?")
        expectOne(errors("nodes:\n  a: { type: x }\nzzzzzzzz: 1\n"),
                  "unknown top-level key 'zzzzzzzz'", line: 3, column: 1, file: Self.file,
                  fix: "the top-level keys are name, nodes, links and playback")
    }

    @Test func missingNodes() {
        expectOne(errors("name: x\nlinks: []\n"), "the graph has no `nodes:`", line: 1, column: 1, file: Self.file, fix: "nodes:")
    }

    @Test func emptyFile() {
        expectOne(errors(""), "the graph file is empty", line: 1, column: 1, file: Self.file)
        expectOne(errors("# just a comment\n"), "the graph file is empty", line: 1, column: 1, file: Self.file)
    }

    @Test func documentThatIsNotAMapping() {
        expectOne(errors("\n- a\n- b\n"), "a graph file must be a mapping with `nodes:`", line: 2, column: 1, file: Self.file)
    }

    @Test func nameThatIsNotText() {
        expectOne(errors("name: [a]\nnodes: { a: { type: x } }\n"), "the graph's `name:` must be text, not a list",
                  line: 1, column: 7, file: Self.file)
    }

    // MARK: Nodes

    @Test func nodesThatAreNotAMapping() {
        expectOne(errors("nodes:\n  - a\n"), "`nodes:` must be a mapping from node names to nodes, not a list",
                  line: 2, column: 3, file: Self.file, fix: "`name: { type: <a node type>, … }`")
    }

    @Test func nodesThatAreEmpty() {
        expectOne(errors("name: x\nnodes:\n"), "`nodes:` declares no nodes", line: 2, column: 1, file: Self.file)
        expectOne(errors("name: x\nnodes: {}\n"), "`nodes:` declares no nodes", line: 2, column: 1, file: Self.file)
    }

    @Test func nodeWithoutType() {
        expectOne(errors("nodes:\n  out: { path: a.wav }\n"), "node 'out' has no type", line: 2, column: 3, file: Self.file,
                  fix: "add `type: <a node type>`")
        expectOne(errors("nodes:\n  a: { type: x }\n  out:\n"), "node 'out' has no type", line: 3, column: 3, file: Self.file,
                  fix: "add `type: <a node type>`")
    }

    @Test func nodeWithEmptyOrRepeatedType() {
        expectOne(errors("nodes:\n  out: { type: [a] }\n"), "node 'out' has an empty type", line: 2, column: 16, file: Self.file)
        expectOne(errors("nodes:\n  out: { type: a, type: b }\n"), "node 'out' has two types (first at line 2)",
                  line: 2, column: 19, file: Self.file, fix: "keep one `type:`")
    }

    @Test func nodeThatIsNotAMapping() {
        expectOne(errors("nodes:\n  out: wav.sink\n"), "node 'out' must be a mapping with a `type:`, not 'wav.sink'",
                  line: 2, column: 8, file: Self.file, fix: "write `out: { type: wav.sink }`")
    }

    @Test func invalidNodeName() {
        expectOne(errors("nodes:\n  my.out: { type: wav.sink }\n"), "invalid node name 'my.out'", line: 2, column: 3,
                  file: Self.file, fix: "use letters, digits, '-' and '_'")
        expectOne(errors("nodes:\n  2nd: { type: wav.sink }\n"), "invalid node name '2nd'", line: 2, column: 3, file: Self.file)
    }

    @Test func listParameterWithNestedItems() {
        expectOne(errors("nodes:\n  out: { type: x, ports: [a, [b]] }\n"),
                  "parameter 'ports' of node 'out' lists a list; list items must be single values",
                  line: 2, column: 30, file: Self.file, fix: "`ports: [a, b]`")
    }

    // MARK: Links

    @Test func linksThatAreNotAList() {
        expectOne(errors("nodes: { a: { type: x } }\nlinks: a -> b\n"), "`links:` must be a list of chains, not 'a -> b'",
                  line: 2, column: 8, file: Self.file, fix: "`- voice -> mix.in1`")
    }

    @Test func linkThatIsNotText() {
        expectOne(errors("nodes: { a: { type: x } }\nlinks:\n  - a: b\n"),
                  "a link must be a chain written as text, like `a -> b -> c`, or settings with their chain, not a mapping of other keys",
                  line: 3, column: 5, file: Self.file)
    }

    struct BadLink: Sendable, CustomTestStringConvertible {
        var chain: String
        var message: String
        var column: Int
        var testDescription: String { chain }
    }

    /// Each chain sits on line 3 after `  - `, so its text starts at column 5.
    @Test(arguments: [
        BadLink(chain: "a ->", message: "link ends with '->': a node must follow it", column: 7),
        BadLink(chain: "-> a", message: "link starts with '->': a node must come before it", column: 5),
        BadLink(chain: "a -> -> b", message: "missing node between '->' and '->'", column: 10),
        BadLink(chain: "a", message: "link 'a' names only one node: a link joins two", column: 5),
        BadLink(chain: "a => b", message: "unexpected character '=' in link", column: 7),
        BadLink(chain: "a, b", message: "unexpected character ',' in link", column: 6),
        BadLink(chain: "a -> b c", message: "expected '->' before 'c'", column: 12),
        BadLink(chain: "a.b.c -> d", message: "too many '.' in 'a.b.c'", column: 8),
        BadLink(chain: "mix. -> b", message: "missing port name after 'mix.'", column: 8),
        BadLink(chain: "a -> .in2", message: "missing node name before '.in2'", column: 10),
        BadLink(chain: "2a -> b", message: "invalid node name '2a' in link", column: 5),
        BadLink(chain: "a -> mix.2", message: "invalid port name '2' in link", column: 14),
        BadLink(chain: "''", message: "empty link", column: 6),
    ])
    func badLinkSyntax(_ bad: BadLink) {
        let found = errors("nodes: { a: { type: x } }\nlinks:\n  - \(bad.chain)\n")
        expectOne(found, bad.message, line: 3, column: bad.column, file: Self.file)
        // Every fix shows how a link is written.
        #expect(found.first?.fix?.contains("mix.in2`") == true, "\(found)")
    }

    // MARK: Playback

    @Test func unknownStrategySuggestsTheClosest() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { strategy: bufered }\n"),
                  "unknown playback strategy 'bufered'", line: 2, column: 23, file: Self.file, fix: "did you mean 'buffered'?")
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { strategy: zzzzzzzzzz }\n"),
                  "unknown playback strategy 'zzzzzzzzzz'", line: 2, column: 23, file: Self.file,
                  fix: "use one of stream, buffered, auto, generate-first")
    }

    @Test func strategyThatIsNotAName() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { strategy: [auto] }\n"),
                  "playback strategy must be one of stream, buffered, auto, generate-first, not a list",
                  line: 2, column: 23, file: Self.file)
    }

    @Test func strategiesByName() throws {
        for strategy in PlaybackStrategy.allCases {
            let description = try parse("nodes: { a: { type: x } }\nplayback: { strategy: \(strategy.rawValue) }\n")
            #expect(description.playback.strategy == strategy)
        }
    }

    @Test func watermarkThatIsNotANumber() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback:\n  watermark: soon\n"),
                  "playback watermark must be a number of seconds, not 'soon'", line: 3, column: 14, file: Self.file,
                  fix: "watermark: 0.5")
    }

    @Test func negativeWatermark() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback:\n  watermark: -1\n"),
                  "playback watermark must be 0 or more seconds, not -1", line: 3, column: 14, file: Self.file)
    }

    @Test func maxBufferedThatIsNotPositive() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback:\n  watermark: 0\n  max-buffered: 0\n"),
                  "playback max-buffered must be more than 0 seconds, not 0", line: 4, column: 17, file: Self.file,
                  fix: "max-buffered: 3.0")
        expectOne(errors("nodes: { a: { type: x } }\nplayback:\n  max-buffered: [1]\n"),
                  "playback max-buffered must be a number of seconds, not a list", line: 3, column: 17, file: Self.file)
    }

    @Test func blockThatIsNotAWholeNumber() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { block: 25.5 }\n"),
                  "playback block must be a whole number of frames, not '25.5'", line: 2, column: 20, file: Self.file,
                  fix: "block: 256")
    }

    @Test func blockOutOfRange() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { block: 8 }\n"),
                  "playback block must be between 16 and 8192 frames, not 8", line: 2, column: 20, file: Self.file)
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { block: 8193 }\n"),
                  "playback block must be between 16 and 8192 frames, not 8193", line: 2, column: 20, file: Self.file)
    }

    @Test func blockLimitsAreAccepted() throws {
        #expect(try parse("nodes: { a: { type: x } }\nplayback: { block: 16 }\n").playback.blockFrames == 16)
        #expect(try parse("nodes: { a: { type: x } }\nplayback: { block: 8192 }\n").playback.blockFrames == 8192)
    }

    @Test func unknownPlaybackSettingSuggestsTheClosest() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback:\n  max-bufered: 2\n"),
                  "unknown playback setting 'max-bufered'", line: 3, column: 3, file: Self.file, fix: "did you mean 'max-buffered'?")
    }

    @Test func duplicatePlaybackSetting() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback:\n  block: 128\n  block: 512\n"),
                  "duplicate playback setting 'block' (first at line 3)", line: 4, column: 3, file: Self.file)
    }

    @Test func playbackThatIsNotAMapping() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback: auto\n"),
                  "`playback:` must be a mapping of settings, not 'auto'", line: 2, column: 11, file: Self.file,
                  fix: "`playback: { strategy: auto")
    }

    @Test func watermarkAboveMaxBuffered() {
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { watermark: 4, max-buffered: 2.5 }\n"),
                  "playback watermark (4 s) is more than max-buffered (2.5 s), so it could never be reached",
                  line: 2, column: 24, file: Self.file, fix: "raise max-buffered to at least 4 or lower watermark to at most 2.5")
        // Against the default max-buffered (3 s).
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { watermark: 3.5 }\n"),
                  "playback watermark (3.5 s) is more than max-buffered (3 s)", line: 2, column: 24, file: Self.file)
        // Against the default watermark (0.5 s): placed at max-buffered.
        expectOne(errors("nodes: { a: { type: x } }\nplayback: { max-buffered: 0.25 }\n"),
                  "playback watermark (0.5 s) is more than max-buffered (0.25 s)", line: 2, column: 27, file: Self.file)
    }

    @Test func watermarkEqualToMaxBufferedIsAccepted() throws {
        let playback = try parse("nodes: { a: { type: x } }\nplayback: { watermark: 2, max-buffered: 2 }\n").playback
        #expect(playback.watermark == 2)
        #expect(playback.maxBuffered == 2)
    }

    // MARK: YAML syntax

    @Test func unclosedFlowMapping() {
        expectOne(errors("nodes:\n  a: {type: x\n"), "invalid YAML: did not find expected ',' or '}' (while parsing a flow mapping at line 2, column 6)",
                  line: 3, column: 1, file: Self.file, fix: "close the `{` with `}`")
    }

    @Test func tabIndentation() {
        expectOne(errors("nodes:\n\ta: { type: x }\n"), "invalid YAML: found character that cannot start any token",
                  line: 2, column: 1, file: Self.file, fix: "indent with spaces")
    }

    @Test func mappingValueInPlainScalar() {
        expectOne(errors("nodes:\n  a: { type: x }\nname: a: b\n"), "invalid YAML: mapping values are not allowed in this context",
                  line: 3, column: 8, file: Self.file)
    }

    @Test func unterminatedQuote() {
        expectOne(errors("nodes:\n  a: { type: 'x }\n"), "invalid YAML: found unexpected end of stream (while scanning a quoted scalar at line 2, column 14)",
                  line: 3, column: 1, file: Self.file, fix: "close the quote")
    }

    @Test func secondDocument() {
        expectOne(errors("nodes:\n  a: { type: x }\n---\nnodes: {}\n"), "invalid YAML: expected a single document in the stream, but found another document",
                  line: 3, column: 1, file: Self.file, fix: "remove the `---` line")
    }

    @Test func controlCharacter() {
        expectOne(errors("nodes:\n  a: { type: \"x\u{1}\" }\n"), "invalid YAML: control characters are not allowed",
                  line: 2, column: 16, file: Self.file)
    }

    @Test func readerErrorsArePlacedAfterWideCharactersAndCRLF() {
        // Yams gives the offset in characters; "e\u{301}" is one character but two columns.
        expectOne(errors("name: \"é→\"\r\nnodes:\r\n  a: { type: \"e\u{301}\u{1}\" }\r\n"),
                  "invalid YAML: control characters are not allowed", line: 3, column: 17, file: Self.file)
    }

    // MARK: Collecting

    @Test func allProblemsAreReportedInFileOrder() {
        let found = errors("""
            playback: { block: 1, strategy: fast }
            nodes:
              a: { path: x }
              b.c: { type: y }
            links:
              - a -> -> b
            colour: red

            """)
        #expect(found.map(\.message) == [
            "playback block must be between 16 and 8192 frames, not 1",
            "unknown playback strategy 'fast'",
            "node 'a' has no type",
            "invalid node name 'b.c'",
            "missing node between '->' and '->'",
            "unknown top-level key 'colour'",
        ])
        #expect(found.map(\.location) == [at(1, 20), at(1, 33), at(3, 3), at(4, 3), at(6, 10), at(7, 1)])
    }

    @Test func windowsLineEndingsKeepColumns() throws {
        let description = try parse("nodes:\r\n  a: { type: x }\r\nlinks:\r\n  - a -> b\r\n")
        #expect(description.nodes.first?.typeLocation == at(2, 14))
        #expect(description.links.first?.to.location == at(4, 10))
    }

    @Test func diagnosticsPrintInCompilerStyle() {
        let text = errors("nodes:\n  out: { path: a.wav }\n").first?.description
        #expect(text == "speak.yaml:2:3: error: node 'out' has no type\n  fix: add `type: <a node type>` (run `sluice nodes` to list them), e.g. `out: { type: tone }`")
    }

    // MARK: Loading

    @Test func loadReadsTheFileAndResolvesFromItsFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-config-\(UInt64.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("speak.yaml").path
        try Self.example.write(toFile: path, atomically: true, encoding: .utf8)
        let description = try GraphFile.load(path: path)
        #expect(description.name == "speak")
        #expect(description.file == path)
        #expect(description.baseDirectory == folder.path)
        #expect(description.nodes.count == 5)
        #expect(description.nodes.first?.location == SluiceGraph.SourceLocation(file: path, line: 3, column: 3))

        let bad = folder.appendingPathComponent("bad.yaml").path
        try Data([0x6E, 0x6F, 0xFF, 0xFE]).write(to: URL(fileURLWithPath: bad))
        let notText = diagnostics({ () throws(GraphDiagnostics) in try GraphFile.load(path: bad) })
        #expect(notText == [GraphDiagnostic("cannot read graph file '\(bad)': it is not UTF-8 text", at: nil)])

        let asFolder = diagnostics({ () throws(GraphDiagnostics) in try GraphFile.load(path: folder.path) })
        #expect(asFolder == [GraphDiagnostic("cannot read graph file '\(folder.path)': it is a folder", at: nil)])
    }

    @Test func loadingAMissingFile() {
        let found = diagnostics({ () throws(GraphDiagnostics) in try GraphFile.load(path: "/nonexistent/graph.yaml") })
        #expect(found == [GraphDiagnostic("cannot read graph file '/nonexistent/graph.yaml': no such file", at: nil)])
        #expect(found.first?.description == "error: cannot read graph file '/nonexistent/graph.yaml': no such file")
    }

    /// Found by the `yaml` fuzz target (Fuzz/): libyaml places an error at the end of a text
    /// without a final newline one line past its last.
    @Test func anErrorAtTheEndOfTheTextIsPlacedOnItsLastLine() {
        let text = "name: x\nnodes:\n  a: { type: tone }\n  cal)"
        let found = diagnostics({ () throws(GraphDiagnostics) in try GraphFile.parse(text, file: "end.yaml") })
        expectOne(found, "could not find expected ':'", line: 4, column: 7, file: "end.yaml")
    }
}

/// `GraphFile.read`: what was read kept beside the problems, and whether they are only keys
/// the reader skipped (so a checker may go on and find the file's other errors).
@Suite struct GraphFileReadingTests {
    @Test("unknown top-level keys and playback settings only: the rest read as written, onlySkippedKeys")
    func skippedKeys() throws {
        let reading = GraphFile.read("colour: red\nnodes:\n  a: { type: tone }\nplayback: { tempo: 3, block: 512 }\n", file: "g.yaml")
        #expect(reading.onlySkippedKeys)
        #expect(reading.diagnostics.map(\.message) == ["unknown top-level key 'colour'", "unknown playback setting 'tempo'"])
        #expect(reading.partial.nodes.map(\.type) == ["tone"])
        #expect(reading.partial.playback.blockFrames == 512)
        #expect(throws: GraphDiagnostics.self) { try reading.graph() }
    }

    @Test("any other problem: not onlySkippedKeys; YAML that does not parse neither")
    func otherProblems() {
        #expect(!GraphFile.read("colour: red\nnodes:\n  a: [1]\n", file: "g.yaml").onlySkippedKeys)
        #expect(!GraphFile.read("nodes: {\n", file: "g.yaml").onlySkippedKeys)
        #expect(!GraphFile.read(path: "/nonexistent/g.yaml").onlySkippedKeys)
    }

    @Test("combined(with:) puts a checker's errors among the reader's, in file order")
    func combined() {
        let reading = GraphFile.read("nodes:\n  a: { type: tone }\ncolour: red\n", file: "g.yaml")
        let checker = GraphDiagnostics([
            GraphDiagnostic("late", at: SourceLocation(file: "g.yaml", line: 9, column: 1)),
            GraphDiagnostic("early", at: SourceLocation(file: "g.yaml", line: 2, column: 3)),
        ])
        #expect(reading.combined(with: checker).diagnostics.map(\.message) == ["early", "unknown top-level key 'colour'", "late"])
    }

    @Test("a clean file: no diagnostics, graph() is the description")
    func clean() throws {
        let reading = GraphFile.read("nodes:\n  a: { type: tone }\n", file: "g.yaml")
        #expect(reading.diagnostics.isEmpty)
        #expect(try reading.graph() == GraphFile.parse("nodes:\n  a: { type: tone }\n", file: "g.yaml"))
    }
}
