import Foundation
import SluiceAudio
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("Crossfader")
struct CrossfaderTests {
    static let duration = 4_800  // 0.1 s at 48 kHz

    private func run(
        _ utterances: [[Float]], channels: Int = 1, discontinuous: Bool = false, seed: UInt64 = 1,
        duration: Int = CrossfaderTests.duration
    ) -> (result: NodeDriver.Result, node: Crossfader) {
        let node = Crossfader(channels: channels, durationFrames: duration)
        var input: [Float] = []
        var markers: [Marker] = []
        for (index, utterance) in utterances.enumerated() {
            let id = UtteranceID(UInt32(index))
            let start = input.count / channels
            markers.append(Marker(position: start, event: .utteranceStart(id), isDiscontinuous: discontinuous))
            input += utterance
            markers.append(Marker(position: input.count / channels, event: .utteranceEnd(id), isDiscontinuous: discontinuous))
        }
        markers.append(Marker(position: input.count / channels, event: .endOfStream))
        let driver = NodeDriver(channels: channels, seed: seed)
        let result = driver.run(
            input: input, markers: markers,
            process: { node.process($0, into: $1, emitting: &$2) },
            receive: { node.receive($0, emitting: &$1) })
        return (result, node)
    }

    @Test("the curves are equal-power: outgoing² + incoming² = 1")
    func equalPowerCurves() {
        let node = Crossfader(channels: 1, durationFrames: Self.duration)
        for length in [1, 7, 1_000, Self.duration] {
            for index in 0..<length {
                let (outgoing, incoming) = node.gains(at: index, of: length)
                #expect(abs(outgoing * outgoing + incoming * incoming - 1) < 1e-6)
            }
        }
    }

    @Test("uncorrelated noise keeps its energy through the crossfade, within ±0.5 dB", arguments: 1...5 as ClosedRange<UInt64>)
    func energy(seed: UInt64) {
        let a = Signals.noise(count: 9_600, seed: seed)
        let b = Signals.noise(count: 9_600, seed: seed + 100)
        let (result, node) = run([a, b])
        #expect(node.crossfades == 1)
        let region = result.output[4_800..<9_600]
        let reference = (Signals.power(a[4_800...]) + Signals.power(b[..<4_800])) / 2
        let change = 10 * log10(Signals.power(region) / reference)
        #expect(abs(change) <= 0.5, "energy changed by \(change) dB")
    }

    @Test("frames outside the crossfade are bit-identical, and the output is shorter by the overlap")
    func interiorUntouched() {
        let a = Signals.noise(count: 9_600, seed: 1)
        let b = Signals.noise(count: 9_600, seed: 2)
        let (result, _) = run([a, b])
        #expect(result.output.count == 19_200 - Self.duration)
        #expect(firstDifference(Array(result.output[..<4_800]), Array(a[..<4_800])) == nil)
        #expect(firstDifference(Array(result.output[9_600...]), Array(b[4_800...])) == nil)
    }

    @Test("the crossfade is the curve-weighted sum of tail and head")
    func mixedSamples() {
        let a = [Float](repeating: 0.5, count: 6_000)
        let b = [Float](repeating: -0.25, count: 6_000)
        let (result, node) = run([a, b])
        for index in stride(from: 0, to: Self.duration, by: 97) {
            let (outgoing, incoming) = node.gains(at: index, of: Self.duration)
            let expected = 0.5 * outgoing + -0.25 * incoming
            #expect(result.output[1_200 + index] == expected)
        }
    }

    @Test("boundary markers move to where the crossfade begins")
    func markers() {
        let a = Signals.noise(count: 9_600, seed: 1)
        let b = Signals.noise(count: 9_600, seed: 2)
        let (result, _) = run([a, b])
        let summary = result.markers.map { "\($0.event)@\($0.position)" }
        #expect(summary == [
            "utteranceStart(#0)@0", "utteranceEnd(#0)@4800", "utteranceStart(#1)@4800",
            "utteranceEnd(#1)@14400", "endOfStream@14400",
        ])
    }

    @Test("the output does not depend on the block split")
    func splitIndependence() {
        let utterances = [Signals.noise(count: 7_000, seed: 1), Signals.noise(count: 3_000, seed: 2), Signals.noise(count: 8_000, seed: 3)]
        let reference = run(utterances, seed: 1).result.output
        for seed in 2...4 as ClosedRange<UInt64> {
            #expect(firstDifference(run(utterances, seed: seed).result.output, reference) == nil)
        }
    }

    @Test("discontinuous boundaries are not blended")
    func discontinuous() {
        let a = Signals.noise(count: 9_600, seed: 1)
        let b = Signals.noise(count: 9_600, seed: 2)
        let (result, node) = run([a, b], discontinuous: true)
        #expect(node.crossfades == 0)
        #expect(firstDifference(result.output, a + b) == nil)
    }

    @Test("an utterance shorter than the crossfade still joins smoothly and loses nothing")
    func shortUtterance() {
        let utterances = [Signals.noise(count: 9_600, seed: 1), Signals.noise(count: 1_000, seed: 2), Signals.noise(count: 9_600, seed: 3)]
        let (result, node) = run(utterances, channels: 1)
        #expect(node.crossfades == 2)
        // The short utterance is absorbed whole into the held tail: the overlaps are 1 000 and 4 800.
        #expect(result.output.count == 20_200 - 1_000 - Self.duration)
        #expect(result.output.allSatisfy { $0.isFinite && abs($0) <= 1 })
        let positions = result.markers.map(\.position)
        #expect(positions == positions.sorted())
    }

    @Test("stereo frames are blended per channel")
    func stereo() {
        let a = interleave([[Float](repeating: 0.5, count: 6_000), [Float](repeating: -0.5, count: 6_000)])
        let b = interleave([[Float](repeating: 0.5, count: 6_000), [Float](repeating: -0.5, count: 6_000)])
        let (result, _) = run([a, b], channels: 2)
        #expect(result.output.count == 2 * (12_000 - Self.duration))
        // Equal halves through an equal-power fade rise by at most √2 at the centre.
        let peak = result.output.map(abs).max() ?? 0
        #expect(peak <= 0.5 * Float(2).squareRoot() + 1e-6)
        #expect(channel(0, of: result.output, channels: 2).allSatisfy { $0 > 0 })
        #expect(channel(1, of: result.output, channels: 2).allSatisfy { $0 < 0 })
    }

    @Test("audio after an utterance end with no new start is released unblended")
    func audioWithoutStart() {
        let node = Crossfader(channels: 1, durationFrames: 100)
        let first = Signals.noise(count: 500, seed: 1)
        let gap = Signals.noise(count: 300, seed: 2)
        let markers = [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
            Marker(position: 500, event: .utteranceEnd(UtteranceID(0))),
            Marker(position: 800, event: .endOfStream),
        ]
        let result = NodeDriver(channels: 1).run(
            input: first + gap, markers: markers,
            process: { node.process($0, into: $1, emitting: &$2) },
            receive: { node.receive($0, emitting: &$1) })
        #expect(firstDifference(result.output, first + gap) == nil)
        #expect(result.markers.map(\.position) == [0, 500, 800])
    }

    @Test("flush releases the held tail at once")
    func flush() {
        let node = Crossfader(channels: 1, durationFrames: 100)
        let input = Signals.noise(count: 250, seed: 1)
        var output = [Float](repeating: 0, count: 1_000)
        var batch = MarkerBatch()
        let first = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { node.process(source, into: $0, emitting: &batch) }
        }
        #expect(first.framesConsumed == 250)
        #expect(first.framesProduced == 150)
        node.flush(emitting: &batch)
        let second = [Float]().withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                node.process(source, into: UnsafeMutableBufferPointer(rebasing: target[150...]), emitting: &batch)
            }
        }
        #expect(second.framesProduced == 100)
        #expect(firstDifference(Array(output[..<250]), input) == nil)
    }

    @Test("a shorter crossfade set live blends only the newest frames of the tail; the older ones pass unchanged and the delay stays")
    func shorterCrossfade() {
        let a = Signals.noise(count: 9_600, seed: 11)
        let b = Signals.noise(count: 9_600, seed: 12)
        let node = Crossfader(channels: 1, durationFrames: Self.duration)
        node.crossfadeFrames = 1_200
        #expect(node.latencyFrames == Self.duration)
        node.crossfadeFrames = 99_999
        #expect(node.crossfadeFrames == Self.duration, "clamped to the starting duration")
        node.crossfadeFrames = 1_200
        let markers = [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))), Marker(position: 9_600, event: .utteranceEnd(UtteranceID(0))),
            Marker(position: 9_600, event: .utteranceStart(UtteranceID(1))), Marker(position: 19_200, event: .utteranceEnd(UtteranceID(1))),
            Marker(position: 19_200, event: .endOfStream),
        ]
        let result = NodeDriver(channels: 1, seed: 3).run(
            input: a + b, markers: markers,
            process: { node.process($0, into: $1, emitting: &$2) }, receive: { node.receive($0, emitting: &$1) })
        #expect(node.crossfades == 1)
        let output = result.output
        #expect(output.count == 19_200 - 1_200, "shorter by the overlap")
        #expect(Array(output[..<8_400]) == Array(a[..<8_400]), "the tail before the crossfade is unchanged")
        for index in 0..<1_200 {
            let (outgoing, incoming) = node.gains(at: index, of: 1_200)
            let expected = a[8_400 + index] * outgoing + b[index] * incoming
            #expect(abs(output[8_400 + index] - expected) < 1e-6, "frame \(index) of the crossfade")
        }
        #expect(Array(output[9_600...]) == Array(b[1_200...]))
    }
}
