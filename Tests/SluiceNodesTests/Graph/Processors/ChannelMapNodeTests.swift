import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("ChannelMapNode")
struct ChannelMapNodeTests {
    /// `input` (interleaved, `inputChannels` wide) through a channel-map node made from
    /// `values`, with markers.
    private func map(
        _ input: [Float], inputChannels: Int, _ values: [String: ParameterValue], markers: [Marker] = [], seed: UInt64 = 1
    ) throws -> ProcessorHarness {
        let harness = try ProcessorHarness(
            try makeProcessor(ChannelMapNode.type, values), inputs: [.frames(rate: 48_000, channels: inputChannels)], seed: seed)
        harness.feed(input, markers: markers)
        harness.run()
        return harness
    }

    @Test("descriptor: channels 1…64, default 2; routing optional; gain and pan live")
    func descriptor() throws {
        let descriptor = ChannelMapNode.type.descriptor
        #expect(descriptor.typeName == "channel-map")
        #expect(descriptor.parameters.map(\.name) == ["channels", "routing", "gain", "pan"])
        #expect(descriptor.parameters.filter(\.isLive).map(\.name) == ["gain", "pan"])
        #expect(descriptor.parameters[ChannelMapNode.gainParameter].name == "gain")
        #expect(descriptor.parameters[ChannelMapNode.panParameter].name == "pan")
        let channels = try #require(descriptor.parameter(named: "channels"))
        #expect(channels.type == .integer(1...64))
        #expect(channels.defaultValue == .integer(2))
        let routing = try #require(descriptor.parameter(named: "routing"))
        #expect(routing.type == .list)
        #expect(routing.defaultValue == nil)
        #expect(!routing.isRequired)
    }

    @Test("output format: the input's rate with `channels` channels")
    func formats() throws {
        let context = ProcessorHarness.offline
        #expect(try ChannelMapNode(channels: 2).outputFormats(for: [.frames(rate: 22_050, channels: 1)], context: context) == [.frames(rate: 22_050, channels: 2)])
        #expect(try ChannelMapNode(channels: 1).outputFormats(for: [.frames(rate: 22_050, channels: 6)], context: context) == [.frames(rate: 22_050, channels: 1)])
        #expect(try ChannelMapNode(channels: 2).outputFormats(for: [.frames(rate: 22_050, channels: 2)], context: context) == [.frames(rate: 22_050, channels: 2)])
        #expect(try ChannelMapNode(channels: 3, routing: [1, nil, 0]).outputFormats(for: [.frames(rate: 8_000, channels: 2)], context: context) == [.frames(rate: 8_000, channels: 3)])
        #expect(throws: FormatMismatch(input: 0, required: .medium(.frames))) {
            try ChannelMapNode().outputFormats(for: [.bytes(PCMFormat(.s16le, channels: 1, sampleRate: 24_000))], context: context)
        }
    }

    @Test("without a routing, counts other than mono, equal or to-mono are refused")
    func ambiguousRefused() {
        #expect(throws: FormatMismatch(input: 0, required: .other(
            "a mono or 6-channel input, or a `routing` list giving each of the 6 output channels an input channel (0 is the first) or -"))) {
            try ChannelMapNode(channels: 6).outputFormats(for: [.frames(rate: 48_000, channels: 2)], context: ProcessorHarness.offline)
        }
        #expect(throws: FormatMismatch(input: 0, required: .other(
            "a mono or stereo input, or a `routing` list giving each of the 2 output channels an input channel (0 is the first) or -"))) {
            try ChannelMapNode(channels: 2).outputFormats(for: [.frames(rate: 48_000, channels: 6)], context: ProcessorHarness.offline)
        }
    }

    @Test("a routing reading a channel the input lacks is refused")
    func routingOutOfRange() {
        #expect(throws: FormatMismatch(input: 0, required: .other("an input with at least 3 channels (the routing reads channel 2)"))) {
            try ChannelMapNode(channels: 2, routing: [0, 2]).outputFormats(for: [.frames(rate: 48_000, channels: 2)], context: ProcessorHarness.offline)
        }
    }

    @Test("routings the factory refuses name the parameter")
    func badRouting() throws {
        let count = #expect(throws: NodeCreationError.self) {
            try makeProcessor(ChannelMapNode.type, ["channels": .integer(2), "routing": .list(["0", "1", "1"])])
        }
        #expect(count?.parameter == "routing")
        for entry in ["x", "-1", "1.5", ""] {
            let bad = #expect(throws: NodeCreationError.self, "entry '\(entry)'") {
                try makeProcessor(ChannelMapNode.type, ["channels": .integer(2), "routing": .list(["0", entry])])
            }
            #expect(bad?.parameter == "routing")
        }
        let node = try #require(try makeProcessor(ChannelMapNode.type, ["channels": .integer(3), "routing": .list([" 1", "-", "0 "])]) as? ChannelMapNode)
        #expect(node.routing == [1, nil, 0])
        #expect(node.outputChannels == 3)
    }

    @Test("mono to stereo (the default) copies the one channel to both, exactly")
    func monoToStereo() throws {
        let input = noiseFrames(3_000, seed: 1)
        let harness = try map(input, inputChannels: 1, [:])
        #expect(harness.outputFormats == [.frames(rate: 48_000, channels: 2)])
        #expect(firstDifference(harness.output(), interleave([input, input])) == nil)
    }

    @Test("stereo to mono averages as ChannelMap.stereoToMono does")
    func stereoToMono() throws {
        let input = noiseFrames(3_000, channels: 2, seed: 2)
        let harness = try map(input, inputChannels: 2, ["channels": .integer(1)])
        var expected = [Float](repeating: 0, count: 3_000)
        let reference = ChannelMap.stereoToMono()
        input.withUnsafeBufferPointer { source in
            expected.withUnsafeMutableBufferPointer { target in
                reference.process(source.baseAddress!, frames: 3_000, into: target.baseAddress!)
            }
        }
        #expect(firstDifference(harness.output(), expected) == nil)
        #expect(harness.output()[7] == (input[14] * 0.5 + input[15] * 0.5))
    }

    @Test("N to mono averages all channels")
    func manyToMono() throws {
        let input = noiseFrames(2_000, channels: 3, seed: 3)
        let harness = try map(input, inputChannels: 3, ["channels": .integer(1)])
        let third: Float = 1 / 3
        let expected = (0..<2_000).map { frame in
            var sum: Float = 0
            for channel in 0..<3 { sum += third * input[frame * 3 + channel] }
            return sum
        }
        #expect(firstDifference(harness.output(), expected) == nil)
    }

    @Test("equal channel counts pass bit-identical")
    func passThrough() throws {
        let input = noiseFrames(2_500, channels: 2, seed: 4)
        let harness = try map(input, inputChannels: 2, [:])
        #expect(firstDifference(harness.output(), input) == nil)
    }

    @Test("a routing copies the named channels and silences -")
    func routing() throws {
        let left = Signals.noise(count: 2_000, seed: 5)
        let right = Signals.noise(count: 2_000, seed: 6)
        let harness = try map(
            interleave([left, right]), inputChannels: 2, ["channels": .integer(3), "routing": .list(["1", "-", "0"])])
        #expect(firstDifference(harness.output(), interleave([right, [Float](repeating: 0, count: 2_000), left])) == nil)
    }

    @Test("markers pass through at the same positions")
    func markers() throws {
        let markers = [
            Marker(position: 0, event: .utteranceStart(UtteranceID(3))),
            Marker(position: 777, event: .discontinuity, isDiscontinuous: true),
            Marker(position: 1_000, event: .endOfStream),
        ]
        let harness = try map(noiseFrames(1_000, seed: 7), inputChannels: 1, [:], markers: markers)
        #expect(harness.frameCount() == 1_000)
        #expect(harness.markers[0] == markers)
    }

    @Test("live pan and gain on mono to stereo: each side moves in a straight line over 20 ms to its balance, without allocating")
    func livePanAndGain() throws {
        let node = ChannelMapNode(channels: 2)
        let harness = try ProcessorHarness(node, inputs: [.frames(rate: 48_000, channels: 1)])
        harness.feed(Array(repeating: 0.5, count: 100))
        harness.run()
        #expect(harness.output() == Array(repeating: 0.5, count: 200), "unity: an exact copy")
        harness.countsAllocations = true
        node.apply(ParameterChange(parameter: ChannelMapNode.panParameter, value: -0.5))  // right × 0.5
        harness.feed(Array(repeating: 0.5, count: 2_000))
        harness.run()
        var output = Array(harness.output().dropFirst(200))
        // 960 frames of ramp at 48 kHz: the right side halfway there after 480.
        #expect(output.enumerated().allSatisfy { $0.offset % 2 == 1 || $0.element == 0.5 }, "the left stays")
        let halfway: Float = 0.5 - 0.25 * 480 / 960
        #expect(abs(output[2 * 479 + 1] - halfway) < 1e-5, "\(output[2 * 479 + 1])")
        #expect(output[2 * 959 + 1] == 0.25 && output[2 * 1_999 + 1] == 0.25)
        node.apply(ParameterChange(parameter: ChannelMapNode.gainParameter, value: 2))
        node.apply(ParameterChange(parameter: ChannelMapNode.panParameter, value: 1e300))  // clamped to 1: left silent
        harness.feed(Array(repeating: 0.5, count: 1_000))
        harness.run()
        output = Array(harness.output().dropFirst(200 + 4_000))
        #expect(output[2 * 999] == 0 && output[2 * 999 + 1] == 1, "\(output[2 * 999]), \(output[2 * 999 + 1])")
        #expect(harness.allocations == 0)
        #expect(node.gain == 2 && node.pan == 1)
    }

    @Test("`pan` on a map that is not stereo is refused, naming the fix")
    func panNeedsStereo() {
        var parameters = NodeParameters(["channels": .integer(3), "gain": .number(1), "pan": .number(0.5), "routing": .list(["0", "0", "0"])])
        parameters.given = ["channels", "pan", "routing"]
        #expect(throws: NodeCreationError("`pan` balances a stereo output, and this map has 3 channels", fix: "leave `pan` out, or set `channels: 2`", parameter: "pan")) {
            _ = try ChannelMapNode.type.make(parameters)
        }
    }
}
