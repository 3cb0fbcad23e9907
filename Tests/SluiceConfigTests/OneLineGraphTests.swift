import SluiceGraph
import Testing
@testable import SluiceConfig

/// The gst-launch-style one-line form: names, repeats, quoting, columns and each error.
@Suite struct OneLineGraphTests {
    static let file = "<command line>"

    func at(_ column: Int, file: String = Self.file) -> SluiceGraph.SourceLocation {
        SluiceGraph.SourceLocation(file: file, line: 1, column: column)
    }

    func errors(_ text: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) -> [GraphDiagnostic] {
        diagnostics({ () throws(GraphDiagnostics) in try OneLineGraph.parse(text) }, sourceLocation: sourceLocation)
    }

    @Test func fullExampleReadsIntoTheExactDescription() throws {
        //          1        10        20        30        40        50        60        70
        //          |        |         |         |         |         |         |         |
        let text = #"tone frequency=440 duration=2 ! fader ! wav.sink path=out.wav title="Hello world""#
        let description = try OneLineGraph.parse(text)
        let expected = GraphDescription(
            name: "one-line", file: Self.file, baseDirectory: nil,
            nodes: [
                NodeDeclaration(name: "tone", type: "tone", parameters: [
                    ParameterDeclaration(name: "frequency", value: .scalar("440", quoted: false), location: at(6), valueLocation: at(16)),
                    ParameterDeclaration(name: "duration", value: .scalar("2", quoted: false), location: at(20), valueLocation: at(29)),
                ], location: at(1), typeLocation: at(1)),
                NodeDeclaration(name: "fader", type: "fader", location: at(33), typeLocation: at(33)),
                NodeDeclaration(name: "wav.sink", type: "wav.sink", parameters: [
                    ParameterDeclaration(name: "path", value: .scalar("out.wav", quoted: false), location: at(50), valueLocation: at(55)),
                    ParameterDeclaration(name: "title", value: .scalar("Hello world", quoted: true), location: at(63), valueLocation: at(69)),
                ], location: at(41), typeLocation: at(41)),
            ],
            links: [
                LinkDeclaration(from: PortReference(node: "tone", location: at(1)), to: PortReference(node: "fader", location: at(33))),
                LinkDeclaration(from: PortReference(node: "fader", location: at(33)), to: PortReference(node: "wav.sink", location: at(41))),
            ],
            playback: PlaybackSettings())
        #expect(description.nodes == expected.nodes)
        #expect(description.links == expected.links)
        #expect(description == expected)
    }

    @Test func repeatedTypesAreNumbered() throws {
        let description = try OneLineGraph.parse("tone ! fader ! fader ! fader ! out")
        #expect(description.nodes.map(\.name) == ["tone", "fader", "fader-2", "fader-3", "out"])
        #expect(description.links.map { "\($0.from) -> \($0.to)" } == [
            "tone -> fader", "fader -> fader-2", "fader-2 -> fader-3", "fader-3 -> out",
        ])
    }

    @Test func explicitNamesWinAndAutomaticNamesAvoidThem() throws {
        let description = try OneLineGraph.parse("tone name=src ! fader ! fader name=fader ! fader")
        #expect(description.nodes.map(\.name) == ["src", "fader-2", "fader", "fader-3"])
        // `name=` is not a parameter; the node is placed at its name's value.
        #expect(description.nodes[0].parameters.isEmpty)
        #expect(description.nodes[0].location == at(11))
        #expect(description.nodes[0].typeLocation == at(1))
        #expect(description.links.map { "\($0.from) -> \($0.to)" } == ["src -> fader-2", "fader-2 -> fader", "fader -> fader-3"])
    }

    @Test func quotingKeepsSpacesBangsAndCommas() throws {
        let description = try OneLineGraph.parse(#"sink a='x y' b="it's ! ok" c=1,2,3 d="" e=pre"mid dle"post f='"'"#)
        let parameters = try #require(description.nodes.first).parameters
        #expect(parameters.map(\.name) == ["a", "b", "c", "d", "e", "f"])
        #expect(parameters.map(\.value) == [
            .scalar("x y", quoted: true), .scalar("it's ! ok", quoted: true), .scalar("1,2,3", quoted: false),
            .scalar("", quoted: true), .scalar("premid dlepost", quoted: true), .scalar("\"", quoted: true),
        ])
        #expect(parameters.map(\.location) == [at(6), at(14), at(28), at(36), at(41), at(60)])
        #expect(parameters.map(\.valueLocation) == [at(8), at(16), at(30), at(38), at(43), at(62)])
        #expect(description.nodes.count == 1)
        #expect(description.links.isEmpty)
    }

    @Test func bangsNeedNoSpaces() throws {
        let description = try OneLineGraph.parse("a k=1!b!c")
        #expect(description.nodes.map(\.name) == ["a", "b", "c"])
        #expect(description.nodes.map(\.typeLocation) == [at(1), at(7), at(9)])
        #expect(description.nodes[0].parameters.first?.value == .scalar("1", quoted: false))
    }

    @Test func theFileNameAppearsInLocations() throws {
        let description = try OneLineGraph.parse("tone", file: "argv")
        #expect(description.file == "argv")
        #expect(description.nodes.first?.location == at(1, file: "argv"))
    }

    struct BadLine: Sendable, CustomTestStringConvertible {
        var text: String
        var message: String
        var column: Int
        var fix: String
        var testDescription: String { text }
    }

    @Test(arguments: [
        BadLine(text: "tone ! ! out", message: "empty element between two '!'", column: 8, fix: "remove the extra '!'"),
        BadLine(text: "! tone ! out", message: "'!' with no element before it", column: 1, fix: "start with a node type"),
        BadLine(text: "tone ! out !", message: "'!' with no element after it", column: 12, fix: "end with a node"),
        BadLine(text: " ! ", message: "'!' with no element before it", column: 2, fix: "start with a node type"),
        BadLine(text: "", message: "empty graph: no elements", column: 1, fix: "`tone frequency=440 ! wav.sink path=out.wav`"),
        BadLine(text: "tone frequency", message: "expected key=value after node type 'tone', found 'frequency'", column: 6, fix: "`key=value`"),
        BadLine(text: #"out title="Hello"#, message: "unterminated quote", column: 11, fix: "close the value with a matching \""),
        BadLine(text: "tone =440", message: "missing parameter name before '='", column: 6, fix: "`key=value`"),
        BadLine(text: "tone frequency=", message: "parameter 'frequency' has no value after '='", column: 15, fix: "`frequency=\"\"`"),
        BadLine(text: "frequency=440 ! out", message: "element starts with 'frequency=440' instead of a node type", column: 1, fix: "`tone frequency=440`"),
        BadLine(text: "tone name=my.tone", message: "invalid node name 'my.tone'", column: 11, fix: "use letters, digits, '-' and '_'"),
        BadLine(text: "tone name=a name=b", message: "node 'a' is named twice (first at column 6)", column: 13, fix: "keep one `name=`"),
    ])
    func eachError(_ bad: BadLine) {
        expectOne(errors(bad.text), bad.message, line: 1, column: bad.column, file: Self.file, fix: bad.fix)
    }

    @Test func allProblemsAreReportedLeftToRight() {
        let found = errors("a x ! ! b =1 ! c k=")
        #expect(found.map(\.message) == [
            "expected key=value after node type 'a', found 'x'",
            "empty element between two '!'",
            "missing parameter name before '='",
            "parameter 'k' has no value after '='",
        ])
        #expect(found.map(\.location) == [at(3), at(7), at(11), at(19)])
    }
}
