import Foundation
import SluiceNodes
import SluiceTestSupport
import Testing
@testable import SluiceGraph

/// Live parameters of a source (`LiveParameterSource`: the tone's frequency and amplitude),
/// changed through a running graph's parameter plane as `sluice serve` changes them.
@Suite struct LiveSourceParameterTests {
    static let rate = 48_000

    @Test("a timed frequency change reaches the tone at its frame, the phase continuing; the reply states that frame")
    func timedFrequencyChange() throws {
        let sink = CollectingSink(pace: .realtime(speed: 2))
        var registry = NodeRegistry()
        try registry.register(ToneSource.type)
        try registry.register(NodeType(CollectingSink.type.descriptor) { _ in sink })
        let playback = PlaybackSettings(strategy: .stream, blockFrames: 256)
        let graph = try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(
            chain([("beep", "tone", ["frequency": "440", "amplitude": "0.5", "duration": "6"]), ("out", "collect", [:])], playback: playback))
        let live = try LiveRun(graph: graph)
        try live.start()
        #expect(live.parameters.liveParameters["beep"]?.map(\.name) == ["frequency", "amplitude"])
        // Well past what the source has made ahead of the sink when the change is sent.
        let timed = 5 * Self.rate + 7
        let applied = try live.parameters.set(node: "beep", parameter: "frequency", value: .number(1_000), atFrame: timed, timeout: 5)
        _ = try live.wait()
        #expect(applied.frame == timed, "\(applied)")

        // The clocked sink plays silence until the first period with audio; the tone's first
        // sample is sin 0 = 0, its second is not.
        let first = try #require(sink.samples.firstIndex { $0 != 0 }) - 1
        let samples = Array(sink.samples.dropFirst(first).prefix(6 * Self.rate))
        try #require(samples.count == 6 * Self.rate)
        let start = 440.0 * Double(timed) / Double(Self.rate)
        let phase = start - start.rounded(.down)
        func expected(_ n: Int) -> Float {
            let cycles = n < timed ? 440.0 * Double(n) / Double(Self.rate) : phase + 1_000.0 * Double(n - timed) / Double(Self.rate)
            return Float(0.5 * sin(2 * Double.pi * (cycles - cycles.rounded(.down))))
        }
        let worst = samples.indices.map { abs(samples[$0] - expected($0)) }.max() ?? 1
        #expect(worst < 1e-6, "largest difference \(worst)")
    }

    @Test("an amplitude change ramps in a straight line over 20 ms; frequency and amplitude are clamped and NaN ignored")
    func amplitudeRamp() throws {
        let tone = ToneSource(waveform: .square, frequency: 1, amplitude: 0.5, duration: 1, rate: Self.rate)
        try tone.prepare(PrepareContext(inputFormats: [], outputFormats: [.frames(rate: Self.rate, channels: 1)], maximumUnits: 4_096, blockFrames: 256))
        tone.apply(ParameterChange(parameter: ToneSource.amplitudeParameter, value: 0.25))
        #expect(tone.amplitude == 0.5)
        let output = UnsafeMutableBufferPointer<Float>.allocate(capacity: 2_000)
        defer { output.deallocate() }
        let ports = NodePorts(inputs: [], outputs: [.frames(rate: Self.rate, channels: 1)])
        ports.setOutput(0, base: UnsafeMutableRawPointer(output.baseAddress), units: 2_000)
        var io = ProcessIO(ports)
        _ = tone.produce(&io, at: 0)
        // A square of frequency 1 is +A for its first half second: the ramp alone shows.
        #expect(abs(output[479] - Float(0.5 - 0.25 * 480 / 960)) < 1e-6, "\(output[479])")
        #expect(output[959] == 0.25 && output[1_999] == 0.25)
        tone.apply(ParameterChange(parameter: ToneSource.frequencyParameter, value: 1e300))
        #expect(tone.frequency == 20_000)
        tone.apply(ParameterChange(parameter: ToneSource.amplitudeParameter, value: .nan))
        #expect(tone.amplitude == 0.25)
    }
}
