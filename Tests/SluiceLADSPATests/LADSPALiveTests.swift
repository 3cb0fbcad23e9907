import CJack
import Foundation
import Glibc
import JackTestSupport
import SluiceConfig
import SluiceGraph
import SluiceJACK
import SluiceNodes
import SluiceTestSupport
import Testing
@testable import SluiceLADSPA

/// `jack.source -> ladspa -> jack.sink` on a real server (dummy backend): the plugin runs in
/// the JACK cycle, adds exactly the latency it reports (measured from outside by two C
/// clients, and in JACK's latency ranges), and a live change by name lands on its frame.
@Suite(.serialized) struct LADSPALiveTests {
    func compile(_ yaml: String, server: String) throws -> CompiledGraph {
        var registry = BuiltinNodes.registry()
        try registry.register(JackSink.type(defaultServer: server))
        try registry.register(JackSource.type(defaultServer: server))
        try registry.register(LADSPANodeType.type(searchPath: .standard(environment: nil)))
        return try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(GraphFile.parse(yaml, file: "live.yaml"))
    }

    func clientName(_ stem: String) -> String { "\(stem)-\(UUID().uuidString.prefix(6))" }

    static func chain(_ name: String, channels: Int, effect: String) -> String {
        """
        nodes:
          in:     { type: jack.source, channels: \(channels), connect: none }
          effect: \(effect)
          out:    { type: jack.sink, channels: \(channels), connect: none }
        links: [in -> effect -> out]
        playback: { strategy: stream, client: \(name) }
        """
    }

    @Test("a LADSPA plugin with no latency runs in the cycle and adds 0 frames; the look-ahead limiter adds exactly its reported latency, as JACK's ranges say")
    func latencyAsReported() throws {
        let server = try JackTestServer.shared()
        for (effect, channels) in [
            ("{ type: ladspa, library: amp.so, label: amp_mono, gain: 1 }", 1),
            ("{ type: ladspa, library: fast_lookahead_limiter_1913.so, label: fastLookaheadLimiter }", 2),
        ] {
            for attempt in 1...LiveAttempts.count {
                let lateBefore = server.lateCycles
                let name = clientName("ladspa")
                let graph = try compile(Self.chain(name, channels: channels, effect: effect), server: server.name)
                let node = try #require(graph.node(named: "effect")?.instance as? LADSPANode)
                let live = try LiveRun(graph: graph)
                try live.start()
                let report = try ImpulseProbe.run(
                    server: server.name, sendTo: "\(name):in_1", receiveFrom: "\(name):out_1", seconds: 1.5, prefix: "\(name)-probe")
                var outputCapture = jack_latency_range_t()
                try JackQuery.withClient(server: server.name, named: "\(name)-query") { client in
                    if let port = jack_port_by_name(client, "\(name):out_1") {
                        jack_port_get_latency_range(port, JackCaptureLatency, &outputCapture)
                    }
                }
                live.cancel()
                _ = try live.wait()
                let expected = node.latencyFrames
                let delays = server.isExternal ? Array(report.delays.dropFirst()) : report.delays
                let passed = report.received > 5 && Set(delays) == [expected]
                if !passed && LiveAttempts.mayRetry(after: attempt, xruns: report.xruns, lateCycles: server.lateCycles - lateBefore) { continue }
                #expect(report.received > 5, "\(effect): sent \(report.sent), received \(report.received)")
                #expect(Set(delays) == [expected], "\(effect): delays \(report.delays), latency \(expected)")
                #expect(outputCapture.min == UInt32(expected) && outputCapture.max == UInt32(expected), "\(effect): \(outputCapture)")
                if channels == 1 { #expect(expected == 0) } else { #expect(expected > 0) }
                break
            }
        }
    }

    @Test("a change to a LADSPA control by name, timed inside a period, is heard from the frame the reply states")
    func timedChangeByName() throws {
        let server = try JackTestServer.shared()
        for attempt in 1...LiveAttempts.count {
            let lateBefore = server.lateCycles
            let name = clientName("ladspa-set")
            let recorder = try JackRecorder(server: server.name, clientName: "\(name)-rec", channels: 1, capacityFrames: 4 * server.sampleRate)
            try recorder.start()
            defer { recorder.stop() }
            let chain = try compile(
                """
                nodes:
                  in:   { type: jack.source, channels: 1, connect: none }
                  amp:  { type: ladspa, library: amp.so, label: amp_mono, gain: 1 }
                  out:  { type: jack.sink, channels: 1, connect: ["\(name)-rec:in_1"] }
                links: [in -> amp -> out]
                playback: { client: \(name) }
                """, server: server.name)
            let chainRun = try LiveRun(graph: chain)
            try chainRun.start()
            // A constant 0.5 into the chain (the first half of a 1 Hz square): every frame before
            // the change records 0.5, after it 0.125.
            var feedDescription = try OneLineGraph.parse("tone waveform=square frequency=1 amplitude=0.5 duration=0.45 ! jack.sink connect=\(name):in_1")
            feedDescription.playback = PlaybackSettings(strategy: .stream, client: clientName("feed"))
            let feed = try LiveRun(graph: compile(feedDescription, server: server.name))
            try feed.start()
            let feeding = try #require(feed.primaryPlayhead)
            let deadline = Date().addingTimeInterval(10)
            while feeding.playedFrames == 0 && Date() < deadline { usleep(5_000) }
            let now = try #require(try chainRun.parameters.set(node: "amp", parameter: "gain", value: .number(1), timeout: 5).frame)
            let timed = now + server.sampleRate / 10 + server.periodFrames / 2 + 7
            let applied = try chainRun.parameters.set(node: "amp", parameter: "gain", value: .number(0.25), atFrame: timed, timeout: 5)
            _ = try feed.wait()
            usleep(100_000)
            chainRun.cancel()
            _ = try chainRun.wait()
            recorder.drain()
            let xruns = try #require(chain.devices.first as? JackDevice).xruns + recorder.xruns
            let recorded = recorder.samples(channel: 0)
            let start = recorded.firstIndex { $0 != 0 } ?? recorded.count
            let heard = Array(recorded[start...].prefix { $0 != 0 })
            let switchIndex = heard.firstIndex { $0 != 0.5 } ?? heard.count
            // The periods after the change (the tone's end is faded).
            let after = heard[switchIndex...].prefix(4 * server.periodFrames)
            let passed = !after.isEmpty && after.allSatisfy { $0 == 0.125 }
            if !passed && LiveAttempts.mayRetry(after: attempt, xruns: xruns, lateCycles: server.lateCycles - lateBefore) { continue }
            #expect(applied.frame == timed)
            #expect(!after.isEmpty && after.allSatisfy { $0 == 0.125 }, "after the change: \(Set(after).prefix(5))")
            // The tone's first frame reached the chain on a period's first frame, so the change
            // sits as far past a period's start as `timed` does in the stream.
            #expect((timed - switchIndex) % server.periodFrames == 0, "changed at \(switchIndex), timed \(timed)")
            return
        }
    }

    private func compile(_ description: GraphDescription, server: String) throws -> CompiledGraph {
        var registry = BuiltinNodes.registry()
        try registry.register(JackSink.type(defaultServer: server))
        return try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(description)
    }
}
