import JackTestSupport
import SluiceGraph
import Testing
@testable import SluiceLADSPA

/// `jack.source -> ladspa -> jack.sink` on a real server (dummy backend): the plugin runs in
/// the JACK cycle, adds exactly the latency it reports (measured from outside by two C
/// clients, and in JACK's latency ranges), and a live change by name lands on its frame.
@Suite(.serialized) struct LADSPALiveTests {
    let chain = LiveEffectChain { registry in
        try registry.register(LADSPANodeType.type(searchPath: .standard(environment: nil)))
    }

    @Test("a LADSPA plugin with no latency runs in the cycle and adds 0 frames; the look-ahead limiter adds exactly its reported latency, as JACK's ranges say")
    func latencyAsReported() throws {
        try chain.expectLatencyAsReported([
            ("{ type: ladspa, library: amp.so, label: amp_mono, gain: 1 }", 1, false),
            ("{ type: ladspa, library: fast_lookahead_limiter_1913.so, label: fastLookaheadLimiter }", 2, true),
        ]) { ($0 as? LADSPANode)?.latencyFrames ?? -1 }
    }

    @Test("a change to a LADSPA control by name, timed inside a period, is heard from the frame the reply states")
    func timedChangeByName() throws {
        try chain.expectTimedChangeByName(
            effect: "{ type: ladspa, library: amp.so, label: amp_mono, gain: 1 }", parameter: "gain",
            unity: .number(1), quarter: .number(0.25))
    }
}
