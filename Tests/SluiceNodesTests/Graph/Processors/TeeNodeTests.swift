import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("TeeNode")
struct TeeNodeTests {
    @Test("every output gets every frame and every marker, whatever the room on each")
    func copies() throws {
        let input = noiseFrames(5_003, channels: 2, seed: 3)
        let markers = [
            Marker(position: 0, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 2_000, event: .discontinuity, isDiscontinuous: true),
            Marker(position: 5_003, event: .endOfStream),
        ]
        let harness = try ProcessorHarness(
            try makeProcessor(TeeNode.type, ["outputs": .integer(3)]), inputs: [.frames(rate: 48_000, channels: 2)], seed: 9)
        harness.feed(input, markers: markers)
        harness.run()
        for port in 0..<3 {
            #expect(firstDifference(harness.output(port), input) == nil, "output \(port)")
            #expect(harness.markers[port] == markers, "output \(port)")
        }
    }

    @Test("the count parameter sets the outputs; bytes are refused")
    func formats() throws {
        let tee = try makeProcessor(TeeNode.type, ["outputs": .integer(2)])
        let context = FormatContext(downstreamRate: nil, blockFrames: 256, isLive: false)
        #expect(try tee.outputFormats(for: [.frames(rate: 24_000, channels: 1)], context: context)
            == [.frames(rate: 24_000, channels: 1), .frames(rate: 24_000, channels: 1)])
        #expect(throws: FormatMismatch(input: 0, required: .medium(.frames))) {
            _ = try tee.outputFormats(for: [.bytes(PCMFormat(.s16le, channels: 1, sampleRate: 24_000))], context: context)
        }
        #expect(TeeNode.type.descriptor.outputCountParameter == "outputs")
    }
}
