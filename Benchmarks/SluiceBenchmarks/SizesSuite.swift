import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Yams

/// How reading and compiling a graph scale with its size and shape: a 20 000-node fader
/// chain, a 20 000-node mixer tree, 2 MB of comments, 2 000 repeats of one parameter. The
/// reference is libyaml composing the same text (Yams), the floor any YAML graph reader pays;
/// the goal is an absolute one, under 1 s for each 20 000-node graph.
enum SizesSuite {
    static func run(runs: Int) {
        let registry = BuiltinNodes.registry()
        let cases: [(name: String, text: String, valid: Bool)] = [
            ("chain-20000", LargeGraphs.faderChain(20_000), true),
            ("mixer-tree-20000", LargeGraphs.mixerTree(nodes: 20_000), true),
            ("comments-2MB", LargeGraphs.commented(bytes: 2_000_000), true),
            ("repeated-key-2000", LargeGraphs.repeatedParameter(2_000), false),
        ]
        for item in cases {
            var sluice: [Double] = [], yaml: [Double] = []
            for _ in 0..<runs {
                sluice.append(secondsTaken {
                    do {
                        let description = try GraphFile.parse(item.text, file: "\(item.name).yaml")
                        _ = try GraphCompiler(registry: registry).compile(description)
                        if !item.valid { fail("\(item.name) compiled, but it should be refused") }
                    } catch {
                        if item.valid { fail("\(item.name): \(error)") }
                    }
                })
                yaml.append(secondsTaken { _ = try? Yams.compose(yaml: item.text) })
            }
            let goal = item.name.hasSuffix("20000") ? "< 1 s" : nil
            var figure = Figure(
                bench: "sizes", metric: "\(item.name) parse+compile", sluice: median(sluice), reference: median(yaml),
                unit: "s", referenceName: "libyaml compose (Yams)", runs: runs, goal: goal)
            if goal != nil { figure.goalMet = median(sluice) < 1 }
            figure.extras = [("bytes", Double(item.text.utf8.count))]
            figure.emit()
        }
    }
}
