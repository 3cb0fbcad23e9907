import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

/// Graphs of any reasonable size compile to the right graph (how long they take is the
/// `sizes` benchmark's), and every limit that remains is refused with an error naming it.
@Suite struct GraphLimitsTests {
    static func compile(_ text: String, file: String = "g.yaml") throws -> CompiledGraph {
        try GraphCompiler(registry: BuiltinNodes.registry()).compile(try GraphFile.parse(text, file: file))
    }

    static func diagnostics(_ text: String) -> [GraphDiagnostic] {
        do {
            _ = try compile(text)
            Issue.record("expected the graph to be refused")
            return []
        } catch let error as GraphDiagnostics {
            return error.diagnostics
        } catch {
            Issue.record("unexpected \(error)")
            return []
        }
    }

    @Test("a 20 000-node chain compiles in link order, every edge in place")
    func longChain() throws {
        let graph = try Self.compile(LargeGraphs.faderChain(20_000))
        #expect(graph.nodes.count == 20_002)
        #expect(graph.nodes.first?.name == "src")
        #expect(graph.nodes.last?.name == "out")
        #expect(graph.nodes[1].name == "n0")
        #expect(graph.nodes[20_000].name == "n19999")
        #expect(graph.edges.count == 20_001)
        #expect(graph.edges.allSatisfy { $0.toNode == $0.fromNode + 1 })
        #expect(graph.nodes.last?.inputFormats == [.frames(rate: 48_000, channels: 1)])
    }

    @Test("a 20 000-node mixer tree compiles: every source reaches the sink, the rate travels up from it")
    func wideTree() throws {
        let graph = try Self.compile(LargeGraphs.mixerTree(nodes: 20_000))
        #expect(graph.nodes.count == 20_000)
        #expect(graph.edges.count == 19_999)
        #expect(graph.nodes.last?.name == "out")
        // Topological: every edge runs forward.
        #expect(graph.edges.allSatisfy { $0.fromNode < $0.toNode })
        #expect(graph.nodes.allSatisfy { $0.outputFormats.allSatisfy { $0.sampleRate == 48_000 } })
    }

    @Test("2 MB of comments and 2 000 repeats of one key read correctly; each repeat is reported at its place")
    func hostileText() throws {
        let graph = try Self.compile(LargeGraphs.commented(bytes: 2_000_000))
        #expect(graph.nodes.map(\.name) == ["src", "n0", "out"])
        let found = Self.diagnostics(LargeGraphs.repeatedParameter(2_000))
        #expect(found.count == 1_999)
        #expect(found.allSatisfy { $0.message == "parameter 'frequency' of node 'src' is given twice" })
        // `  src: { type: tone, frequency: 440, frequency: 440` — the second is at column 38.
        #expect(found.first?.location == SourceLocation(file: "g.yaml", line: 3, column: 38))
        #expect(found.last?.location?.line == 3)
        #expect(Set(found.compactMap(\.location?.column)).count == 1_999)
    }

    @Test("a cycle among thousands of nodes is found and named")
    func longCycle() throws {
        var text = "name: ring\nnodes:\n"
        for index in 0..<5_000 { text += "  n\(index): { type: fader, length: 0 }\n" }
        text += "links:\n  - " + (0..<5_000).map { "n\($0)" }.joined(separator: " -> ") + " -> n0\n"
        let found = Self.diagnostics(text)
        #expect(found.count == 1)
        let message = try #require(found.first?.message)
        #expect(message.hasPrefix("links form a cycle: n0 -> n1 -> n2 -> "), "\(message.prefix(80))")
        #expect(message.hasSuffix(" -> n4998 -> n4999 -> n0"))
        #expect(message.components(separatedBy: " -> ").count == 5_001)
    }

    @Test("collections nested past the limit are refused where they go too deep, before Yams recurses")
    func nesting() {
        let found = Self.diagnostics("name: deep\nnodes: " + String(repeating: "[", count: 500) + String(repeating: "]", count: 500) + "\n")
        #expect(found.count == 1)
        #expect(found.first?.message == "lists and mappings nest more than 64 deep (the limit of a graph file)")
        #expect(found.first?.location == SourceLocation(file: "g.yaml", line: 2, column: 71))
    }

    @Test("playback values past the limit are refused by the reader (with their place) and by the compiler (built in code)", arguments: ["1e300", "1e12", "601"])
    func playbackSeconds(_ value: String) throws {
        let text = "name: x\nplayback: { max-buffered: \(value) }\nnodes:\n  t: { type: tone }\n  o: { type: null.sink }\nlinks:\n  - t -> o\n"
        let found = Self.diagnostics(text)
        #expect(found.count == 1)
        #expect(found.first?.message == "playback max-buffered must be at most 600 seconds (the limit of a graph), not \(value)")
        #expect(found.first?.location == SourceLocation(file: "g.yaml", line: 2, column: 27))

        var description = try GraphFile.parse(text.replacingOccurrences(of: "max-buffered: \(value)", with: "strategy: stream"), file: "g.yaml")
        description.playback.maxBuffered = Double(value)!
        #expect(throws: GraphDiagnostics.self) { _ = try GraphCompiler(registry: BuiltinNodes.registry()).compile(description) }
        do {
            _ = try GraphCompiler(registry: BuiltinNodes.registry()).compile(description)
        } catch {
            #expect(error.diagnostics.first?.message.contains("max-buffered is \(Double(value)!) s; it must be more than 0 and at most 600 s") == true)
        }
    }

    @Test("more nodes than the limit are refused before any is made, naming the limit")
    func nodeLimit() throws {
        var description = try GraphFile.parse("name: x\nnodes:\n  t: { type: tone }\n  o: { type: null.sink }\nlinks:\n  - t -> o\n", file: "g.yaml")
        let extra = NodeDeclaration(name: "f", type: "fader", parameters: [])
        description.nodes += (0..<GraphLimits.nodes).map { index in
            var node = extra
            node.name = "f\(index)"
            return node
        }
        do {
            _ = try GraphCompiler(registry: BuiltinNodes.registry()).compile(description)
            Issue.record("expected the graph to be refused")
        } catch {
            #expect(error.diagnostics.map(\.message) == ["the graph has 100002 nodes; the limit is 100000"])
        }
    }
}
