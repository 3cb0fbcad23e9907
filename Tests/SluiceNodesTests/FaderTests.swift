import SluiceAudio
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("Fader")
struct FaderTests {
    static let fade = Fader.defaultFadeLength

    private func run(
        _ input: [Float], channels: Int = 1, markers extra: [Marker] = [], fadeLength: Int = FaderTests.fade,
        fades: (in: Int, out: Int)? = nil, seed: UInt64 = 1
    ) -> (NodeDriver.Result, Fader) {
        let node = Fader(channels: channels, fadeLength: fadeLength)
        if let fades { node.setFadeLengths(in: fades.in, out: fades.out) }
        let end = Marker(position: input.count / channels, event: .endOfStream)
        let result = NodeDriver(channels: channels, seed: seed).run(
            input: input, markers: extra + [end],
            process: { input, output, _ in node.process(input, into: output) },
            receive: { node.receive($0, emitting: &$1) })
        return (result, node)
    }

    private func largestStep(_ samples: [Float]) -> Float {
        zip(samples, samples.dropFirst()).map { abs($1 - $0) }.max() ?? 0
    }

    @Test("a stream fades in at its start and out at its end; the interior is bit-identical")
    func edges() {
        let input = Signals.noise(count: 10_000, seed: 3)
        let (result, _) = run(input)
        #expect(result.output.count == input.count)
        #expect(firstDifference(Array(result.output[Self.fade..<(10_000 - Self.fade)]), Array(input[Self.fade..<(10_000 - Self.fade)])) == nil)
        #expect(abs(result.output[0]) < abs(input[0]) * 0.01 + 1e-9)
        #expect(abs(result.output[9_999]) < abs(input[9_999]) * 0.01 + 1e-9)
    }

    @Test("no sample-to-sample step exceeds what the fade curve allows")
    func stepBound() {
        let (result, node) = run([Float](repeating: 1, count: 4_000))
        // The signal before and after the stream is silence, so include those edges.
        let steps = largestStep([0] + result.output + [0])
        #expect(steps <= node.steepestFadeStep + 1e-6)
        #expect(node.steepestFadeStep < 2.0 / Float(Self.fade))
        #expect(result.output[Self.fade..<(4_000 - Self.fade)].allSatisfy { $0 == 1 })
    }

    @Test("a discontinuity fades out before it and in after it")
    func discontinuity() {
        let input = [Float](repeating: 1, count: 6_000)
        let (result, node) = run(input, markers: [Marker(position: 3_000, event: .discontinuity)])
        #expect(result.output[2_999] < 0.01)
        #expect(result.output[3_000] < 0.01)
        #expect(result.output[2_700] == 1)
        #expect(result.output[3_300] == 1)
        #expect(largestStep([0] + result.output + [0]) <= node.steepestFadeStep + 1e-6)
        #expect(result.markers.map(\.position) == [3_000, 6_000])
    }

    @Test("utterance boundaries fade only when flagged discontinuous")
    func flaggedBoundaries() {
        let input = [Float](repeating: 1, count: 6_000)
        let plain = [Marker(position: 3_000, event: .utteranceEnd(UtteranceID(1))), Marker(position: 3_000, event: .utteranceStart(UtteranceID(2)))]
        let (untouched, _) = run(input, markers: plain)
        #expect(untouched.output[2_999] == 1 && untouched.output[3_000] == 1)
        let flagged = plain.map { Marker(position: $0.position, event: $0.event, isDiscontinuous: true) }
        let (faded, _) = run(input, markers: flagged)
        #expect(faded.output[2_999] < 0.01 && faded.output[3_000] < 0.01)
    }

    @Test("cancel fades out within one fade length and drops everything after")
    func cancel() {
        let node = Fader(channels: 2, fadeLength: Self.fade)
        let input = [Float](repeating: 0.8, count: 2 * 5_000)
        var output = [Float](repeating: 0, count: 2 * 6_000)
        let before = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { node.process(source, into: $0) }
        }
        #expect(before.framesConsumed == 5_000)
        #expect(before.framesProduced == 5_000 - Self.fade)
        node.cancel()
        let after = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                node.process(source, into: UnsafeMutableBufferPointer(rebasing: target[(2 * before.framesProduced)...]))
            }
        }
        #expect(after.framesConsumed == 5_000)  // taken and dropped
        #expect(after.framesProduced == Self.fade)
        let total = before.framesProduced + after.framesProduced
        let tail = Array(output[(2 * (total - Self.fade))..<(2 * total)])
        #expect(tail.last! < 0.01)
        #expect(largestStep(channel(0, of: tail, channels: 2) + [0]) <= 0.8 * node.steepestFadeStep + 1e-6)
        #expect(node.isCancelled)
    }

    @Test("with no fade, frames pass bit-identical, as many as the output holds; after a cancel none pass")
    func noFadePassesFramesUntilCancelled() {
        let node = Fader(channels: 2, fadeLength: 0)
        let input = Signals.noise(count: 2 * 1_000, seed: 3)
        var output = [Float](repeating: 0, count: 2 * 600)
        let first = input.withUnsafeBufferPointer { source in output.withUnsafeMutableBufferPointer { node.process(source, into: $0) } }
        #expect(first.framesConsumed == 600 && first.framesProduced == 600)
        #expect(output == Array(input[0..<1_200]))
        node.cancel()
        output = [Float](repeating: 7, count: 2 * 600)
        let after = input.withUnsafeBufferPointer { source in output.withUnsafeMutableBufferPointer { node.process(source, into: $0) } }
        #expect(after.framesConsumed == 1_000 && after.framesProduced == 0)  // taken and dropped
        #expect(output.allSatisfy { $0 == 7 })
        #expect(node.framesProduced == 600)
    }

    @Test("gain changes ramp in a straight line and land exactly")
    func gainRamp() {
        let node = Fader(channels: 1, fadeLength: 0)
        let input = [Float](repeating: 1, count: 3_000)
        var output = [Float](repeating: 0, count: 3_000)
        node.setGain(0.5, rampFrames: 1_000)
        _ = input.withUnsafeBufferPointer { source in output.withUnsafeMutableBufferPointer { node.process(source, into: $0) } }
        #expect(largestStep([1] + output) <= 0.5 / 1_000 + 1e-6)
        #expect(output[999] == 0.5)
        #expect(output[1_000...].allSatisfy { $0 == 0.5 })
        #expect(node.gain == 0.5)
    }

    @Test("a stream shorter than the fade is faded at both ends and kept whole")
    func shortStream() {
        let (result, _) = run([Float](repeating: 1, count: 100))
        #expect(result.output.count == 100)
        #expect(result.output.first! < 0.05)
        #expect(result.output.last! < 0.05)
        #expect(result.output.max()! > 0.9)
    }

    @Test("the output does not depend on the block split")
    func splitIndependence() {
        let input = Signals.noise(count: 8_000, seed: 8)
        let markers = [Marker(position: 2_000, event: .discontinuity)]
        let reference = run(input, markers: markers, seed: 1).0.output
        for seed in 2...4 as ClosedRange<UInt64> {
            #expect(firstDifference(run(input, markers: markers, seed: seed).0.output, reference) == nil)
        }
    }

    @Test("shorter fades: in over `in` frames after each break, out over the last `out` before it; the rest untouched, the delay still the look-ahead")
    func shorterFades() {
        let input = [Float](repeating: 1, count: 6_000)
        let (result, node) = run(input, markers: [Marker(position: 3_000, event: .discontinuity)], fades: (in: 64, out: 128))
        let output = result.output
        #expect(output.count == 6_000)
        #expect(output[0] < 0.01 && output[63] < 1 && output[64...2_871].allSatisfy { $0 == 1 })
        #expect(output[2_872] < 1 && output[2_999] < 0.01)
        #expect(output[3_000] < 0.01 && output[3_063] < 1 && output[3_064...5_871].allSatisfy { $0 == 1 })
        #expect(output[5_872] < 1 && output[5_999] < 0.01)
        // The curve squeezed to 64 frames is four times as steep as over the look-ahead's 256.
        #expect(largestStep([0] + output + [0]) <= node.steepestFadeStep * Float(Self.fade) / 64 + 1e-6)
        #expect(result.markers.map(\.position) == [3_000, 6_000])
        #expect(node.latencyFrames == Self.fade)
    }

    @Test("lengths are clamped to the look-ahead; 0 cuts without a fade")
    func fadeLengthsClamped() {
        let node = Fader(channels: 1, fadeLength: Self.fade)
        node.setFadeLengths(in: 10_000, out: -5)
        #expect(node.fadeInLength == Self.fade && node.fadeOutLength == 0)
        let (result, _) = run([Float](repeating: 1, count: 2_000), fades: (in: 0, out: 0))
        #expect(result.output.allSatisfy { $0 == 1 })
    }

    @Test("a new fade-in length changed during a fade-in leaves that fade as it was and shapes the next")
    func fadeChangeWaitsForTheNextBreak() {
        let input = [Float](repeating: 1, count: 4_000)
        func play(changing: Bool) -> [Float] {
            let node = Fader(channels: 1, fadeLength: Self.fade)
            var output = [Float](repeating: 0, count: 8_000)
            var produced = 0
            var batch = MarkerBatch()
            output.withUnsafeMutableBufferPointer { out in
                input.withUnsafeBufferPointer { source in
                    // The first 300 frames: 44 of them leave, partway up the fade-in.
                    produced += node.process(UnsafeBufferPointer(rebasing: source[0..<300]), into: UnsafeMutableBufferPointer(rebasing: out[produced...])).framesProduced
                    if changing { node.setFadeLengths(in: 16, out: Self.fade) }
                    produced += node.process(UnsafeBufferPointer(rebasing: source[300...]), into: UnsafeMutableBufferPointer(rebasing: out[produced...])).framesProduced
                    node.receive(Marker(position: 4_000, event: .discontinuity), emitting: &batch)
                    produced += node.process(UnsafeBufferPointer(rebasing: source[0..<0]), into: UnsafeMutableBufferPointer(rebasing: out[produced...])).framesProduced
                    produced += node.process(source, into: UnsafeMutableBufferPointer(rebasing: out[produced...])).framesProduced
                }
            }
            return Array(output[0..<produced])
        }
        let unchanged = play(changing: false), changed = play(changing: true)
        #expect(changed.count == unchanged.count && changed.count == 8_000 - Self.fade)
        #expect(firstDifference(Array(changed[0..<4_000]), Array(unchanged[0..<4_000])) == nil)
        #expect(changed[4_000] < 0.05 && changed[4_015] < 1 && changed[4_016] == 1)
        #expect(unchanged[4_016] < 1)
    }
}
