import SluiceAudio
import SluiceTestSupport
import Testing
@testable import SluiceGraph

/// Live runs: real threads, a sink pulling on its own clock.
@Suite struct LiveRunTests {
    static let rate = 48000

    func compile(frames: Int, sink: CollectingSink, strategy: PlaybackStrategy = .buffered) throws -> CompiledGraph {
        var registry = NodeRegistry()
        try registry.register(NodeType(RampSource.type.descriptor) { _ in RampSource(rate: Self.rate, frames: frames) })
        try registry.register(PassThrough.type)
        try registry.register(NodeType(CollectingSink.type.descriptor) { _ in sink })
        let playback = PlaybackSettings(strategy: strategy, watermark: 0.1, maxBuffered: 0.5, blockFrames: 256)
        return try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(
            chain([("src", "ramp", [:]), ("mid", "pass", [:]), ("out", "collect", [:])], playback: playback))
    }

    /// A live run of `source -> sink`, not started.
    func sourceToSink(_ source: NodeType, _ sink: CollectingSink, playback: PlaybackSettings) throws -> LiveRun {
        var registry = NodeRegistry()
        try registry.register(source)
        try registry.register(NodeType(CollectingSink.type.descriptor) { _ in sink })
        return try LiveRun(graph: GraphCompiler(registry: registry, options: .init(isLive: true)).compile(
            chain([("src", source.descriptor.typeName, [:]), ("out", "collect", [:])], playback: playback)))
    }

    @Test func playsEverythingInOrder() throws {
        let sink = CollectingSink(pace: .free)
        let live = try LiveRun(graph: compile(frames: 30_011, sink: sink))
        let report = try live.run()
        #expect(firstDifference(sink.samples, (0..<30_011).map { RampSource.sample($0, 0) }) == nil)
        #expect(sink.finished)
        #expect(report.audioSeconds == 30_011.0 / Double(Self.rate))
        #expect(report.underruns == 0)
        #expect(live.runningThreads == 0)
        #expect(sink.clock?.isRunning == false)
    }

    @Test func aClockedSinkPlaysTheSameAudioAfterItsLeadingSilence() throws {
        // 5× real time: fast, with room for the worker to keep up even under a sanitizer. A
        // machine busy enough to starve the worker makes the sink underrun, and an underrun
        // fades the audio (as it should; PlayheadTests test that): such a run is repeated, a
        // few times at most, for one that compares.
        var attempts = 0
        var sink: CollectingSink
        var live: LiveRun
        var report: RunReport
        repeat {
            attempts += 1
            sink = CollectingSink(pace: .realtime(speed: 5))
            live = try LiveRun(graph: compile(frames: 24_000, sink: sink))
            report = try live.run()
        } while report.underruns > 0 && attempts < 5
        try #require(report.underruns == 0, "every one of \(attempts) runs underran: the machine is starving the worker")
        let start = try #require(sink.samples.firstIndex { $0 != 0 })
        let played = Array(sink.samples[start..<(start + 24_000 - 1)])
        // The ramp's first sample is -0.5, never 0, so the first non-zero sample is frame 0.
        #expect(firstDifference(played, (0..<(24_000 - 1)).map { RampSource.sample($0, 0) }) == nil)
        #expect(report.timeToFirstAudio != nil)
        // From the source's first bytes to the first sample rendered: after one, within the run.
        let latency = try #require(report.pipelineLatency)
        #expect(latency >= 0 && latency <= report.wallSeconds, "pipeline latency \(latency) s")
        #expect(live.runningThreads == 0)
        #expect(sink.clock?.isRunning == false)
    }

    @Test("the peak buffered is the fullest the sink's edge held, to a period, however seldom the run looks")
    func peakBufferedIsTheEdgesFullest() throws {
        // A free source fills the sink's edge (24 000 frames) at every refill, once half of it
        // has played; a clocked sink at 10× takes a period every half millisecond, so the run
        // (0.1 s) refills every 25 ms, and a look every 50 ms would find the edge that full
        // about once in fifty.
        let sink = CollectingSink(pace: .realtime(speed: 10))
        let live = try LiveRun(graph: compile(frames: 48_000, sink: sink))
        let capacity = live.runtime.sinks[0].writer.capacityUnits
        let report = try live.run()
        let peak = report.peakBufferedSeconds * Double(Self.rate)
        #expect(peak <= Double(capacity) + 1e-6, "peak \(peak) frames in an edge of \(capacity)")
        // The playhead may take a period between the worker's look at the room and its commit.
        #expect(peak >= Double(capacity - 256) - 1e-6, "peak \(peak) frames in an edge of \(capacity)")
    }

    @Test("a text source that has spoken all its text is not looked at until more comes, and what comes plays")
    func aSourceWaitingForTextSleepsUntilTextArrives() throws {
        let source = TextRampSource()
        let sink = CollectingSink(pace: .free)
        let live = try sourceToSink(
            NodeType(NodeDescriptor(
                typeName: "text-ramp", kind: .source, summary: "Text in, ramp out.", outputs: [PortDescriptor("out", .frames)])) { _ in source },
            sink, playback: PlaybackSettings(strategy: .stream, watermark: 0, maxBuffered: 0.5, blockFrames: 256))
        try live.start()
        let ended = WakeSignal()
        let report = ThreadBox<RunReport?>(nil)
        let waiter = GraphThread(name: "test-wait") {
            report.value = try? live.wait()
            ended.post()
        }
        // Waiting for its first text: a source thread polling a provider looks every 1–4 ms
        // (about 170 looks in half a second); one that sleeps until text looks once or twice.
        sleep(seconds: 0.5)
        let idleLooks = source.produceCalls.load(ordering: .relaxed)
        #expect(idleLooks <= 4, "the source was looked at \(idleLooks) times while it waited for text")
        source.receive(text: "abc")
        let deadline = monotonicSeconds() + 10
        while source.producedFrames.load(ordering: .acquiring) < 300 && monotonicSeconds() < deadline { sleep(seconds: 0.001) }
        source.finishText()
        #expect(ended.wait(timeout: 10), "the run did not end")
        waiter.join()
        #expect(report.value != nil)
        #expect(firstDifference(sink.samples, (0..<300).map { RampSource.sample($0, 0) }) == nil)
    }

    @Test func statusReportsPositionAndWhatIsStillToBuffer() throws {
        // A source at half real time, a device at 20× real time: playback waits for 0.1 s.
        let sink = CollectingSink(pace: .realtime(speed: 20))
        let live = try sourceToSink(
            NodeType(RampSource.type.descriptor) { _ in RampSource(rate: Self.rate, frames: 24_000, pace: 0.5) },
            sink, playback: PlaybackSettings(strategy: .buffered, watermark: 0.1, maxBuffered: 0.5, blockFrames: 256))
        try live.start()
        var sawBuffering = false
        while true {
            let status = live.status
            if status.state == .buffering && status.position == 0 {
                sawBuffering = true
                let toBuffer = try #require(status.secondsToBuffer)
                // What is still to buffer is the watermark less what is buffered. Playback
                // starts at the device's next period, so a starved device thread can find
                // more than the watermark buffered, and nothing still to buffer.
                #expect(abs(toBuffer - max(0, 0.1 - status.bufferedSeconds)) < 1e-9)
            }
            if status.state != .buffering { break }
            sleep(seconds: 0.001)
        }
        let report = try live.wait()
        #expect(sawBuffering)
        #expect(live.status.position == 0.5)
        #expect(live.status.secondsToBuffer == 0)
        #expect(report.audioSeconds == 0.5)
        #expect(live.runningThreads == 0)
    }

    @Test func cancelAtRandomPointsAlwaysReturnsAndFadesOut() throws {
        var generator = SeededGenerator(seed: 7)
        let fade = GraphRuntime.fadeFrames(rate: Self.rate)
        var faded = 0
        for run in 0..<1000 {
            // A device clock (50× real time) so the sink's buffer stays full, as a sound card's does.
            let sink = CollectingSink(pace: .realtime(speed: 50))
            let live = try LiveRun(graph: compile(frames: 10 * Self.rate, sink: sink, strategy: .stream))
            try live.start()
            sleep(seconds: Double.random(in: 0...0.004, using: &generator))
            live.cancel()
            let report = try live.wait()
            #expect(report.cancelled, "run \(run)")
            #expect(live.runningThreads == 0 && sink.clock?.isRunning == false, "run \(run) left threads running")
            // Playback was contiguous from frame 0 (the first non-zero sample, as the ramp
            // starts at -0.5), so sample start + i is frame i, scaled by the fade.
            guard let start = sink.samples.firstIndex(where: { $0 != 0 }),
                  let last = sink.samples.lastIndex(where: { $0 != 0 }), last - start >= fade else { continue }
            // A loaded machine (sanitizers) can starve the sink: after an underrun frames no
            // longer map to stream positions, and one that hit a period boundary had nothing
            // left to fade (docs/flow-control.md). The underrun fade has its own tests.
            guard report.underruns == 0 else { continue }
            #expect(abs(sink.samples[last]) < 0.01, "run \(run): the last frame is not faded")
            // Gains are measured where the ramp is not near zero (it crosses zero now and then).
            let gains = (last - fade + 1...last).filter { abs(RampSource.sample($0 - start, 0)) > 1e-3 }
                .map { sink.samples[$0] / RampSource.sample($0 - start, 0) }
            #expect(gains.last! < 0.01, "run \(run): the last frame is not faded")
            #expect(zip(gains, gains.dropFirst()).allSatisfy { $0.1 <= $0.0 + 1e-5 }, "run \(run): the fade rises")
            faded += 1
        }
        // Most runs cancel while playing; a few before the first period.
        #expect(faded > 500)
    }
}
