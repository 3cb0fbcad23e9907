import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("FaderNode")
struct FaderNodeTests {
    static let format = StreamFormat.frames(rate: 48_000, channels: 1)

    /// `input` through `Fader` directly, with random blocks.
    static func fadeDirectly(_ input: [Float], markers: [Marker], channels: Int = 1, length: Int = 256, gain: Float = 1) -> NodeDriver.Result {
        let fader = Fader(channels: channels, fadeLength: length)
        fader.setGain(gain, rampFrames: 0)
        return NodeDriver(channels: channels, seed: 77).run(
            input: input, markers: markers,
            process: { input, output, _ in fader.process(input, into: output) },
            receive: { fader.receive($0, emitting: &$1) })
    }

    @Test("a live gain change moves from the next output frame in a straight line over `ramp`, without allocating")
    func liveGainChange() throws {
        let node = FaderNode(length: 0, gain: 1, ramp: 0.001)  // 48 frames at 48 kHz
        #expect(FaderNode.type.descriptor.parameters[FaderNode.gainParameter].name == "gain")
        #expect(FaderNode.type.descriptor.parameters[FaderNode.gainParameter].isLive)
        #expect(FaderNode.type.descriptor.parameters.filter(\.isLive).map(\.name) == ["gain", "ramp", "fade-in", "fade-out"])
        let harness = try ProcessorHarness(node, inputs: [.frames(rate: 48_000, channels: 1)])
        harness.feed(Array(repeating: 1, count: 100))
        harness.run()
        #expect(harness.frameCount() == 100)
        harness.countsAllocations = true
        node.apply(ParameterChange(parameter: FaderNode.gainParameter, value: 0.5))
        harness.feed(Array(repeating: 1, count: 100))
        harness.run()
        let output = harness.output()
        #expect(output.prefix(100).allSatisfy { $0 == 1 })
        for index in 0..<48 {
            #expect(abs(output[100 + index] - (1 - 0.5 * Float(index + 1) / 48)) < 1e-6, "frame \(index) of the ramp")
        }
        #expect(output.suffix(52).allSatisfy { $0 == 0.5 })
        #expect(harness.allocations == 0)
    }

    @Test("fade lengths are live, clamped to the look-ahead; NaN and infinities are ignored")
    func liveFadeLengths() throws {
        let node = FaderNode(length: 64, fadeIn: 32)
        _ = try ProcessorHarness(node, inputs: [.frames(rate: 48_000, channels: 1)])
        #expect(node.currentFadeLengths.in == 32 && node.currentFadeLengths.out == 64)
        node.apply(ParameterChange(parameter: FaderNode.fadeOutParameter, value: 16))
        node.apply(ParameterChange(parameter: FaderNode.fadeInParameter, value: 1_000))
        #expect(node.currentFadeLengths.in == 64 && node.currentFadeLengths.out == 16)
        for value in [Double.nan, .infinity, -.infinity] {
            node.apply(ParameterChange(parameter: FaderNode.fadeOutParameter, value: value))
        }
        #expect(node.currentFadeLengths.out == 16)
    }

    @Test("`ramp` is live: a change of it times the gain changes after it")
    func liveRampChange() throws {
        let node = FaderNode(length: 0, gain: 1, ramp: 0.001)
        let harness = try ProcessorHarness(node, inputs: [.frames(rate: 48_000, channels: 1)])
        node.apply(ParameterChange(parameter: FaderNode.rampParameter, value: 0))
        node.apply(ParameterChange(parameter: FaderNode.gainParameter, value: 0.25))
        harness.feed(Array(repeating: 1, count: 10))
        harness.run()
        #expect(harness.output() == Array(repeating: 0.25, count: 10), "a ramp of 0 jumps")
        node.apply(ParameterChange(parameter: FaderNode.rampParameter, value: 0.0005))  // 24 frames
        node.apply(ParameterChange(parameter: FaderNode.gainParameter, value: 0.5))
        harness.feed(Array(repeating: 1, count: 30))
        harness.run()
        let output = Array(harness.output().dropFirst(10))
        #expect(abs(output[11] - (0.25 + 0.25 * 12 / 24)) < 1e-6, "\(output[11])")
        #expect(output[23] == 0.5 && output[29] == 0.5)
    }

    @Test("with no look-ahead the frame kernel makes what process makes: the gain, in place too; it declines once deactivated, and a look-ahead has none")
    func frameKernel() throws {
        #expect(FaderNode(length: 64).frameKernel == nil, "a look-ahead holds frames back: not frame for frame")
        let node = FaderNode(length: 0, gain: 0.5)
        _ = try ProcessorHarness(node, inputs: [Self.format])  // prepares it
        let kernel = try #require(node.frameKernel)
        let input: [Float] = (0..<256).map { Float($0) / 256 - 0.5 }
        func run(_ output: inout [Float]) -> Bool {
            input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { kernel.function(kernel.context, source.baseAddress!, $0.baseAddress!, 256) }
            }
        }
        var output = [Float](repeating: 9, count: 256)
        #expect(run(&output))
        #expect(output == input.map { $0 * 0.5 })
        // In place, as a chain whose link is its own buffer runs it.
        var buffer = input
        let inPlace = buffer.withUnsafeMutableBufferPointer { kernel.function(kernel.context, UnsafePointer($0.baseAddress!), $0.baseAddress!, 256) }
        #expect(inPlace)
        #expect(buffer == input.map { $0 * 0.5 })
        // Deactivated, it has nothing to run with: it declines and leaves the period alone.
        node.deactivate()
        var untouched = [Float](repeating: 9, count: 256)
        #expect(!run(&untouched))
        #expect(untouched.allSatisfy { $0 == 9 })
    }

    @Test("descriptor: length in frames and gain, with defaults and ranges")
    func descriptor() throws {
        let descriptor = FaderNode.type.descriptor
        #expect(descriptor.typeName == "fader")
        #expect(descriptor.parameters.map(\.name) == ["length", "gain", "ramp", "fade-in", "fade-out"])
        let length = try #require(descriptor.parameter(named: "length"))
        #expect(length.type == .integer(0...48_000))
        #expect(length.defaultValue == .integer(Fader.defaultFadeLength))
        #expect(length.unit == "frames")
        let gain = try #require(descriptor.parameter(named: "gain"))
        #expect(gain.type == .number(0...4))
        #expect(gain.defaultValue == .number(1))
        let node = try #require(try makeProcessor(FaderNode.type, ["length": .integer(64), "gain": .number(0.5)]) as? FaderNode)
        #expect(node.length == 64)
        #expect(node.gain == 0.5)
    }

    @Test("formats pass through; bytes are refused")
    func formats() throws {
        let node = FaderNode()
        #expect(try node.outputFormats(for: [.frames(rate: 44_100, channels: 6)], context: ProcessorHarness.offline) == [.frames(rate: 44_100, channels: 6)])
        #expect(throws: FormatMismatch(input: 0, required: .medium(.frames))) {
            try node.outputFormats(for: [.bytes(PCMFormat(.f32le, channels: 1, sampleRate: 24_000))], context: ProcessorHarness.offline)
        }
    }

    @Test("output and markers equal Fader's driven directly", arguments: [(Float(1), 256), (0.5, 256), (2, 1_000), (1, 0)])
    func matchesFader(gain: Float, length: Int) throws {
        let channels = 2
        let input = noiseFrames(12_000, channels: channels, seed: 11)
        let markers = [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
            Marker(position: 3_000, event: .discontinuity),
            Marker(position: 3_100, event: .utteranceEnd(UtteranceID(0)), isDiscontinuous: true),
            Marker(position: 7_000, event: .textSpan(TextSpan(utterance: UtteranceID(0), start: 1, end: 2))),
            Marker(position: 12_000, event: .endOfStream),
        ]
        let harness = try ProcessorHarness(FaderNode(length: length, gain: gain), inputs: [.frames(rate: 48_000, channels: channels)])
        harness.feed(input, markers: markers)
        harness.run()
        let expected = Self.fadeDirectly(input, markers: markers, channels: channels, length: length, gain: gain)
        #expect(harness.frameCount() == 12_000)
        #expect(firstDifference(harness.output(), expected.output) == nil)
        #expect(harness.markers[0] == expected.markers)
    }

    @Test("known samples: a constant fades in, passes untouched, and fades out at the end")
    func knownSamples() throws {
        let harness = try ProcessorHarness(FaderNode(), inputs: [Self.format])
        harness.feed([Float](repeating: 0.5, count: 2_000), markers: [Marker(position: 2_000, event: .endOfStream)])
        harness.run()
        let output = harness.output()
        #expect(output.count == 2_000)
        #expect(output[0] < 0.5 * 0.001)
        #expect(output[2_000 - 1] < 0.5 * 0.001)
        #expect(firstDifference(Array(output[256..<1_744]), [Float](repeating: 0.5, count: 1_488)) == nil)
        #expect(zip(output[..<256], output[1..<257]).allSatisfy { $0 <= $1 }, "the fade-in rises")
        #expect(zip(output[1_744..<1_999], output[1_745...]).allSatisfy { $0 >= $1 }, "the fade-out falls")
    }

    @Test("drain releases the held frames faded out, marks the break, and what follows fades in")
    func drain() throws {
        let first = noiseFrames(5_000, seed: 21)
        let second = noiseFrames(1_000, seed: 22)
        let harness = try ProcessorHarness(FaderNode(), inputs: [Self.format], seed: 3)
        harness.feed(first)
        harness.run()
        #expect(harness.frameCount() == 5_000 - 256, "the fader holds its look-ahead")

        harness.drain()
        #expect(harness.frameCount() == 5_000)
        let discontinuity = Marker(position: 5_000, event: .discontinuity, isDiscontinuous: true)
        #expect(harness.markers[0] == [discontinuity])

        harness.drain()
        #expect(harness.frameCount() == 5_000)
        #expect(harness.markers[0].count == 1, "nothing new held: a second drain does nothing")

        harness.feed(second, markers: [Marker(position: 6_000, event: .endOfStream)])
        harness.run()
        let expected = Self.fadeDirectly(first + second, markers: [discontinuity, Marker(position: 6_000, event: .endOfStream)])
        #expect(firstDifference(harness.output(), expected.output) == nil)
        #expect(harness.markers[0] == expected.markers)
        // The released tail really is faded: its last frame is nearly silent.
        #expect(abs(harness.output()[4_999]) < 0.001)
        #expect(abs(harness.output()[5_000]) < 0.001, "the audio after the break fades in")
    }

    @Test("drain before anything arrived does nothing")
    func drainEmpty() throws {
        let harness = try ProcessorHarness(FaderNode(), inputs: [Self.format])
        harness.drain()
        #expect(harness.frameCount() == 0)
        #expect(harness.markers[0].isEmpty)
    }
}
