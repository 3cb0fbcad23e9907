import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

/// `receive`, `process` and `drain` run on the graph worker and must not touch the heap once
/// the node is prepared. Each node runs a stream once to warm up, is reset, and runs it
/// again with its own calls counted.
@Suite("Processor nodes allocate nothing while running", .enabled(if: AllocationCounter.testsEnabled))
struct ProcessorAllocationTests {
    @Test("no allocations in receive, process or drain", arguments: BuiltinProcessors.types.map(\.descriptor.typeName))
    func noAllocations(name: String) throws {
        try #require(AllocationCounter.isActive, "the allocation counter is not counting")
        let type = try #require(BuiltinProcessors.types.first { $0.descriptor.typeName == name })
        let node = try makeProcessor(type)
        let mono = StreamFormat.frames(rate: 24_000, channels: 1)
        let formats: [StreamFormat] =
            switch name {
            case "aligner": [.bytes(PCMFormat(.s16le, channels: 1, sampleRate: 24_000))]
            case "mixer": [mono, mono]
            default: [mono]
            }
        let context = FormatContext(downstreamRate: 48_000, blockFrames: 256, isLive: true)
        for round in 0..<2 {
            let harness = try ProcessorHarness(
                node, inputs: formats, context: context, seed: UInt64(round + 1), prepares: round == 0)
            harness.countsAllocations = round == 1
            for (port, format) in formats.enumerated() {
                let units = format.medium == .bytes ? 2 * 6_000 + 1 : 6_000
                let first = [
                    Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
                    Marker(position: units / 3, event: .utteranceEnd(UtteranceID(0))),
                    Marker(position: units / 3, event: .utteranceStart(UtteranceID(1))),
                    Marker(position: units / 2, event: .utteranceEnd(UtteranceID(1))),
                ]
                if format.medium == .bytes {
                    harness.feed(bytes: [UInt8](repeating: 0x21, count: units), markers: first, input: port)
                } else {
                    harness.feed(noiseFrames(units, seed: 3), markers: first, input: port)
                }
            }
            harness.run()
            harness.drain()
            for (port, format) in formats.enumerated() {
                let units = format.medium == .bytes ? 2 * 6_000 + 1 : 6_000
                let end = [Marker(position: units, event: .discontinuity), Marker(position: units, event: .endOfStream)]
                if format.medium == .bytes {
                    harness.feed(bytes: [], markers: end, input: port)
                } else {
                    harness.feed([], markers: end, input: port)
                }
            }
            harness.run()
            #expect(harness.frameCount() > 0)
            if round == 1 { #expect(harness.allocations == 0) }
            node.reset()
        }
    }
}
