import Foundation
import SluiceNodes
import SluiceTestSupport
import Testing
@_spi(TestKit) @testable import SluiceGraph

/// The output gains of nodes before a sink's buffer, applied by the sink's playhead
/// (`OutputGainNode`, `PlayheadGains`): which nodes hand them over, and that what plays is
/// what the node would have made, to the frame.
@Suite struct OutputGainHandoverTests {
    static let rate = 48_000

    private func registry(sink: CollectingSink) throws -> NodeRegistry {
        var registry = BuiltinNodes.registry()
        try registry.register(NodeType(CollectingSink.type.descriptor) { _ in sink })
        return registry
    }

    /// The nodes whose gains a live run of `description` hands to a playhead.
    private func handedOver(_ description: GraphDescription) throws -> [String] {
        let graph = try GraphCompiler(registry: registry(sink: CollectingSink()), options: .init(isLive: true)).compile(description)
        let live = try LiveRun(graph: graph)
        return live.runtime.outputGainParameters.map(\.node).sorted()
    }

    private let tone = ("beep", "tone", ["frequency": "440", "amplitude": "0.5", "duration": "1"])

    @Test("gains pass linear nodes to the sink; a node that is not linear, a mix or a fork keeps them where they are")
    func whichNodesHandOver() throws {
        let fader = ("vol", "fader", ["length": "64"])
        #expect(try handedOver(chain([tone, fader, ("out", "collect", [:])])) == ["vol"])
        // A uniform gain passes a resampler and a channel map; the map's balance is at the sink.
        let stereo = ("map", "channel-map", ["channels": "2", "pan": "0.5"])
        #expect(try handedOver(chain([tone, fader, ("rate", "resampler", ["rate": "44100"]), stereo, ("out", "collect", [:])])) == ["map", "vol"])
        // A balance passes a fader, which keeps channels apart…
        #expect(try handedOver(chain([tone, stereo, fader, ("out", "collect", [:])])) == ["map", "vol"])
        // …but not a channel map, which mixes them: that balance stays in its map.
        let mono = ("down", "channel-map", ["channels": "1"])
        #expect(try handedOver(chain([tone, stereo, mono, ("out", "collect", [:])])) == ["down"])
        // A meter would read another level: the gain before it stays there.
        #expect(try handedOver(chain([tone, fader, ("level", "meter", [:]), ("out", "collect", [:])])) == [])
        // A fork: the gain is heard at two sinks, one of which it does not reach alone.
        var fork = chain([tone, fader, ("split", "tee", ["outputs": "2"]), ("out", "collect", [:])])
        fork.nodes.append(NodeDeclaration(name: "other", type: "collect", parameters: []))
        fork.links.append(LinkDeclaration(from: PortReference(node: "split", port: "out2"), to: PortReference(node: "other")))
        #expect(try handedOver(fork) == [])
    }

    @Test("the file's gain and a timed change are applied by the playhead to the sink's frame: the tone at 0.5, then a straight ramp to 0.25 from the stated frame")
    func timedChangeAtThePlayhead() throws {
        let sink = CollectingSink(pace: .realtime(speed: 4))
        let playback = PlaybackSettings(strategy: .stream, blockFrames: 256)
        let graph = try GraphCompiler(registry: registry(sink: sink), options: .init(isLive: true)).compile(
            chain([tone, ("vol", "fader", ["length": "0", "gain": "0.5", "ramp": "0.01"]), ("out", "collect", [:])], playback: playback))
        let live = try LiveRun(graph: graph)
        try live.start()
        let timed = Self.rate / 2 + 7
        let applied = try live.parameters.set(node: "vol", parameter: "gain", value: .number(0.25), atFrame: timed, timeout: 5)
        _ = try live.wait()
        #expect(applied.frame == timed, "\(applied)")
        #expect(live.parameters.heard(node: "vol", parameter: "gain", frame: timed)?.frame == timed)

        let first = try #require(sink.samples.firstIndex { $0 != 0 }) - 1
        let samples = Array(sink.samples.dropFirst(first).prefix(Self.rate))
        try #require(samples.count == Self.rate)
        let ramp = Self.rate / 100
        func expected(_ n: Int) -> Double {
            let gain = n < timed ? 0.5 : n < timed + ramp ? 0.5 - 0.25 * Double(n - timed + 1) / Double(ramp) : 0.25
            return gain * 0.5 * sin(2 * Double.pi * 440 * Double(n) / Double(Self.rate))
        }
        let worst = samples.indices.map { abs(Double(samples[$0]) - expected($0)) }.max() ?? 1
        #expect(worst < 1e-5, "largest difference \(worst)")
    }

    @Test("a handed-over fader still takes its fade lengths itself: they reach the node, the gain the playhead; its look-ahead stays fixed")
    func fadeLengthsStayWithTheFader() throws {
        let sink = CollectingSink(pace: .realtime(speed: 4))
        let graph = try GraphCompiler(registry: registry(sink: sink), options: .init(isLive: true)).compile(
            chain([(tone.0, tone.1, tone.2.merging(["duration": "4"]) { $1 }), ("vol", "fader", ["length": "64"]), ("out", "collect", [:])],
                playback: PlaybackSettings(strategy: .stream, blockFrames: 256)))
        let fader = try #require(graph.nodes.first { $0.name == "vol" }?.instance as? FaderNode)
        let live = try LiveRun(graph: graph)
        #expect(live.runtime.outputGainParameters.map(\.parameters) == [[FaderNode.gainParameter, FaderNode.rampParameter]])
        try live.start()
        let fade = try live.parameters.set(node: "vol", parameter: "fade-out", value: .integer(16), timeout: 5)
        let gain = try live.parameters.set(node: "vol", parameter: "gain", value: .number(0.5), timeout: 5)
        #expect(throws: ParameterControlError.notLive(node: "vol", parameter: "length", live: ["gain", "ramp", "fade-in", "fade-out"])) {
            try live.parameters.set(node: "vol", parameter: "length", value: .integer(16))
        }
        #expect(fade.frame != nil && gain.frame != nil, "\(fade) \(gain)")
        #expect(fader.currentFadeLengths.in == 64 && fader.currentFadeLengths.out == 16)
        #expect(fader.currentGain == 1)  // the playhead applies it
        live.cancel()
        _ = try? live.wait()
    }

    @Test("a stereo balance handed over: each side moves to its own gain; NaN is ignored")
    func balanceAtThePlayhead() throws {
        let gains = ChannelMapNodeGainsProbe.gains(pan: -0.5)
        #expect(gains.gain(channel: 0) == 1 && gains.gain(channel: 1) == 0.5)
        gains.apply(ParameterChange(parameter: ChannelMapNode.panParameter, value: .nan))
        #expect(gains.gain(channel: 1) == 0.5)
        gains.apply(ParameterChange(parameter: ChannelMapNode.panParameter, value: 1e300))
        #expect(gains.gain(channel: 0) == 0 && gains.gain(channel: 1) == 1)
        gains.apply(ParameterChange(parameter: ChannelMapNode.gainParameter, value: 2))
        #expect(gains.gain(channel: 1) == 2)
    }
}

extension OutputGainHandoverTests {
    /// Renders `rounds` periods of ones through a playhead applying a fader's gain, sending a
    /// change now and then (some timed within the next period).
    private func exercise(rounds: Int, allocations count: Bool) -> (allocations: UInt64, last: Float) {
        let (writer, playhead, _) = makeSinkEdge(
            rate: Self.rate, channels: 1, capacityFrames: 4_800, fadeFrames: 240, watermarkFrames: 256,
            eventCapacity: 256, workerWake: nil)
        let fader = FaderNode(length: 0, gain: 0.5, ramp: 0.001)
        try! fader.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: 1)], outputFormats: [.frames(rate: Self.rate, channels: 1)],
            maximumUnits: 4_096, blockFrames: 256))
        let queue = ParameterQueue(wake: nil)
        playhead.outputGains = PlayheadGains(channels: 1, nodes: [("vol", queue, fader.handOverOutputGains(sampleRate: Self.rate))])
        let output = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        defer { output.deallocate() }
        var written = 0
        func period(_ round: Int) {
            if round % 10 == 0 {
                _ = queue.send(parameter: FaderNode.gainParameter, value: round % 20 == 0 ? 0.25 : 1, atFrame: round % 30 == 0 ? written + 100 : 0)
            }
            let region = writer.writableRegion()
            let frames = min(256, region.units)
            region.base!.assumingMemoryBound(to: Float.self).update(repeating: 1, count: frames)
            writer.commit(frames)
            written += frames
            playhead.render(into: output, frames: 256)
        }
        let allocations = count ? AllocationCounter.count { for round in 0..<rounds { period(round) } } : 0
        if !count { for round in 0..<rounds { period(round) } }
        return (allocations, output[255])
    }

    @Test("the peak a level meter reads is of what is heard: after the handed-over gain")
    func peakAfterTheGain() throws {
        let (writer, playhead, _) = makeSinkEdge(
            rate: Self.rate, channels: 1, capacityFrames: 4_800, fadeFrames: 240, watermarkFrames: 256,
            eventCapacity: 256, workerWake: nil)
        let fader = FaderNode(length: 0, gain: 0.5, ramp: 0)
        try fader.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: 1)], outputFormats: [.frames(rate: Self.rate, channels: 1)],
            maximumUnits: 4_096, blockFrames: 256))
        let queue = ParameterQueue(wake: nil)
        playhead.outputGains = PlayheadGains(channels: 1, nodes: [("vol", queue, fader.handOverOutputGains(sampleRate: Self.rate))])
        playhead.meterPeaks(true)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        defer { output.deallocate() }
        func period() -> Float {
            let region = writer.writableRegion()
            region.base!.assumingMemoryBound(to: Float.self).update(repeating: 0.8, count: 256)
            writer.commit(256)
            playhead.render(into: output, frames: 256)
            return playhead.takePeak()
        }
        _ = period()
        #expect(period() == 0.4)
        _ = queue.send(parameter: FaderNode.gainParameter, value: 0)
        _ = period()
        #expect(period() == 0)
    }

    @Test("handed-over ramps are counted in the sink's frames, not the node's (a resampler may lie between)")
    func rampsInTheSinksFrames() throws {
        let fader = FaderNode(length: 0, gain: 1, ramp: 0.01)
        try fader.prepare(PrepareContext(
            inputFormats: [.frames(rate: 22_050, channels: 1)], outputFormats: [.frames(rate: 22_050, channels: 1)],
            maximumUnits: 4_096, blockFrames: 256))
        #expect(fader.handOverOutputGains(sampleRate: 48_000).rampFrames == 480)
        let map = ChannelMapNode(channels: 2, pan: 0)
        try map.prepare(PrepareContext(
            inputFormats: [.frames(rate: 22_050, channels: 1)], outputFormats: [.frames(rate: 22_050, channels: 2)],
            maximumUnits: 4_096, blockFrames: 256))
        #expect(map.handOverOutputGains(sampleRate: 48_000).rampFrames == Int(ChannelMapNode.rampSeconds * 48_000))
    }

    @Test("the playhead's gains: the last change holds; a period allocates nothing, changes and timed changes included")
    func playheadGainsAllocateNothing() throws {
        // The last change sent (round 190) is to 1, after the 0.25 of round 180.
        #expect(exercise(rounds: 200, allocations: false).last == 1)
        guard AllocationCounter.testsEnabled else { return }
        let counted = exercise(rounds: 2_000, allocations: true)
        #expect(counted.allocations == 0)
    }
}

/// A channel map's gains as a playhead would take them.
enum ChannelMapNodeGainsProbe {
    static func gains(pan: Float) -> any OutputGains {
        let node = ChannelMapNode(channels: 2, pan: pan)
        try! node.prepare(PrepareContext(
            inputFormats: [.frames(rate: 48_000, channels: 1)], outputFormats: [.frames(rate: 48_000, channels: 2)],
            maximumUnits: 4_096, blockFrames: 256))
        return node.handOverOutputGains(sampleRate: 48_000)
    }
}
