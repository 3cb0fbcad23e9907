import SluiceAudio
import SluiceTestSupport
import Testing
@testable import SluiceGraph

/// Flow control on the offline driver's virtual clock, where every figure is exact: the
/// first audio tick for each strategy, backpressure, re-arming after an underrun.
@Suite struct FlowControlTests {
    static let rate = 48000
    static let block = 256

    struct Run {
        var samples: [Float] = []
        var report = RunReport()
        var ticks: [OfflineRenderer.Tick] = []
        /// The first tick at which the sink played.
        var firstPlayingTick: Int? { ticks.first { $0.state != .buffering }?.index }
    }

    func render(
        frames: Int, pace: Double, strategy: PlaybackStrategy, watermark: Double = 0.5,
        maxBuffered: Double = 3.0, stall: ClosedRange<Double>? = nil
    ) throws -> Run {
        var registry = NodeRegistry()
        try registry.register(NodeType(RampSource.type.descriptor) { _ in
            RampSource(rate: Self.rate, frames: frames, pace: pace, stall: stall)
        })
        try registry.register(CollectingSink.type)
        let playback = PlaybackSettings(strategy: strategy, watermark: watermark, maxBuffered: maxBuffered, blockFrames: Self.block)
        let graph = try GraphCompiler(registry: registry).compile(chain([("src", "ramp", [:]), ("out", "collect", [:])], playback: playback))
        let renderer = try OfflineRenderer(graph: graph)
        var run = Run()
        renderer.output = { _, buffer in run.samples += buffer }
        renderer.observer = { run.ticks.append($0) }
        run.report = try renderer.run()
        return run
    }

    func time(ofTick tick: Int) -> Double { Double(tick * Self.block) / Double(Self.rate) }

    /// The tick at which a source paced at `pace` has produced `frames` frames, or the whole
    /// stream of `total` frames.
    func tick(whenProduced frames: Int, pace: Double, total: Int) -> Int {
        var tick = 0
        while true {
            let produced = min(total, Int((pace * Double(Self.rate) * time(ofTick: tick)).rounded(.down)))
            if produced >= min(frames, total) { return tick }
            tick += 1
        }
    }

    @Test func bufferedStartsAtTheWatermark() throws {
        let run = try render(frames: 48000, pace: 1, strategy: .buffered, watermark: 0.5)
        let expected = tick(whenProduced: 24000, pace: 1, total: 48000)
        #expect(expected == 94)
        #expect(run.firstPlayingTick == expected)
        #expect(run.report.timeToFirstAudio == time(ofTick: expected))
        #expect(run.report.underruns == 0)
        #expect(run.samples.count == 48000)
    }

    @Test func streamStartsWithOnePeriod() throws {
        // Paced at 2× so each period is there before it is due.
        let run = try render(frames: 48000, pace: 2, strategy: .stream)
        #expect(run.firstPlayingTick == 1)
        #expect(run.report.timeToFirstAudio == time(ofTick: 1))
        #expect(run.report.timeToFirstBuffer == time(ofTick: 1))
        #expect(run.report.pipelineLatency == nil, "a wall-clock latency has no meaning offline")
        #expect(run.report.underruns == 0)
    }

    @Test func generateFirstWaitsForTheWholeStream() throws {
        let run = try render(frames: 48000, pace: 1, strategy: .generateFirst)
        #expect(run.firstPlayingTick == tick(whenProduced: 48000, pace: 1, total: 48000))
        #expect(run.samples.count == 48000)
    }

    @Test func generateFirstStartsWhenTheBufferIsFull() throws {
        // Bounded memory wins over generate-first: a stream longer than max-buffered starts
        // once the sink holds max-buffered.
        let run = try render(frames: 48000 * 5, pace: 1, strategy: .generateFirst, maxBuffered: 1.0)
        #expect(run.firstPlayingTick == tick(whenProduced: 48000, pace: 1, total: 48000 * 5))
        #expect(run.report.underruns == 0)
    }

    @Test func aStreamShorterThanTheWatermarkPlaysInFull() throws {
        let unpaced = try render(frames: 9600, pace: 0, strategy: .buffered, watermark: 0.5)
        #expect(unpaced.firstPlayingTick == 0)
        #expect(unpaced.samples == (0..<9600).map { RampSource.sample($0, 0) })
        let paced = try render(frames: 9600, pace: 1, strategy: .buffered, watermark: 0.5)
        #expect(paced.firstPlayingTick == tick(whenProduced: 9600, pace: 1, total: 9600))
        #expect(paced.samples.count == 9600)
    }

    /// The tick at which an `auto` sink fed by a ramp of `total` frames paced at `pace` starts:
    /// the rule of docs/flow-control.md, tick by tick.
    func autoStartTick(total: Int, pace: Double) -> Int? {
        var watermark = Int.max
        var firstOutput: Double?
        for tick in 0..<5000 {
            let t = time(ofTick: tick)
            let produced = min(total, Int((pace * Double(Self.rate) * t).rounded(.down)))
            // Production is measured from the source's first output.
            if produced > 0, firstOutput == nil { firstOutput = t }
            if produced >= Int(FlowController.measureSeconds * Double(Self.rate)), let first = firstOutput, t > first {
                let measured = Double(produced) / Double(Self.rate) / (t - first)
                let seconds = 4.0 * (1 - measured)
                watermark = min(max(Int((seconds * Double(Self.rate)).rounded(.up)) + Self.block, Self.block), 3 * Self.rate)
            }
            if produced >= watermark || produced == total { return tick }
        }
        return nil
    }

    @Test func autoSizesTheWatermarkFromTheProductionRate() throws {
        let total = 4 * Self.rate
        let pace = 0.5
        let run = try render(frames: total, pace: pace, strategy: .auto)
        #expect(run.firstPlayingTick == autoStartTick(total: total, pace: pace))
        #expect(abs((run.report.watermarkSeconds ?? 0) - 2.0) < 0.01)
        #expect(run.report.underruns == 0)
        // 2.0 on the graph clock, plus the wall time spent inside `produce` (a few ms; more
        // under a sanitizer).
        let factor = try #require(run.report.sourceRealTimeFactor)
        #expect(factor >= 2.0 - 1e-3 && factor < 2.25)
        #expect(run.samples.count == total)
    }

    @Test("auto: each sink sizes its watermark from the source upstream of it, not from the graph's first source")
    func autoFollowsEachSinksOwnSource() throws {
        var registry = NodeRegistry()
        try registry.register(RampSource.type)
        try registry.register(CollectingSink.type)
        let total = 4 * Self.rate
        var description = GraphDescription(name: "two", playback: PlaybackSettings(strategy: .auto, blockFrames: Self.block))
        // The unpaced source comes first among the sources; the first sink is fed by the paced
        // one, as a voice that waits its turn for a shared engine is fed beside a quick one.
        for (name, type, pace) in [("quick", "ramp", "0"), ("slow", "ramp", "0.5"), ("slowOut", "collect", nil), ("quickOut", "collect", nil)] {
            var parameters: [ParameterDeclaration] = []
            if let pace {
                parameters = [ParameterDeclaration(name: "frames", value: .scalar("\(total)", quoted: false)),
                              ParameterDeclaration(name: "pace", value: .scalar(pace, quoted: false))]
            }
            description.nodes.append(NodeDeclaration(name: name, type: type, parameters: parameters))
        }
        for (from, to) in [("slow", "slowOut"), ("quick", "quickOut")] {
            description.links.append(LinkDeclaration(from: PortReference(node: from), to: PortReference(node: to)))
        }
        let graph = try GraphCompiler(registry: registry).compile(description)
        let renderer = try OfflineRenderer(graph: graph)
        var ticks: [OfflineRenderer.Tick] = []
        var samples: [Int: Int] = [:]
        renderer.output = { sink, buffer in samples[sink, default: 0] += buffer.count }
        renderer.observer = { ticks.append($0) }
        let report = try renderer.run()
        // The first sink is the paced voice's: it waits as a paced source alone would make it.
        let first = ticks.first { $0.state != .buffering }?.index
        #expect(first == autoStartTick(total: total, pace: 0.5))
        #expect(report.underruns == 0)
        #expect(samples[0] == total && samples[1] == total)
    }

    @Test func autoPlaysAFastSourceAtOnce() throws {
        let run = try render(frames: 4 * Self.rate, pace: 0, strategy: .auto)
        #expect(run.firstPlayingTick == 0)
        #expect(run.report.underruns == 0)
    }

    @Test func theWatermarkRearmsAfterAnUnderrun() throws {
        // Paced at 1.1× so the buffer never holds whole periods only; the source stalls
        // from 1 s to 2 s, longer than the 0.5 s buffered.
        let run = try render(frames: 3 * Self.rate, pace: 1.1, strategy: .buffered, watermark: 0.5, stall: 1.0...2.0)
        #expect(run.report.underruns == 1)
        let states = run.ticks.map(\.state)
        let firstPlay = try #require(states.firstIndex(of: .playing))
        let dry = try #require(states[firstPlay...].firstIndex(of: .buffering))
        let resumed = try #require(states[dry...].firstIndex(of: .playing))
        // Playback resumes at the first tick whose buffer holds the watermark again.
        #expect(run.ticks[resumed].bufferedFrames >= 24000)
        #expect(run.ticks[resumed - 1].bufferedFrames < 24000)
        // The audio before the silence is faded out: its last frame is near zero, and the
        // gain never rises over the fade.
        // The silence starts inside the period in which the sink ran dry (179 frames in).
        let dryPeriod = (dry - firstPlay) * Self.block
        let playedBefore = try #require(run.samples[dryPeriod..<(dryPeriod + Self.block)].lastIndex { $0 != 0 }) + 1
        #expect(playedBefore == dryPeriod + 179)
        #expect(run.samples[playedBefore..<(dryPeriod + Self.block)].allSatisfy { $0 == 0 })
        let original = (0..<playedBefore).map { RampSource.sample($0, 0) }
        let fade = GraphRuntime.fadeFrames(rate: Self.rate)
        let gains = (playedBefore - fade..<playedBefore).map { run.samples[$0] / original[$0] }
        #expect(gains.first! > 0.95)
        #expect(gains.last! < 0.01)
        #expect(zip(gains, gains.dropFirst()).allSatisfy { $0.1 <= $0.0 + 1e-6 })
    }

    @Test(.enabled(if: AllocationCounter.testsEnabled))
    func backpressureKeepsTenMinutesAt100xWithinMaxBuffered() throws {
        let total = 10 * 60 * Self.rate
        var registry = NodeRegistry()
        try registry.register(NodeType(RampSource.type.descriptor) { _ in RampSource(rate: Self.rate, frames: total, pace: 100) })
        try registry.register(PassThrough.type)
        try registry.register(CollectingSink.type)
        let playback = PlaybackSettings(strategy: .buffered, watermark: 0.5, maxBuffered: 3.0, blockFrames: Self.block)
        let graph = try GraphCompiler(registry: registry).compile(
            chain([("src", "ramp", [:]), ("mid", "pass", [:]), ("out", "collect", [:])], playback: playback))
        let renderer = try OfflineRenderer(graph: graph)
        var played = 0
        var mismatches = 0
        renderer.output = { _, buffer in
            for sample in buffer {
                if sample != RampSource.sample(played, 0) { mismatches += 1 }
                played += 1
            }
        }
        var peak = 0
        var allocations: UInt64 = 0
        renderer.observer = { tick in
            peak = max(peak, tick.bufferedFrames)
            // Count allocations over everything after the first second of audio.
            if tick.index == 200 { AllocationCounter.begin() }
            if tick.state == .finished { allocations = AllocationCounter.end() }
        }
        let report = try renderer.run()
        #expect(played == total)
        #expect(mismatches == 0)
        #expect(report.underruns == 0)
        #expect(peak <= 3 * Self.rate + Self.block)
        #expect(report.peakBufferedSeconds <= 3.0 + Double(Self.block) / Double(Self.rate))
        // Flat memory: after warm-up the whole render allocates nothing at all.
        #expect(allocations == 0)
    }
}
