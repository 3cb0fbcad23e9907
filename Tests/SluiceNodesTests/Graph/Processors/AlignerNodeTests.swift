import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("AlignerNode")
struct AlignerNodeTests {
    static let format = PCMFormat(.s24le, channels: 2, sampleRate: 48_000)

    @Test("descriptor: bytes in, frames out, no parameters")
    func descriptor() {
        let descriptor = AlignerNode.type.descriptor
        #expect(descriptor.typeName == "aligner")
        #expect(descriptor.kind == .processor)
        #expect(descriptor.inputs.map(\.name) == ["in"])
        #expect(descriptor.inputs.map(\.medium) == [.bytes])
        #expect(descriptor.outputs.map(\.name) == ["out"])
        #expect(descriptor.outputs.map(\.medium) == [.frames])
        #expect(descriptor.parameters.isEmpty)
    }

    @Test("output format: frames at the byte format's rate and channels; frames in are refused")
    func formats() throws {
        let node = AlignerNode()
        let mono = PCMFormat(.s16le, channels: 1, sampleRate: 24_000)
        #expect(try node.outputFormats(for: [.bytes(mono)], context: ProcessorHarness.offline) == [.frames(rate: 24_000, channels: 1)])
        #expect(try node.outputFormats(for: [.bytes(Self.format)], context: ProcessorHarness.offline) == [.frames(rate: 48_000, channels: 2)])
        #expect(throws: FormatMismatch(input: 0, required: .medium(.bytes))) {
            try node.outputFormats(for: [.frames(rate: 24_000, channels: 1)], context: ProcessorHarness.offline)
        }
    }

    /// The same bytes and markers through `Aligner` directly, each stretch between markers in
    /// one call.
    private func alignDirectly(_ bytes: [UInt8], markers: [Marker]) -> (frames: [Float], markers: [Marker], dropped: Int) {
        let aligner = Aligner(inputFormat: Self.format)
        var frames: [Float] = []
        var emitted: [Marker] = []
        var output = [Float](repeating: 0, count: bytes.count)
        var position = 0
        func feed(to end: Int) {
            while position < end {
                let (consumed, produced) = bytes.withUnsafeBytes { raw in
                    output.withUnsafeMutableBufferPointer { out in
                        aligner.process(UnsafeRawBufferPointer(rebasing: raw[position..<end]), into: out)
                    }
                }
                frames += output[0..<(produced * Self.format.channels)]
                position += consumed
            }
        }
        for marker in markers {
            feed(to: marker.position)
            var batch = MarkerBatch()
            aligner.receive(marker, emitting: &batch)
            for index in 0..<batch.count { emitted.append(batch[index]) }
        }
        feed(to: bytes.count)
        return (frames, emitted, aligner.droppedPartialFrames)
    }

    @Test("frames and restamped markers equal Aligner's; partial frames at boundaries are dropped and reported", arguments: 1...4 as ClosedRange<UInt64>)
    func matchesAligner(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        // 1000 frames and 4 stray bytes, then 500 frames and 2 stray bytes (6 bytes a frame).
        let bytes = (0..<9_006).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let markers = [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
            Marker(position: 6_004, event: .utteranceEnd(UtteranceID(0))),
            Marker(position: 6_004, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 6_604, event: .textSpan(TextSpan(utterance: UtteranceID(1), start: 3, end: 9))),
            Marker(position: 9_006, event: .endOfStream),
        ]
        let node = AlignerNode()
        let harness = try ProcessorHarness(node, inputs: [.bytes(Self.format)], seed: seed, inputBlocks: 1...700, outputBlocks: 0...300)
        harness.feed(bytes: bytes, markers: markers)
        harness.run()

        let expected = alignDirectly(bytes, markers: markers)
        #expect(harness.frameCount() == 1_500)
        #expect(firstDifference(harness.output(), expected.frames) == nil)
        #expect(harness.output()[0] == SampleConversion.decode(bytes, as: .s24le))
        #expect(harness.markers[0] == expected.markers)
        #expect(harness.markers[0].map(\.position) == [0, 1_000, 1_000, 1_100, 1_500])

        var report = NodeReport()
        node.report(into: &report)
        #expect(report.droppedPartialFrames == 2)
        #expect(expected.dropped == 2)
        #expect(report.counters["dropped-bytes"] == 6)
        node.deactivate()
        var afterDeactivate = NodeReport()
        node.report(into: &afterDeactivate)
        #expect(afterDeactivate == report, "the counters outlive deactivate")
    }

    @Test("reset forgets the carry and the position")
    func reset() throws {
        let node = AlignerNode()
        let mono = PCMFormat(.s16le, channels: 1, sampleRate: 24_000)
        let first = try ProcessorHarness(node, inputs: [.bytes(mono)])
        first.feed(bytes: [0, 0x40, 0], markers: [])  // one frame and half of the next
        first.run()
        #expect(first.output() == [0.5])
        node.reset()
        let second = try ProcessorHarness(node, inputs: [.bytes(mono)], prepares: false)
        second.feed(bytes: [0, 0xC0], markers: [Marker(position: 2, event: .endOfStream)])
        second.run()
        #expect(second.output() == [-0.5], "a stale carry would have shifted the bytes")
        #expect(second.markers[0] == [Marker(position: 1, event: .endOfStream)])
    }
}
