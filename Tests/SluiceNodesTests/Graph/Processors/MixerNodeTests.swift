import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("MixerNode")
struct MixerNodeTests {
    static let stereo = StreamFormat.frames(rate: 48_000, channels: 2)

    /// Σ gainᵢ × inputᵢ in the order `Mixer` adds, so Float rounding matches exactly. Missing
    /// samples (a shorter input) count as silence.
    static func mix(_ inputs: [[Float]], gains: [Float], samples: Int) -> [Float] {
        (0..<samples).map { index in
            var sum: Float = 0
            for (input, gain) in zip(inputs, gains) {
                sum += (index < input.count ? input[index] : 0) * gain
            }
            return sum
        }
    }

    @Test("descriptor: inputs and gains; ports in1…in16 of which in1 is required")
    func descriptor() throws {
        let descriptor = MixerNode.type.descriptor
        #expect(descriptor.typeName == "mixer")
        #expect(descriptor.inputCountParameter == "inputs")
        #expect(descriptor.inputs.map(\.name) == (1...16).map { "in\($0)" })
        #expect(descriptor.inputs.map(\.isRequired) == [true] + [Bool](repeating: false, count: 15))
        #expect(descriptor.inputs.allSatisfy { $0.medium == .frames })
        #expect(descriptor.outputs.map(\.name) == ["out"])
        #expect(descriptor.parameters.map(\.name) == ["inputs", "gains", "ramp"] + (1...16).map { "level\($0)" })
        #expect(descriptor.parameters.filter(\.isLive).map(\.name) == (1...16).map { "level\($0)" })
        let inputs = try #require(descriptor.parameter(named: "inputs"))
        #expect(inputs.type == .integer(1...16))
        #expect(inputs.defaultValue == .integer(2))
        let gains = try #require(descriptor.parameter(named: "gains"))
        #expect(gains.type == .list)
        #expect(gains.defaultValue == nil)
        #expect(descriptor.summary.contains("first `inputs`"))
    }

    @Test("the factory reads inputs and gains; missing gains are 1")
    func factory() throws {
        let node = try #require(try makeProcessor(MixerNode.type, ["inputs": .integer(3), "gains": .list(["0.5", " 2 "])]) as? MixerNode)
        #expect(node.inputCount == 3)
        #expect(node.gains == [0.5, 2, 1])
        let defaults = try #require(try makeProcessor(MixerNode.type) as? MixerNode)
        #expect(defaults.gains == [1, 1])
    }

    @Test("gains the factory refuses name the parameter")
    func badGains() {
        let tooMany = #expect(throws: NodeCreationError.self) {
            try makeProcessor(MixerNode.type, ["inputs": .integer(2), "gains": .list(["1", "1", "1"])])
        }
        #expect(tooMany?.parameter == "gains")
        let notNumber = #expect(throws: NodeCreationError.self) {
            try makeProcessor(MixerNode.type, ["gains": .list(["1", "loud"])])
        }
        #expect(notNumber?.parameter == "gains")
        #expect(notNumber?.message == "gain 'loud' is not a number")
    }

    @Test("every input must match in1's rate and channels")
    func formats() throws {
        let node = MixerNode(inputs: 3)
        #expect(try node.outputFormats(for: [Self.stereo, Self.stereo, Self.stereo], context: ProcessorHarness.offline) == [Self.stereo])
        #expect(throws: FormatMismatch(input: 1, required: .sampleRate(48_000))) {
            try node.outputFormats(for: [Self.stereo, .frames(rate: 44_100, channels: 2), Self.stereo], context: ProcessorHarness.offline)
        }
        #expect(throws: FormatMismatch(input: 2, required: .channels(2))) {
            try node.outputFormats(for: [Self.stereo, Self.stereo, .frames(rate: 48_000, channels: 1)], context: ProcessorHarness.offline)
        }
        let bytes = StreamFormat.bytes(PCMFormat(.s16le, channels: 2, sampleRate: 48_000))
        #expect(throws: FormatMismatch(input: 1, required: .medium(.frames))) {
            try node.outputFormats(for: [Self.stereo, bytes, Self.stereo], context: ProcessorHarness.offline)
        }
        #expect(throws: FormatMismatch(input: 0, required: .medium(.frames))) {
            try node.outputFormats(for: [bytes, Self.stereo, Self.stereo], context: ProcessorHarness.offline)
        }
    }

    @Test("the mix is the gain-weighted sum; markers of every input pass at their positions; one end of stream", arguments: 1...4 as ClosedRange<UInt64>)
    func exactMix(seed: UInt64) throws {
        let inputs = (0..<3).map { noiseFrames(3_000, channels: 2, seed: seed * 10 + UInt64($0)) }
        let gains: [Float] = [0.5, 2, -1]
        let node = MixerNode(inputs: 3, gains: gains)
        let harness = try ProcessorHarness(node, inputs: [Self.stereo, Self.stereo, Self.stereo], seed: seed, outputBlocks: 0...700)
        let end = Marker(position: 3_000, event: .endOfStream)
        harness.feed(inputs[0], markers: [Marker(position: 0, event: .utteranceStart(UtteranceID(1))), end], input: 0)
        harness.feed(inputs[1], markers: [Marker(position: 1_000, event: .textSpan(TextSpan(utterance: UtteranceID(2), start: 0, end: 4))), end], input: 1)
        harness.feed(inputs[2], markers: [Marker(position: 2_000, event: .discontinuity), end], input: 2)
        harness.run()
        #expect(firstDifference(harness.output(), Self.mix(inputs, gains: gains, samples: 6_000)) == nil)
        #expect(harness.markers[0] == [
            Marker(position: 0, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 1_000, event: .textSpan(TextSpan(utterance: UtteranceID(2), start: 0, end: 4))),
            Marker(position: 2_000, event: .discontinuity),
            end,
        ])
    }

    @Test("a live level change moves one input's gain from the next frame in a straight line over `ramp`")
    func liveLevel() throws {
        let node = MixerNode(inputs: 2, gains: [1, 1], ramp: 0.001)  // 48 frames at 48 kHz
        let mono = StreamFormat.frames(rate: 48_000, channels: 1)
        let harness = try ProcessorHarness(node, inputs: [mono, mono], inputBlocks: 100...100, outputBlocks: 100...100)
        harness.feed([Float](repeating: 1, count: 100), input: 0)
        harness.feed([Float](repeating: 0.5, count: 100), input: 1)
        harness.run()
        harness.countsAllocations = true
        // level2: the second input's gain, to 0.
        node.apply(ParameterChange(parameter: MixerNode.type.descriptor.parameters.firstIndex { $0.name == "level2" }!, value: 0))
        harness.feed([Float](repeating: 1, count: 100), input: 0)
        harness.feed([Float](repeating: 0.5, count: 100), input: 1)
        harness.run()
        let output = harness.output()
        #expect(output.prefix(100).allSatisfy { $0 == 1.5 })
        for index in 0..<48 {
            let gain: Float = 1 - Float(index + 1) / 48
            let expected: Float = 1 + 0.5 * gain
            #expect(abs(output[100 + index] - expected) < 1e-6, "frame \(index)")
        }
        #expect(output.suffix(52).allSatisfy { $0 == 1 })
        #expect(harness.allocations == 0)
    }

    @Test("an ended input counts as silence; the end of stream waits for every input")
    func endOnlyWhenAllEnded() throws {
        let short = noiseFrames(1_000, channels: 2, seed: 1)
        let long = noiseFrames(3_000, channels: 2, seed: 2)
        // Output room up to 512 frames against 256 frames of silence: ended inputs mix in chunks.
        let harness = try ProcessorHarness(MixerNode(inputs: 2), inputs: [Self.stereo, Self.stereo], seed: 8, maximumUnits: 64)
        harness.feed(short, markers: [Marker(position: 1_000, event: .endOfStream)], input: 0)
        harness.feed(long, input: 1)
        harness.run()
        #expect(harness.frameCount() == 3_000, "the shorter input does not stop the mix")
        #expect(firstDifference(harness.output(), Self.mix([short, long], gains: [1, 1], samples: 6_000)) == nil)
        #expect(harness.markers[0].isEmpty, "in2 has not ended")

        harness.feed([], markers: [Marker(position: 3_000, event: .endOfStream)], input: 1)
        harness.run()
        #expect(harness.markers[0] == [Marker(position: 3_000, event: .endOfStream)])
    }

    @Test("inputs that have not ended move in lockstep: the mix waits for the slower one")
    func lockstep() throws {
        let harness = try ProcessorHarness(MixerNode(inputs: 2), inputs: [Self.stereo, Self.stereo])
        harness.feed(noiseFrames(3_000, channels: 2, seed: 1), input: 0)
        harness.feed(noiseFrames(1_000, channels: 2, seed: 2), input: 1)
        harness.run()
        #expect(harness.frameCount() == 1_000)
    }

    @Test("the end of stream on in2 first, then in1: emitted once, after in1's")
    func endOrder() throws {
        let harness = try ProcessorHarness(MixerNode(inputs: 2), inputs: [Self.stereo, Self.stereo])
        harness.feed(noiseFrames(500, channels: 2, seed: 1), markers: [Marker(position: 500, event: .endOfStream)], input: 1)
        harness.feed(noiseFrames(2_000, channels: 2, seed: 2), markers: [
            Marker(position: 1_500, event: .utteranceEnd(UtteranceID(4))),
            Marker(position: 2_000, event: .endOfStream),
        ], input: 0)
        harness.run()
        #expect(harness.frameCount() == 2_000)
        #expect(harness.markers[0] == [
            Marker(position: 1_500, event: .utteranceEnd(UtteranceID(4))),
            Marker(position: 2_000, event: .endOfStream),
        ])
    }

    @Test("one input: a copy scaled by its gain")
    func single() throws {
        let input = noiseFrames(2_000, seed: 5)
        let harness = try ProcessorHarness(MixerNode(inputs: 1, gains: [0.25]), inputs: [.frames(rate: 16_000, channels: 1)])
        harness.feed(input, markers: [Marker(position: 2_000, event: .endOfStream)])
        harness.run()
        #expect(firstDifference(harness.output(), Self.mix([input], gains: [0.25], samples: 2_000)) == nil)
        #expect(harness.markers[0] == [Marker(position: 2_000, event: .endOfStream)])
    }
}
