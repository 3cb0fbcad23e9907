import SluiceAudio
import Testing
@testable import SluiceGraph

@Suite struct OfflineRendererTests {
    func render(_ description: GraphDescription) throws -> (samples: [Float], report: RunReport) {
        let graph = try GraphCompiler(registry: testRegistry()).compile(description)
        let renderer = try OfflineRenderer(graph: graph)
        var samples: [Float] = []
        renderer.output = { _, buffer in samples += buffer }
        let report = try renderer.run()
        return (samples, report)
    }

    @Test func rendersEveryFrameInOrder() throws {
        let (samples, report) = try render(chain([
            ("src", "ramp", ["frames": "10007", "channels": "2"]), ("mid", "pass", [:]), ("out", "collect", [:]),
        ]))
        let expected = (0..<10007).flatMap { frame in [RampSource.sample(frame, 0), RampSource.sample(frame, 1)] }
        #expect(samples.count == expected.count)
        #expect(samples == expected)
        #expect(report.audioSeconds == 10007.0 / 48000)
        #expect(report.underruns == 0)
    }
}
