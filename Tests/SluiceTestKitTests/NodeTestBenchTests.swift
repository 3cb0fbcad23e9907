import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestKit
import Testing

/// The bench a node author tests with: it drives a node by the engine's rule, whatever the
/// split, and catches a node that emits a marker behind audio it already produced.
@Suite struct NodeTestBenchTests {
    static let mono = StreamFormat.frames(rate: 48_000, channels: 1)

    @Test("a fader with no fade passes its input through whatever the split, markers restamped in order",
          arguments: [UInt64(1), 2, 3])
    func passThrough(seed: UInt64) throws {
        let bench = try NodeTestBench(FaderNode(length: 0), inputs: [Self.mono], seed: seed)
        let input = (0..<5_000).map { Float($0 % 100) / 100 }
        bench.feed(input, markers: [
            Marker(position: 1_000, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 5_000, event: .endOfStream),
        ])
        bench.run()
        #expect(bench.violations.isEmpty)
        #expect(bench.output() == input)
        #expect(bench.markers[0].map(\.position) == [1_000, 5_000])
        #expect(bench.consumed() == 5_000)
    }

    @Test("a node that emits a marker behind audio it already produced is caught")
    func lateMarker() throws {
        let bench = try NodeTestBench(LateMarkerNode(), inputs: [Self.mono], inputBlocks: 100...100, outputBlocks: 100...100)
        bench.feed([Float](repeating: 0.5, count: 300), markers: [Marker(position: 200, event: .discontinuity)])
        bench.run()
        #expect(bench.violations.contains { $0.contains("emitted after") }, "\(bench.violations)")
    }
}

/// Passes audio through but stamps every marker at position 0: wrong once audio has gone out.
private final class LateMarkerNode: ProcessorNode {
    func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] { inputs }

    func process(_ io: inout ProcessIO) {
        let frames = min(io.available(input: 0), io.room(output: 0))
        let input = io.frames(input: 0), output = io.frames(output: 0)
        for index in 0..<frames { output[index] = input[index] }
        io.consume(frames, input: 0)
        io.produce(frames, output: 0)
    }

    func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        io.emit(Marker(position: 0, event: marker.event, isDiscontinuous: marker.isDiscontinuous), on: 0)
    }
}
