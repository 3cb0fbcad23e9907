import JackTestSupport
import SluiceGraph
import Testing
@testable import SluiceLV2

/// `jack.source -> lv2 -> jack.sink` on a real server (dummy backend): the plugin runs in the
/// JACK cycle, adds exactly the latency it reports (measured from outside by two C clients,
/// and in JACK's latency ranges), and a live change by symbol lands on its frame.
@Suite(.serialized) struct LV2LiveTests {
    let chain = LiveEffectChain { registry in try registry.register(LV2NodeType.type()) }

    @Test("an LV2 plugin with no latency runs in the cycle and adds 0 frames; the look-ahead limiter and the convolver add exactly what they report, as JACK's ranges say")
    func latencyAsReported() throws {
        try chain.expectLatencyAsReported([
            ("{ type: lv2, uri: \"http://lv2plug.in/plugins/eg-amp\" }", 1, false),
            ("{ type: lv2, uri: \"http://plugin.org.uk/swh-plugins/fastLookaheadLimiter\" }", 2, true),
            ("{ type: lv2, uri: \"http://gareus.org/oss/lv2/zeroconvolv#Mono\", preset: \"No-OP Mono\" }", 1, true),
        ]) { ($0 as? LV2Node)?.latencyFrames ?? -1 }
    }

    @Test("a change to an LV2 control by symbol, timed inside a period, is heard from the frame the reply states")
    func timedChangeBySymbol() throws {
        // eg-amp's gain in dB: 0 passes 0.5 unchanged; −12.0412 dB is a quarter, to float rounding.
        try chain.expectTimedChangeByName(
            effect: "{ type: lv2, uri: \"http://lv2plug.in/plugins/eg-amp\" }", parameter: "gain",
            unity: .number(0), quarter: .number(-12.041199826559248), tolerance: 1e-6)
    }
}
