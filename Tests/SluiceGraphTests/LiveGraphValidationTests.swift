import SluiceConfig
import SluiceNodes
import Testing
@testable import SluiceGraph

/// Checks that apply only when a device will drive the graph.
@Suite struct LiveGraphValidationTests {
    static let yaml = """
        nodes:
          voice: { type: tone, rate: 24000 }
          rs: { type: resampler, quality: soxr-hq }
          out: { type: null.sink, rate: 48000 }
        links:
          - voice -> rs -> out
        """

    @Test func soxrRendersOfflineButIsRefusedLive() throws {
        let description = try GraphFile.parse(Self.yaml, file: "test.yaml")
        _ = try GraphCompiler(registry: BuiltinNodes.registry()).compile(description)
        #expect {
            _ = try GraphCompiler(registry: BuiltinNodes.registry(), options: .init(isLive: true)).compile(description)
        } throws: { error in
            let found = (error as? GraphDiagnostics)?.diagnostics
            return found?.count == 1
                && found?[0].message == "node 'rs' (resampler): quality 'soxr-hq' is for offline rendering: libsoxr allocates while it runs"
                && found?[0].location == SluiceGraph.SourceLocation(file: "test.yaml", line: 3, column: 35)
                && found?[0].fix == "use auto, a speex-N or a libsamplerate quality (sinc-medium, …) in a live graph"
        }
    }
}
