import Foundation
import SluiceConfig
import SluiceNodes
import SluiceTestSupport
import Testing
@testable import SluiceGraph

/// The worked example of docs/custom-nodes.md, end to end: register `Tremolo`, name it in a
/// graph file, check, render, and compare with the formula.
@Suite struct CustomNodeExampleTests {
    static let graph = """
        name: tremolo-demo
        nodes:
          a4:    { type: tone, frequency: 440, amplitude: 0.5, duration: 1 }
          wobble: { type: tremolo, rate: 2, depth: 1 }
          out:   { type: null.sink }
        links:
          - a4 -> wobble -> out
        """

    func registry() throws -> NodeRegistry {
        var registry = BuiltinNodes.registry()
        try registry.register(Tremolo.type)
        return registry
    }

    @Test func rendersTheFormula() throws {
        let description = try GraphFile.parse(Self.graph, file: "tremolo.yaml")
        let graph = try GraphCompiler(registry: registry()).compile(description)
        let renderer = try OfflineRenderer(graph: graph)
        var samples: [Float] = []
        renderer.output = { _, buffer in samples += buffer }
        _ = try renderer.run()
        #expect(samples.count == 48_000)
        var worst: Float = 0
        for n in 0..<samples.count {
            let tone = Float(0.5 * sin(2 * Double.pi * 440 * Double(n) / 48_000))
            let gain = Float(1 - (1 - cos(2 * Double.pi * 2 * Double(n) / 48_000)) / 2)
            worst = max(worst, abs(samples[n] - tone * gain))
        }
        #expect(worst < 1e-6)
    }

    @Test func theRegistryKnowsItByName() throws {
        let registry = try registry()
        #expect(registry.type(named: "tremolo")?.descriptor.parameters.map(\.name) == ["rate", "depth"])
        #expect(throws: NodeRegistry.RegistrationError.duplicate("tremolo")) {
            var again = registry
            try again.register(Tremolo.type)
        }
    }

    @Test func itsParametersAreChecked() throws {
        let description = try GraphFile.parse(
            Self.graph.replacingOccurrences(of: "depth: 1", with: "depth: 2"), file: "tremolo.yaml")
        #expect {
            _ = try GraphCompiler(registry: registry()).compile(description)
        } throws: { error in
            (error as? GraphDiagnostics)?.description
                == "tremolo.yaml:4:44: error: parameter 'depth' of node 'wobble' must be a number in 0…1, got 2\n  fix: depth: 0.5 — How far it dips: 0 not at all, 1 down to silence."
        }
    }
}
