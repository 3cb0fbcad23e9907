import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("CrossfaderNode")
struct CrossfaderNodeTests {
    static let format = StreamFormat.frames(rate: 48_000, channels: 1)

    /// Utterances back to back, each bracketed by start and end markers, then the end of the
    /// stream.
    static func stream(_ utterances: [[Float]], channels: Int = 1, discontinuousFrom: Int = .max) -> (input: [Float], markers: [Marker]) {
        var input: [Float] = []
        var markers: [Marker] = []
        for (index, utterance) in utterances.enumerated() {
            let id = UtteranceID(UInt32(index))
            let broken = index >= discontinuousFrom
            markers.append(Marker(position: input.count / channels, event: .utteranceStart(id), isDiscontinuous: broken))
            input += utterance
            markers.append(Marker(position: input.count / channels, event: .utteranceEnd(id)))
        }
        markers.append(Marker(position: input.count / channels, event: .endOfStream))
        return (input, markers)
    }

    @Test("descriptor: duration in seconds, 0…1, default 0.1")
    func descriptor() throws {
        let descriptor = CrossfaderNode.type.descriptor
        #expect(descriptor.typeName == "crossfader")
        #expect(descriptor.inputs.map(\.medium) == [.frames])
        #expect(descriptor.outputs.map(\.medium) == [.frames])
        #expect(descriptor.parameters.map(\.name) == ["duration"])
        let duration = try #require(descriptor.parameter(named: "duration"))
        #expect(duration.type == .number(0...1))
        #expect(duration.defaultValue == .number(0.1))
        #expect(duration.unit == "s")
        let node = try #require(try makeProcessor(CrossfaderNode.type, ["duration": .number(0.25)]) as? CrossfaderNode)
        #expect(node.duration == 0.25)
    }

    @Test("formats pass through; bytes are refused")
    func formats() throws {
        let node = CrossfaderNode()
        #expect(try node.outputFormats(for: [.frames(rate: 22_050, channels: 2)], context: ProcessorHarness.offline) == [.frames(rate: 22_050, channels: 2)])
        #expect(throws: FormatMismatch(input: 0, required: .medium(.frames))) {
            try node.outputFormats(for: [.bytes(PCMFormat(.s16le, channels: 1, sampleRate: 24_000))], context: ProcessorHarness.offline)
        }
    }

    @Test("output and markers equal Crossfader's driven directly", arguments: 1...4 as ClosedRange<UInt64>)
    func matchesCrossfader(seed: UInt64) throws {
        let channels = 2
        let utterances = (0..<4).map { noiseFrames([7_000, 3_100, 900, 6_000][$0], channels: channels, seed: seed * 10 + UInt64($0)) }
        let (input, markers) = Self.stream(utterances, channels: channels, discontinuousFrom: 3)
        let node = CrossfaderNode(duration: 0.05)
        let harness = try ProcessorHarness(node, inputs: [.frames(rate: 48_000, channels: channels)], seed: seed)
        harness.feed(input, markers: markers)
        harness.run()

        let crossfader = Crossfader(channels: channels, durationFrames: 2_400)
        let expected = NodeDriver(channels: channels, seed: seed + 50).run(
            input: input, markers: markers,
            process: { crossfader.process($0, into: $1, emitting: &$2) },
            receive: { crossfader.receive($0, emitting: &$1) })
        #expect(firstDifference(harness.output(), expected.output) == nil)
        #expect(harness.markers[0] == expected.markers)
        // Two continuous joins: 2400 frames overlap, then 900 (the third utterance is that short);
        // the fourth starts discontinuously.
        #expect(crossfader.crossfades == 2)
        #expect(harness.frameCount() == 17_000 - 2_400 - 900)

        var report = NodeReport()
        node.report(into: &report)
        #expect(report.counters["crossfades"] == 2)
    }

    @Test("duration is rounded to frames at the input rate")
    func durationFrames() throws {
        let node = CrossfaderNode(duration: 0.0123)
        #expect(node.durationFrames(rate: 44_100) == 542)  // 542.43
        let (input, markers) = Self.stream([noiseFrames(2_000, seed: 1), noiseFrames(2_000, seed: 2)])
        let harness = try ProcessorHarness(node, inputs: [.frames(rate: 44_100, channels: 1)])
        harness.feed(input, markers: markers)
        harness.run()
        #expect(harness.frameCount() == 4_000 - 542)
    }

    @Test("drain releases the held tail unchanged and the held utterance end; later audio passes")
    func drain() throws {
        let first = noiseFrames(10_000, seed: 3)
        let harness = try ProcessorHarness(CrossfaderNode(), inputs: [Self.format], seed: 5)
        harness.feed(first, markers: [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
            Marker(position: 10_000, event: .utteranceEnd(UtteranceID(0))),
        ])
        harness.run()
        #expect(harness.frameCount() == 10_000 - 4_800, "the tail waits to learn what follows")
        #expect(harness.markers[0] == [Marker(position: 0, event: .utteranceStart(UtteranceID(0)))])

        harness.drain()
        #expect(firstDifference(harness.output(), first) == nil)
        #expect(harness.markers[0].last == Marker(position: 10_000, event: .utteranceEnd(UtteranceID(0))))

        harness.drain()
        #expect(harness.frameCount() == 10_000, "a second drain has nothing to release")
        #expect(harness.markers[0].count == 2)

        let second = noiseFrames(3_000, seed: 4)
        harness.feed(second, markers: [
            Marker(position: 10_000, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 13_000, event: .endOfStream),
        ])
        harness.run()
        #expect(firstDifference(harness.output(), first + second) == nil, "no crossfade into a released tail")
        #expect(harness.markers[0].suffix(2) == [
            Marker(position: 10_000, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 13_000, event: .endOfStream),
        ])
    }
}
