import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("tone")
struct ToneSourceTests {
    /// The documented formulas, written out independently of the node.
    static func frac(_ x: Double) -> Double { x - x.rounded(.down) }

    @Test("sine: A·sin(2π·frac(f·n/r)) at any index, within rounding of A·sin(2π·f·n/r)")
    func sineSamples() throws {
        let harness = try SourceHarness(ToneSource.type, ["frequency": .number(441), "amplitude": .number(0.75), "duration": .number(0.5)])
        #expect(harness.runToEnd().isFinished)
        let samples = harness.samples
        #expect(samples.count == 24_000)
        for n in [0, 1, 2, 99, 1_000, 12_345, 23_999] {
            let expected = Float(0.75 * sin(2 * Double.pi * Self.frac(441 * Double(n) / 48_000)))
            #expect(samples[n] == expected, "sample \(n)")
            #expect(abs(Double(samples[n]) - 0.75 * sin(2 * Double.pi * 441 * Double(n) / 48_000)) < 1e-6)
        }
    }

    @Test("square: +A for the first half of each cycle, −A for the second")
    func squareSamples() throws {
        let harness = try SourceHarness(ToneSource.type, ["waveform": .string("square"), "frequency": .number(1_000), "duration": .number(0.01)])
        harness.runToEnd()
        let samples = harness.samples
        #expect(samples.count == 480)
        // 48 frames a cycle: frac(n/48) < 0.5 for n mod 48 in 0...23.
        for n in [0, 1, 23, 48, 71, 479 - 24] { #expect(samples[n] == 0.5, "sample \(n)") }
        for n in [24, 47, 72, 95, 479] { #expect(samples[n] == -0.5, "sample \(n)") }
    }

    @Test("noise: the (n+1)-th SplitMix64 output from the seed, scaled to [−A, A)")
    func noiseSamples() throws {
        let harness = try SourceHarness(ToneSource.type, ["waveform": .string("noise"), "seed": .integer(7), "amplitude": .number(0.25), "duration": .number(0.02)])
        harness.runToEnd(rooms: 1...37)
        var generator = SeededGenerator(seed: 7)
        let expected = (0..<960).map { _ in
            Float(0.25 * (2 * (Double(generator.next() >> 11) * 0x1p-53) - 1))
        }
        #expect(firstDifference(harness.samples, expected) == nil)
        let other = try SourceHarness(ToneSource.type, ["waveform": .string("noise"), "seed": .integer(8), "amplitude": .number(0.25), "duration": .number(0.02)])
        other.runToEnd()
        #expect(other.samples != harness.samples)
    }

    @Test("clicks: one-sample impulses at the frames ⌈k·rate/f⌉")
    func clickSamples() throws {
        let harness = try SourceHarness(ToneSource.type, ["waveform": .string("clicks"), "frequency": .number(3), "rate": .integer(1_000), "duration": .number(1.5)])
        harness.runToEnd(rooms: 1...50)
        let samples = harness.samples
        #expect(samples.count == 1_500)
        let clicks = samples.indices.filter { samples[$0] != 0 }
        #expect(clicks == [0, 334, 667, 1_000, 1_334])
        #expect(clicks.allSatisfy { samples[$0] == 0.5 })
    }

    @Test("output does not depend on how the runtime slices the calls", arguments: ToneSource.Waveform.allCases)
    func blockIndependence(_ waveform: ToneSource.Waveform) throws {
        let values: [String: ParameterValue] = [
            "waveform": .string(waveform.rawValue), "frequency": .number(997.5), "channels": .integer(2), "duration": .number(0.3),
        ]
        let whole = try SourceHarness(ToneSource.type, values)
        #expect(whole.runToEnd(rooms: 20_000...20_000).isFinished)
        let sliced = try SourceHarness(ToneSource.type, values)
        #expect(sliced.runToEnd(rooms: 1...700, seed: 3).isFinished)
        #expect(whole.calls.count == 1)
        #expect(sliced.calls.count > 20)
        #expect(firstDifference(sliced.samples, whole.samples) == nil)
        // Both channels carry the same signal.
        let samples = whole.samples
        #expect(samples.count == 14_400 * 2)
        #expect(stride(from: 0, to: samples.count, by: 2).allSatisfy { samples[$0] == samples[$0 + 1] })
    }

    @Test("the stream holds round(duration × rate) frames, then finishes")
    func frameCount() throws {
        let odd = try SourceHarness(ToneSource.type, ["duration": .number(0.0105), "rate": .integer(44_100)])
        #expect(odd.format == .frames(rate: 44_100, channels: 1))
        #expect(odd.runToEnd().isFinished)
        #expect(odd.frames == 463)  // 463.05
        #expect((odd.node as? ToneSource)?.frameCount == 463)
        // After the end, only .finished.
        #expect(odd.step(room: 100).isFinished)
        #expect(odd.frames == 463)

        let empty = try SourceHarness(ToneSource.type, ["duration": .number(0)])
        #expect(empty.step(room: 100).isFinished)
        #expect(empty.frames == 0)

        let tone = try SourceHarness(ToneSource.type, ["duration": .number(2.5)])
        #expect(tone.node.expectedDuration == 2.5)
    }

    @Test("rate auto takes the downstream rate, or 48000")
    func autoRate() throws {
        let follows = try SourceHarness(ToneSource.type, ["rate": .auto, "duration": .number(1)], downstreamRate: 22_050)
        #expect(follows.format == .frames(rate: 22_050, channels: 1))
        follows.runToEnd(rooms: 4_000...4_000)
        #expect(follows.frames == 22_050)
        let alone = try SourceHarness(ToneSource.type, ["rate": .auto, "channels": .integer(3)])
        #expect(alone.format == .frames(rate: 48_000, channels: 3))
        let fixed = try SourceHarness(ToneSource.type, ["rate": .integer(16_000)], downstreamRate: 22_050)
        #expect(fixed.format.sampleRate == 16_000)
    }

    @Test("pace: at most ⌊pace·rate·t⌋ frames by time t, waiting until the next frame is due")
    func pacing() throws {
        // 0.5 × 48000 = 24000 frames per second of graph time.
        let harness = try SourceHarness(ToneSource.type, ["pace": .number(0.5), "duration": .number(1)])
        let first = harness.step(room: 10_000, at: 0)
        #expect(harness.frames == 0)
        #expect(first.waitingUntil == 1.0 / 24_000)

        let atTenth = harness.step(room: 10_000, at: 0.1)
        #expect(harness.frames == 2_400)
        let next = try #require(atTenth.waitingUntil)
        #expect(abs(next - 2_401.0 / 24_000) < 1e-12)
        #expect(Int((0.5 * 48_000 * next).rounded(.down)) == 2_401)

        // Before that time: nothing.
        #expect(harness.step(room: 10_000, at: 0.1).waitingUntil == next)
        #expect(harness.frames == 2_400)

        // Room smaller than what is due: .more, then the rest, then waiting again.
        #expect(harness.step(room: 1_000, at: 0.25).isMore)
        #expect(harness.frames == 3_400)
        #expect(harness.step(room: 10_000, at: 0.25).waitingUntil != nil)
        #expect(harness.frames == 6_000)

        // At exactly the time it asked for, it always makes progress.
        let due = try #require(harness.step(room: 10_000, at: 0.25).waitingUntil)
        harness.step(room: 10_000, at: due)
        #expect(harness.frames == 6_001)

        // The end comes at 2 s of graph time, and the samples are the unpaced ones.
        #expect(harness.step(room: 100_000, at: 2).isFinished)
        #expect(harness.frames == 48_000)
        let unpaced = try SourceHarness(ToneSource.type, [:])
        unpaced.runToEnd()
        #expect(firstDifference(harness.samples, unpaced.samples) == nil)
    }

    @Test("pace: any time gives exactly ⌊pace·rate·t⌋ frames", arguments: [0.001, 0.0137, 0.333, 0.9])
    func paceAtTime(_ time: Double) throws {
        let harness = try SourceHarness(ToneSource.type, ["pace": .number(1.7), "rate": .integer(44_100), "duration": .number(10)])
        harness.step(room: 1_000_000, at: time)
        #expect(harness.frames == Int((1.7 * 44_100 * time).rounded(.down)))
    }

    @Test("stall: nothing while stall-at ≤ t < stall-at + stall-for")
    func stall() throws {
        let harness = try SourceHarness(ToneSource.type, ["stall-at": .number(0.5), "stall-for": .number(0.25)])
        #expect(harness.step(room: 100, at: 0.4).isMore)
        #expect(harness.frames == 100)
        #expect(harness.step(room: 100, at: 0.5).waitingUntil == 0.75)
        #expect(harness.step(room: 100, at: 0.7499).waitingUntil == 0.75)
        #expect(harness.frames == 100)
        #expect(harness.step(room: 100, at: 0.75).isMore)
        #expect(harness.frames == 200)

        // A paced tone catches up after the stall: the budget counts from time 0.
        let paced = try SourceHarness(ToneSource.type, ["pace": .number(1), "stall-at": .number(0.1), "stall-for": .number(0.2)])
        paced.step(room: 100_000, at: 0.05)
        #expect(paced.frames == 2_400)
        #expect(paced.step(room: 100_000, at: 0.2).waitingUntil == 0.30000000000000004)
        paced.step(room: 100_000, at: 0.4)
        #expect(paced.frames == 19_200)

        // stall-for 0 is no stall.
        let none = try SourceHarness(ToneSource.type, ["stall-at": .number(0.5)])
        #expect(none.step(room: 100, at: 0.5).isMore)
    }

    @Test("cancel ends the stream at the next call")
    func cancel() throws {
        let harness = try SourceHarness(ToneSource.type, [:])
        #expect(harness.step(room: 100).isMore)
        harness.node.cancel()
        #expect(harness.step(room: 100).isFinished)
        #expect(harness.frames == 100)
        harness.node.reset()
        #expect(harness.step(room: 100).isMore)
    }
}
