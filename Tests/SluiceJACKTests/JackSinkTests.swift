import CJack
import Foundation
import Glibc
import JackTestSupport
import SluiceConfig
import SluiceGraph
@_spi(Testing) import SluiceJACK
import SluiceNodes
import SluiceTestSupport
import Testing

/// jack.sink against a real server (the dummy backend, a private server per test process):
/// what JACK plays is what the graph renders offline, underruns fade, a dead server ends the
/// run, ports connect as asked, and the process thread allocates nothing.
@Suite(.serialized) struct JackSinkTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func registry(server: String) -> NodeRegistry {
        var registry = BuiltinNodes.registry()
        try! registry.register(JackSink.type(defaultServer: server))
        return registry
    }

    /// The speech chain ending in `sink`.
    func speechGraph(sink: String) -> String {
        let input = Self.packageRoot.appendingPathComponent("graphs/audio/hello-24k.s16").path
        return "bytes.source path=\(input) rate=24000 ! aligner ! resampler quality=sinc-medium ! crossfader ! fader ! channel-map channels=2 ! \(sink)"
    }

    func sinkNode(_ graph: CompiledGraph) throws -> JackSink {
        try #require(graph.nodes.compactMap { $0.instance as? JackSink }.first)
    }

    /// How many times a live comparison may run: `LiveAttempts` (JackTestSupport).
    static let attempts = LiveAttempts.count

    static func mayRetry(after attempt: Int, xruns: Int, lateCycles: Int, test: String = #function) -> Bool {
        LiveAttempts.mayRetry(after: attempt, xruns: xruns, lateCycles: lateCycles, test: test)
    }

    @Test func whatJackPlaysIsWhatTheGraphRenders() throws {
        let server = try JackTestServer.shared()
        for attempt in 1...Self.attempts {
            let lateBefore = server.lateCycles
            let client = "sluice-\(UUID().uuidString.prefix(8))"
            // Offline reference, at the server's rate.
            let offlineGraph = try GraphCompiler(registry: registry(server: server.name), options: .init(sinkRate: server.sampleRate))
                .compile(OneLineGraph.parse(speechGraph(sink: "jack.sink client=\(client) connect=none")))
            let renderer = try OfflineRenderer(graph: offlineGraph)
            var reference: [Float] = []
            renderer.output = { _, samples in reference += samples }
            _ = try renderer.run()

            // Live: a recorder the sink connects to before it plays.
            let recorder = try JackRecorder(server: server.name, clientName: "\(client)-rec", channels: 2, capacityFrames: 4 * server.sampleRate)
            try recorder.start()
            defer { recorder.stop() }
            let liveGraph = try GraphCompiler(registry: registry(server: server.name), options: .init(isLive: true))
                .compile(OneLineGraph.parse(speechGraph(sink: "jack.sink client=\(client) connect=\(client)-rec:in_1,\(client)-rec:in_2")))
            let report = try LiveRun(graph: liveGraph).run()
            sleep(seconds: 0.1)
            recorder.drain()
            // Interleave the recording, trim the silence before the first sound, compare.
            let left = recorder.samples(channel: 0), right = recorder.samples(channel: 1)
            let start = try #require(left.firstIndex { $0 != 0 })
            var recorded: [Float] = []
            for frame in start..<min(left.count, start + reference.count / 2) { recorded += [left[frame], right[frame]] }
            let firstReferenceSound = try #require(reference.firstIndex { $0 != 0 }) / 2 * 2
            let expected = Array(reference[firstReferenceSound...])
            let difference = firstDifference(Array(recorded.prefix(expected.count)), expected)
            let xruns = try sinkNode(liveGraph).xruns + recorder.xruns
            if difference != nil && Self.mayRetry(after: attempt, xruns: xruns, lateCycles: server.lateCycles - lateBefore) { continue }
            #expect(report.underruns == 0)
            #expect(recorded.count >= expected.count - 2, "recorded \(recorded.count) samples of \(expected.count)")
            #expect(difference == nil, "with \(xruns) xruns, \(server.lateCycles - lateBefore) late cycles")
            return
        }
    }
}

extension JackSinkTests {
    /// A live run of a one-line graph on `server`.
    func liveRun(_ line: String, server: String) throws -> (LiveRun, CompiledGraph) {
        let graph = try GraphCompiler(registry: registry(server: server), options: .init(isLive: true))
            .compile(OneLineGraph.parse(line))
        return (try LiveRun(graph: graph), graph)
    }

    @Test func aStallingSourceUnderrunsOnceWithFades() throws {
        let server = try JackTestServer.shared()
        for attempt in 1...Self.attempts {
            let lateBefore = server.lateCycles
            let client = "stall-\(UUID().uuidString.prefix(8))"
            let recorder = try JackRecorder(server: server.name, clientName: "\(client)-rec", channels: 1, capacityFrames: 4 * server.sampleRate)
            try recorder.start()
            defer { recorder.stop() }
            // 0.1 s of buffer; the tone stops producing for 0.4 s at 0.5 s of device time.
            var description = try OneLineGraph.parse(
                "tone frequency=440 amplitude=0.5 duration=1.5 stall-at=0.5 stall-for=0.4 ! jack.sink client=\(client) connect=\(client)-rec:in_1")
            description.playback = PlaybackSettings(strategy: .stream, maxBuffered: 0.1, blockFrames: 256)
            let graph = try GraphCompiler(registry: registry(server: server.name), options: .init(isLive: true)).compile(description)
            let report = try LiveRun(graph: graph).run()
            sleep(seconds: 0.1)
            recorder.drain()
            let samples = recorder.samples(channel: 0)
            let first = try #require(samples.firstIndex { $0 != 0 })
            let last = try #require(samples.lastIndex { $0 != 0 })
            let played = Array(samples[first...last])
            // A silent gap (a run of zeros longer than a tone's zero crossing) in the middle.
            var longestGap = 0, gap = 0
            for sample in played {
                gap = sample == 0 ? gap + 1 : 0
                longestGap = max(longestGap, gap)
            }
            // No step larger than the tone's own steepest one plus what the 5 ms fade adds.
            let toneStep: Float = 0.5 * 2 * .pi * 440 / 48_000
            let steepest = zip(played, played.dropFirst()).map { abs($1 - $0) }.max() ?? 0
            let xruns = try sinkNode(graph).xruns + recorder.xruns
            let passed = report.underruns == 1 && longestGap > 4_800 && steepest <= toneStep * 1.2
            if !passed && Self.mayRetry(after: attempt, xruns: xruns, lateCycles: server.lateCycles - lateBefore) { continue }
            #expect(report.underruns == 1)
            #expect(longestGap > 4_800, "the stall left a gap of \(longestGap) frames")
            #expect(steepest <= toneStep * 1.2, "a step of \(steepest) against the tone's \(toneStep), \(xruns) xruns")
            return
        }
    }

    // libjack talks to one server per process: tests that need a server of their own run in a
    // child process (an exit test), so they never disturb the shared server's clients.

    @Test func killingTheServerEndsTheRunWithinASecond() async {
        await #expect(processExitsWith: .success) {
            let server = try JackTestServer.start()
            defer { server.stop() }
            let (live, _) = try JackSinkTests().liveRun("tone duration=30 ! jack.sink client=doomed connect=none", server: server.name)
            try live.start()
            sleep(seconds: 0.3)
            let killed = monotonicSeconds()
            server.kill()
            #expect {
                _ = try live.wait()
            } throws: { error in
                (error as? JackError)?.message.contains("the JACK server went away") == true
            }
            #expect(monotonicSeconds() - killed < 1.0)
            #expect(live.runningThreads == 0)
        }
    }

    @Test("wait-for-ports: a client that comes later is connected when its ports appear, and hears the rest")
    func waitForPortsConnectsALateClient() throws {
        let server = try JackTestServer.shared()
        let client = "late-\(getpid())-\(UUID().uuidString.prefix(4))"
        let (live, _) = try liveRun(
            "tone frequency=440 amplitude=0.5 duration=2 ! jack.sink client=\(client) connect=\(client)-ear:in_1 wait-for-ports=20",
            server: server.name)
        try live.start()
        // The graph plays unconnected meanwhile; the ear starts half a second later.
        sleep(seconds: 0.5)
        let ear = try JackRecorder(server: server.name, clientName: "\(client)-ear", channels: 1, capacityFrames: 4 * server.sampleRate)
        defer { ear.stop() }
        try ear.start()
        let report = try live.wait()
        sleep(seconds: 0.1)
        ear.drain()
        #expect(report.failures.isEmpty)
        let heard = ear.samples(channel: 0).filter { $0 != 0 }.count
        // The rest of the 2 s tone after the ear came: about 1.5 s of sound.
        #expect(heard > server.sampleRate, "the late client heard \(heard) non-zero samples")
    }

    @Test("wait-for-ports: ports that never come end the run once the wait is over, naming the pattern")
    func waitForPortsTimesOut() throws {
        let server = try JackTestServer.shared()
        let client = "never-\(getpid())"
        let (live, _) = try liveRun(
            "tone duration=10 ! jack.sink client=\(client) connect=\(client)-nobody:in_1 wait-for-ports=0.3", server: server.name)
        let started = monotonicSeconds()
        try live.start()
        #expect {
            _ = try live.wait()
        } throws: { error in
            (error as? JackError)?.message == "no JACK input port matches '\(client)-nobody:in_1' (connect) after waiting 0.3 s (node 'jack.sink', wait-for-ports)"
        }
        #expect(monotonicSeconds() - started < 2)
        // Without the wait, the same graph fails at the start, as before.
        #expect(throws: JackError.self) {
            let (now, _) = try liveRun("tone duration=10 ! jack.sink client=\(client)-b connect=\(client)-nobody:in_1", server: server.name)
            try now.start()
            _ = try now.wait()
        }
    }

    @Test func autoConnectFindsThePhysicalPortsAndNoneConnectsNothing() throws {
        let server = try JackTestServer.shared()
        let (auto, autoGraph) = try liveRun("tone duration=0.3 channels=2 ! jack.sink client=auto-\(getpid()) connect=auto", server: server.name)
        try auto.start()
        let sink = try sinkNode(autoGraph)
        let name = try #require(sink.actualClientName)
        #expect(sink.connections.map(\.to) == ["system:playback_1", "system:playback_2"])
        #expect(try server.connections(of: "\(name):out_1") == ["system:playback_1"])
        _ = try auto.wait()

        let (none, noneGraph) = try liveRun("tone duration=0.3 channels=2 ! jack.sink client=none-\(getpid()) connect=none", server: server.name)
        try none.start()
        let quiet = try sinkNode(noneGraph)
        let quietName = try #require(quiet.actualClientName)
        #expect(quiet.connections.isEmpty)
        #expect(try server.connections(of: "\(quietName):out_1").isEmpty)
        _ = try none.wait()
    }

    @Test func noServerIsAClearError() throws {
        #expect {
            _ = try JackClient(name: "nobody", server: "sluice-no-such-server-\(getpid())")
        } throws: { error in
            (error as? JackError)?.message.hasPrefix("no JACK server named 'sluice-no-such-server-") == true
        }
    }

    @Test func aBufferSizeChangeWhilePlayingIsSurvived() async {
        await #expect(processExitsWith: .success) {
            let server = try JackTestServer.start()
            defer { server.stop() }
            let test = JackSinkTests()
            let (live, graph) = try test.liveRun("tone duration=1.5 ! jack.sink client=resize connect=none", server: server.name)
            try live.start()
            sleep(seconds: 0.3)
            let changed = try JackQuery.withClient(server: server.name) { client in jack_set_buffer_size(client, 1024) }
            #expect(changed == 0)
            let report = try live.wait()
            let sink = try test.sinkNode(graph)
            #expect(report.audioSeconds == 1.5)
            #expect(report.counters["jack.sink.oversized-periods"] == 0)
            #expect(sink.callbackCount < Int(1.5 * 48_000 / 256))  // some periods were 1024 frames
        }
    }

    /// Graphs whose whole JACK cycle the allocation test watches: the speech chain with its
    /// processors on the worker (`boundary: sink`) and in the cycle (`boundary: source`), and
    /// the live chain jack.source -> fader -> jack.sink fed by a tone from another client, the
    /// direct section (a mono chain on the ports' buffers fed the same way, and a stereo one),
    /// and two voices mixed into the same ports by two sinks.
    static let allocationCases = ["speech-sink", "speech-source", "live-chain", "direct-chains", "voices"]

    @Test(.enabled(if: AllocationCounter.testsEnabled), arguments: allocationCases)
    func theProcessThreadAllocatesNothing(graphCase: String) async {
        await #expect(processExitsWith: .success) { [graphCase] in
            // A small period, so seven seconds hold over 10 000 callbacks.
            let server = try JackTestServer.start(periodFrames: 32)
            defer { server.stop() }
            let test = JackSinkTests()
            var registry = test.registry(server: server.name)
            try registry.register(JackSource.type(defaultServer: server.name))
            let seconds = 7.0
            var description: GraphDescription
            var feed: LiveRun?
            switch graphCase {
            case "live-chain":
                description = try OneLineGraph.parse("jack.source channels=1 connect=none ! fader length=64 ! jack.sink connect=none")
                description.playback = PlaybackSettings(strategy: .stream, client: "alloc-chain")
            case "direct-chains":
                description = try GraphFile.parse("""
                    name: direct
                    nodes:
                      mic:     { type: jack.source, channels: 1, connect: none }
                      gain:    { type: fader, length: 0, gain: 0.5 }
                      out:     { type: jack.sink, channels: 1, connect: none }
                      pair:    { type: jack.source, channels: 2, connect: none }
                      swap:    { type: channel-map, channels: 2, routing: [1, 0] }
                      pairOut: { type: jack.sink, channels: 2, connect: none }
                    links: [mic -> gain -> out, pair -> swap -> pairOut]
                    playback: { strategy: stream, client: alloc-direct }
                    """, file: "direct.yaml")
            case "voices":
                description = try GraphFile.parse("""
                    name: voices
                    nodes:
                      a:    { type: tone, rate: 24000, frequency: 440, duration: \(seconds) }
                      b:    { type: tone, rate: 24000, frequency: 660, duration: \(seconds) }
                      ra:   { type: resampler }
                      rb:   { type: resampler }
                      sa:   { type: channel-map, channels: 2 }
                      sb:   { type: channel-map, channels: 2 }
                      outA: { type: jack.sink, ports: [l, r], connect: none }
                      outB: { type: jack.sink, ports: [l, r], connect: none }
                    links: [a -> ra -> sa -> outA, b -> rb -> sb -> outB]
                    playback: { strategy: stream, client: alloc-voices }
                    """, file: "voices.yaml")
            default:
                // The resampler's live default (speexdsp), in the cycle with `boundary: source`.
                description = try OneLineGraph.parse(
                    "tone rate=24000 frequency=440 duration=\(seconds) ! resampler ! crossfader ! fader"
                        + " ! channel-map channels=2 ! jack.sink connect=none")
                description.playback = PlaybackSettings(strategy: .stream, client: "alloc-speech")
                description.playback.boundary = graphCase == "speech-source" ? .source : .sink
            }
            let graph = try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(description)
            let live = try LiveRun(graph: graph)
            let device = try #require(graph.devices.first as? JackDevice)
            // Watched from the last moment before the callback renders: every period that
            // moves audio (the first included) is counted.
            var callbacksBefore = 0
            var watched = false
            device.beforeRendering = {
                guard let thread = device.realtimeThread else { return }
                AllocationCounter.watch(thread)
                callbacksBefore = device.callbackCount
                watched = true
            }
            try live.start()
            #expect(watched, "the process thread was not known before rendering began")
            if graphCase == "live-chain" || graphCase == "direct-chains" {
                let port = graphCase == "live-chain" ? "alloc-chain:in_1" : "alloc-direct:mic.in_1"
                var tone = try OneLineGraph.parse("tone frequency=440 duration=\(seconds) ! jack.sink connect=\(port)")
                tone.playback = PlaybackSettings(strategy: .stream, client: "alloc-feed")
                feed = try LiveRun(graph: GraphCompiler(registry: registry, options: .init(isLive: true)).compile(tone))
                _ = try feed?.run()
                live.cancel()
            }
            _ = try live.wait()
            let allocations = AllocationCounter.unwatch()
            let callbacks = device.callbackCount - callbacksBefore
            #expect(callbacks > 10_000, "\(callbacks) callbacks")
            #expect(allocations == 0)
        }
    }
}
