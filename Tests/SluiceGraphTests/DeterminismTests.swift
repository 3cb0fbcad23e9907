import Foundation
import SluiceConfig
import SluiceNodes
import SluiceTestSupport
import Testing
@testable import SluiceGraph

/// The offline driver is deterministic: the speech chain (bytes → aligner → resampler →
/// crossfader → fader) rendered twice, and with other block sizes, is bit-identical.
@Suite struct DeterminismTests {
    func render(block: Int) throws -> [Float] {
        var description = try GraphFile.load(path: GraphFilesTests.graphsFolder.appendingPathComponent("speech-render.yaml").path)
        description.playback.blockFrames = block
        let graph = try GraphCompiler(registry: BuiltinNodes.registry()).compile(description)
        let renderer = try OfflineRenderer(graph: graph)
        var samples: [Float] = []
        renderer.output = { _, buffer in samples += buffer }
        _ = try renderer.run()
        return samples
    }

    @Test func sameGraphTwiceIsBitIdentical() throws {
        let first = try render(block: 256)
        #expect(first.count > 48_000)
        #expect(try render(block: 256) == first)
    }

    @Test(arguments: [16, 64, 100, 1024, 4096])
    func blockSizeDoesNotChangeTheOutput(block: Int) throws {
        let reference = try render(block: 256)
        #expect(firstDifference(try render(block: block), reference) == nil)
    }
}
