import Foundation
import SluiceConfig
import SluiceNodes
import Testing
@testable import SluiceGraph

/// Every graph in `graphs/` is valid and runs: each is copied with its fixtures to a scratch
/// folder (so the files its sinks write land there), checked, and rendered offline — except
/// those that need node types beyond the built-in ones, which are tested where those live.
@Suite struct GraphFilesTests {
    static let graphsFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("graphs")

    /// Graphs using a plugin or JACK, and where they are tested instead (`sluice check`, in
    /// SluiceCLITests, checks every graph with all node types).
    static let beyondBuiltins = [
        "speak.yaml": "the espeak plugin and jack.sink: EspeakProviderTests renders it with a null.sink",
        "piper.yaml": "the piper plugin and jack.sink: SpeechSessionTests speaks through it into a real server",
        "live-gain.yaml": "jack.source: plays only live; LiveChainTests runs the same chain against a real server",
        "ladspa-echo.yaml": "the ladspa node: SluiceCLITests renders it with `sluice render`, LADSPANodeTests renders the delay",
        "lv2-eq.yaml": "the lv2 node: LV2CommandTests renders it with `sluice render`, LV2NodeTests renders through LV2 plugins",
        "voices.yaml": "the espeak plugin and sinks sharing ports: LiveChainTests mixes sinks on a real server, EspeakProviderTests shares the engine",
    ]

    static var graphNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: graphsFolder.path)) ?? [])
            .filter { $0.hasSuffix(".yaml") && beyondBuiltins[$0] == nil }.sorted()
    }

    @Test func graphsBeyondTheBuiltinsExist() {
        for name in Self.beyondBuiltins.keys {
            #expect(FileManager.default.fileExists(atPath: Self.graphsFolder.appendingPathComponent(name).path), "\(name)")
        }
    }

    @Test func thereAreGraphs() {
        #expect(Self.graphNames.count >= 5)
    }

    @Test(arguments: graphNames)
    func graphRendersOffline(name: String) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-graphs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        try FileManager.default.copyItem(at: Self.graphsFolder, to: scratch)
        let description = try GraphFile.load(path: scratch.appendingPathComponent(name).path)
        let graph = try GraphCompiler(registry: BuiltinNodes.registry()).compile(description)
        for source in graph.textSources {
            source.receive(text: "SOS")
            source.finishText()
        }
        let report = try OfflineRenderer(graph: graph).run()
        #expect(report.audioSeconds > 0.5, "\(name) played \(report.audioSeconds) s")
        #expect(report.failures.isEmpty)
        #expect(report.underruns == 0)
        // Every file sink wrote its file.
        for node in graph.nodes where node.descriptor.typeName == "wav.sink" {
            let path = try #require(node.parameters.path("path"))
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
            #expect(size > 44, "\(name): \(path) is empty")
        }
    }
}
