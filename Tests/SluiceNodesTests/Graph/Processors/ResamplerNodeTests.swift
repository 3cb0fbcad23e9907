import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("ResamplerNode")
struct ResamplerNodeTests {
    static func soxrRefusal(_ quality: String) -> FormatMismatch {
        FormatMismatch(
            input: 0,
            required: .parameter(
                name: "quality",
                problem: "quality '\(quality)' is for offline rendering: libsoxr allocates while it runs",
                fix: "use auto, a speex-N or a libsamplerate quality (sinc-medium, …) in a live graph"))
    }

    static func context(downstream: Int?, live: Bool = false) -> FormatContext {
        FormatContext(downstreamRate: downstream, blockFrames: 256, isLive: live)
    }

    @Test("descriptor: quality and rate, with their defaults and ranges")
    func descriptor() throws {
        let descriptor = ResamplerNode.type.descriptor
        #expect(descriptor.typeName == "resampler")
        #expect(descriptor.inputs.map(\.medium) == [.frames])
        #expect(descriptor.outputs.map(\.medium) == [.frames])
        #expect(descriptor.parameters.map(\.name) == ["quality", "rate"])
        let quality = try #require(descriptor.parameter(named: "quality"))
        #expect(quality.type == .choice(["auto"] + ResamplerQuality.allCases.map(\.rawValue)))
        #expect(quality.defaultValue == .string("auto"))
        let rate = try #require(descriptor.parameter(named: "rate"))
        #expect(rate.type == .rate(1_000...192_000))
        #expect(rate.defaultValue == .auto)
        #expect(rate.unit == "Hz")
    }

    @Test("the factory reads quality and rate")
    func factory() throws {
        let node = try #require(try makeProcessor(ResamplerNode.type, ["quality": .string("soxr-hq"), "rate": .integer(44_100)]) as? ResamplerNode)
        #expect(node.quality == .soxrHigh)
        #expect(node.requestedRate == 44_100)
        let defaults = try #require(try makeProcessor(ResamplerNode.type) as? ResamplerNode)
        #expect(defaults.requestedQuality == nil)
        #expect(defaults.requestedRate == nil)
    }

    @Test("quality auto is soxr-hq in a render and speex-6 when a device drives the graph; a named quality stays")
    func autoQuality() throws {
        let input: [StreamFormat] = [.frames(rate: 24_000, channels: 1)]
        let automatic = ResamplerNode()
        _ = try automatic.outputFormats(for: input, context: Self.context(downstream: 48_000))
        #expect(automatic.quality == .soxrHigh)
        _ = try automatic.outputFormats(for: input, context: Self.context(downstream: 48_000, live: true))
        #expect(automatic.quality == .speex6)
        let named = ResamplerNode(quality: .sincFastest)
        _ = try named.outputFormats(for: input, context: Self.context(downstream: 48_000, live: true))
        #expect(named.quality == .sincFastest)
    }

    @Test("rate auto follows the sink downstream, or keeps the input's rate; a given rate wins")
    func autoRate() throws {
        let input: [StreamFormat] = [.frames(rate: 24_000, channels: 2)]
        let auto = ResamplerNode()
        #expect(try auto.outputFormats(for: input, context: Self.context(downstream: 48_000)) == [.frames(rate: 48_000, channels: 2)])
        #expect(try auto.outputFormats(for: input, context: Self.context(downstream: 16_000)) == [.frames(rate: 16_000, channels: 2)])
        #expect(try auto.outputFormats(for: input, context: Self.context(downstream: nil)) == [.frames(rate: 24_000, channels: 2)])
        let fixed = ResamplerNode(rate: 44_100)
        #expect(try fixed.outputFormats(for: input, context: Self.context(downstream: 48_000)) == [.frames(rate: 44_100, channels: 2)])
    }

    @Test("bytes and rates past the resampler's limit are refused")
    func refusedInputs() {
        let node = ResamplerNode()
        #expect(throws: FormatMismatch(input: 0, required: .medium(.frames))) {
            try node.outputFormats(for: [.bytes(PCMFormat(.s16le, channels: 1, sampleRate: 24_000))], context: Self.context(downstream: 48_000))
        }
        #expect(throws: FormatMismatch(input: 0, required: .other("a sink rate within 1…192000 Hz (the resampler's limit)"))) {
            try node.outputFormats(for: [.frames(rate: 48_000, channels: 1)], context: Self.context(downstream: 384_000))
        }
    }

    @Test("soxr qualities are refused in live graphs and accepted offline", arguments: ResamplerQuality.soxr)
    func soxrRefusedLive(quality: ResamplerQuality) throws {
        let node = ResamplerNode(quality: quality)
        let input: [StreamFormat] = [.frames(rate: 24_000, channels: 1)]
        #expect(throws: Self.soxrRefusal(quality.rawValue)) {
            try node.outputFormats(for: input, context: Self.context(downstream: 48_000, live: true))
        }
        #expect(try node.outputFormats(for: input, context: Self.context(downstream: 48_000)) == [.frames(rate: 48_000, channels: 1)])
    }

    @Test("libsamplerate qualities run live", arguments: ResamplerQuality.libsamplerate)
    func libsamplerateLive(quality: ResamplerQuality) throws {
        let node = ResamplerNode(quality: quality)
        #expect(try node.outputFormats(for: [.frames(rate: 24_000, channels: 1)], context: Self.context(downstream: 48_000, live: true))
            == [.frames(rate: 48_000, channels: 1)])
    }

    static let cases: [(Int, Int, ResamplerQuality)] = [
        (24_000, 48_000, .sincMedium), (44_100, 48_000, .sincFastest), (48_000, 22_050, .linear),
        (24_000, 48_000, .soxrHigh), (48_000, 48_000, .sincMedium),
    ]

    @Test("output and markers equal Resampler's driven directly", arguments: cases)
    func matchesResampler(inputRate: Int, outputRate: Int, quality: ResamplerQuality) throws {
        let channels = 2
        let frames = 9_001
        let input = noiseFrames(frames, channels: channels, seed: 7)
        let markers = [
            Marker(position: 0, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 1_234, event: .textSpan(TextSpan(utterance: UtteranceID(1), start: 0, end: 5))),
            Marker(position: 5_001, event: .utteranceEnd(UtteranceID(1))),
            Marker(position: 5_001, event: .discontinuity),
            Marker(position: frames, event: .endOfStream),
        ]
        let node = ResamplerNode(quality: quality)
        let harness = try ProcessorHarness(
            node, inputs: [.frames(rate: inputRate, channels: channels)], context: Self.context(downstream: outputRate),
            inputBlocks: 1...400, outputBlocks: 0...300)
        harness.feed(input, markers: markers)
        harness.run()

        let resampler = try Resampler(channels: channels, inputRate: inputRate, outputRate: outputRate, quality: quality)
        let expected = NodeDriver(channels: channels, inputBlocks: 1...1_000, outputBlocks: 1...1_000, seed: 3).run(
            input: input, markers: markers,
            process: { input, output, _ in resampler.process(input, into: output) },
            receive: { resampler.receive($0, emitting: &$1) })

        // The discontinuity at 5 001 ends a segment: each maps on its own (rounded half up).
        func mapped(_ frames: Int) -> Int { (frames * outputRate * 2 + inputRate) / (inputRate * 2) }
        func position(_ input: Int) -> Int { input <= 5_001 ? mapped(input) : mapped(5_001) + mapped(input - 5_001) }
        #expect(harness.frameCount() == position(frames))
        #expect(firstDifference(harness.output(), expected.output) == nil)
        #expect(harness.markers[0] == expected.markers)
        #expect(harness.markers[0].map(\.position) == markers.map { position($0.position) })
    }

    @Test("after the end of the stream, calls with empty input release the tail")
    func tailAfterEndOfStream() throws {
        let input = noiseFrames(4_000, seed: 2)
        let harness = try ProcessorHarness(
            ResamplerNode(), inputs: [.frames(rate: 24_000, channels: 1)], context: Self.context(downstream: 48_000))
        harness.feed(input)
        harness.run()
        let held = 8_000 - harness.frameCount()
        #expect(held > 0, "the converter holds its filter delay while the stream may go on")
        harness.feed([], markers: [Marker(position: 4_000, event: .endOfStream)])
        harness.run()
        #expect(harness.frameCount() == 8_000)
        #expect(harness.markers[0] == [Marker(position: 8_000, event: .endOfStream)])
    }

    @Test("reset starts a fresh stream: the same input gives the same output")
    func reset() throws {
        let node = ResamplerNode()
        let input = noiseFrames(3_000, seed: 4)
        let format: [StreamFormat] = [.frames(rate: 22_050, channels: 1)]
        let end = [Marker(position: 3_000, event: .endOfStream)]
        let first = try ProcessorHarness(node, inputs: format, context: Self.context(downstream: 48_000))
        first.feed(input, markers: end)
        first.run()
        node.reset()
        let second = try ProcessorHarness(node, inputs: format, context: Self.context(downstream: 48_000), seed: 9, prepares: false)
        second.feed(input, markers: end)
        second.run()
        #expect(firstDifference(second.output(), first.output()) == nil)
        #expect(second.markers[0] == first.markers[0])
    }
}
