import CJack
import Foundation
import Glibc
import SluiceConfig
import SluiceGraph
import SluiceJACK
import SluiceNodes
import SluiceTestSupport
import Testing

/// The live checks every hosted-plugin node type (`ladspa`, `lv2`) must pass on a real server
/// (dummy backend), as `jack.source -> effect -> jack.sink`: it adds exactly the latency it
/// reports, measured from outside by two C clients and in JACK's latency ranges; and a live
/// change by name, timed inside a period, is heard from the frame the reply states.
public struct LiveEffectChain {
    /// Registers the hosting node type under test.
    public let register: @Sendable (inout NodeRegistry) throws -> Void

    public init(register: @escaping @Sendable (inout NodeRegistry) throws -> Void) {
        self.register = register
    }

    func compile(_ yaml: String, server: String) throws -> CompiledGraph {
        var registry = BuiltinNodes.registry()
        try registry.register(JackSink.type(defaultServer: server))
        try registry.register(JackSource.type(defaultServer: server))
        try register(&registry)
        return try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(GraphFile.parse(yaml, file: "live.yaml"))
    }

    func clientName(_ stem: String) -> String { "\(stem)-\(UUID().uuidString.prefix(6))" }

    /// For each effect (the YAML of its node, `channels` wide): the delay an impulse probe
    /// measures and the capture latency JACK gives the sink's port both equal `latency` of the
    /// compiled graph's node.
    public func expectLatencyAsReported(
        _ effects: [(yaml: String, channels: Int, expectsLatency: Bool)], latency: (any Node) -> Int,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws {
        let server = try JackTestServer.shared()
        for (effect, channels, expectsLatency) in effects {
            for attempt in 1...LiveAttempts.count {
                let lateBefore = server.lateCycles
                let name = clientName("effect")
                let graph = try compile(
                    """
                    nodes:
                      in:     { type: jack.source, channels: \(channels), connect: none }
                      effect: \(effect)
                      out:    { type: jack.sink, channels: \(channels), connect: none }
                    links: [in -> effect -> out]
                    playback: { strategy: stream, client: \(name) }
                    """, server: server.name)
                let node = try #require(graph.node(named: "effect")?.instance, sourceLocation: sourceLocation)
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
                let expected = latency(node)
                let delays = server.isExternal ? Array(report.delays.dropFirst()) : report.delays
                let passed = report.received > 5 && Set(delays) == [expected]
                if !passed && LiveAttempts.mayRetry(after: attempt, xruns: report.xruns, lateCycles: server.lateCycles - lateBefore) { continue }
                #expect(report.received > 5, "\(effect): sent \(report.sent), received \(report.received)", sourceLocation: sourceLocation)
                #expect(Set(delays) == [expected], "\(effect): delays \(report.delays), latency \(expected)", sourceLocation: sourceLocation)
                #expect(
                    outputCapture.min == UInt32(expected) && outputCapture.max == UInt32(expected), "\(effect): \(outputCapture)",
                    sourceLocation: sourceLocation)
                #expect((expected > 0) == expectsLatency, "\(effect): latency \(expected)", sourceLocation: sourceLocation)
                break
            }
        }
    }

    /// A constant 0.5 through `effect` (a node named `amp` whose `parameter` at `unity` passes
    /// it unchanged): `parameter` set to `quarter` (which scales by ¼) at a frame inside a
    /// period is heard from exactly that frame, within `tolerance`.
    public func expectTimedChangeByName(
        effect: String, parameter: String, unity: ParameterValue, quarter: ParameterValue, tolerance: Float = 0,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws {
        let server = try JackTestServer.shared()
        for attempt in 1...LiveAttempts.count {
            let lateBefore = server.lateCycles
            let name = clientName("effect-set")
            let recorder = try JackRecorder(server: server.name, clientName: "\(name)-rec", channels: 1, capacityFrames: 4 * server.sampleRate)
            try recorder.start()
            defer { recorder.stop() }
            let chain = try compile(
                """
                nodes:
                  in:   { type: jack.source, channels: 1, connect: none }
                  amp:  \(effect)
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
            var feedRegistry = BuiltinNodes.registry()
            try feedRegistry.register(JackSink.type(defaultServer: server.name))
            let feed = try LiveRun(graph: GraphCompiler(registry: feedRegistry, options: .init(isLive: true)).compile(feedDescription))
            try feed.start()
            let feeding = try #require(feed.primaryPlayhead, sourceLocation: sourceLocation)
            let deadline = Date().addingTimeInterval(10)
            while feeding.playedFrames == 0 && Date() < deadline { usleep(5_000) }
            let now = try #require(
                try chainRun.parameters.set(node: "amp", parameter: parameter, value: unity, timeout: 5).frame, sourceLocation: sourceLocation)
            let timed = now + server.sampleRate / 10 + server.periodFrames / 2 + 7
            let applied = try chainRun.parameters.set(node: "amp", parameter: parameter, value: quarter, atFrame: timed, timeout: 5)
            _ = try feed.wait()
            usleep(100_000)
            chainRun.cancel()
            _ = try chainRun.wait()
            recorder.drain()
            let xruns = try #require(chain.devices.first as? JackDevice, sourceLocation: sourceLocation).xruns + recorder.xruns
            let recorded = recorder.samples(channel: 0)
            let start = recorded.firstIndex { $0 != 0 } ?? recorded.count
            let heard = Array(recorded[start...].prefix { $0 != 0 })
            let switchIndex = heard.firstIndex { abs($0 - 0.5) > tolerance } ?? heard.count
            // The periods after the change (the tone's end is faded).
            let after = heard[switchIndex...].prefix(4 * server.periodFrames)
            let passed = !after.isEmpty && after.allSatisfy { abs($0 - 0.125) <= tolerance }
            if !passed && LiveAttempts.mayRetry(after: attempt, xruns: xruns, lateCycles: server.lateCycles - lateBefore) { continue }
            #expect(applied.frame == timed, sourceLocation: sourceLocation)
            #expect(passed, "after the change: \(Set(after).prefix(5))", sourceLocation: sourceLocation)
            // The tone's first frame reached the chain on a period's first frame, so the change
            // sits as far past a period's start as `timed` does in the stream.
            #expect((timed - switchIndex) % server.periodFrames == 0, "changed at \(switchIndex), timed \(timed)", sourceLocation: sourceLocation)
            return
        }
    }
}
