import SluiceAudio
import SluiceNodes
import Testing
@_spi(TestKit) @testable import SluiceGraph

/// What a device fetches at the start of each period (`GraphCycle.periodLines`): the memory
/// the period reads, so the cache misses of a cold callback overlap instead of following each
/// other's pointers (docs/architecture.md, "Frame for frame").
@Suite struct PeriodLinesTests {
    static func address(_ object: AnyObject) -> UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
    }

    @Test("a cycle's period lines hold the cycle, the direct section, each step's slot, node, ports and parameter queue, and each playhead")
    func linesCoverWhatAPeriodReads() throws {
        let mono = StreamFormat.frames(rate: 48_000, channels: 1)
        let node = FaderNode(length: 0)
        let ports = NodePorts(inputs: [mono], outputs: [mono])
        let slot = ProcessorSlot(name: "gain", node: node, ports: ports, inputs: [], outputs: [])
        let queue = try #require(slot.parameters, "the fader has live parameters")
        let direct = DirectSection(linkChannels: [1, 1], steps: [DirectSection.Step(slot: slot, inputs: [0], outputs: [1])])
        let (_, playhead, _) = makeSinkEdge(
            rate: 48_000, channels: 1, capacityFrames: 4800, fadeFrames: 240,
            watermarkFrames: 0, eventCapacity: 16, workerWake: nil)
        let sink = NullSink()
        let cycle = GraphCycle(
            processors: [], direct: direct, captures: [],
            playbacks: [GraphCycle.Playback(name: "out", node: sink, playhead: playhead, directLink: 1)],
            latencies: [[]])

        let lines = Set(cycle.periodLines)
        for (name, object) in [
            ("cycle", cycle), ("direct section", direct), ("slot", slot), ("node", node), ("ports", ports),
            ("parameter queue", queue), ("playhead", playhead),
        ] as [(String, AnyObject)] {
            #expect(lines.contains(Self.address(object)), "the \(name) is not fetched")
        }
        // Objects larger than a line are fetched past their first: the playhead's atomics
        // span several.
        #expect(lines.contains(Self.address(playhead) + 192))
        #expect(ports.viewLines.allSatisfy(lines.contains), "the ports' views are not fetched")
        #expect(queue.periodLines.allSatisfy(lines.contains), "the queue's ring position is not fetched")
        // Nothing a period does not read: a processor between rings would add its own lines.
        #expect(cycle.periodLines.count == 5 + direct.periodLines.count + 4)

        // Once warmed up the fader's frame kernel makes its periods: its ports are not read.
        try node.prepare(PrepareContext(inputFormats: [mono], outputFormats: [mono], maximumUnits: 4096, blockFrames: 256))
        cycle.warmUp(blockFrames: 256)
        let kernelLines = Set(cycle.periodLines)
        #expect(kernelLines.contains(Self.address(node)) && kernelLines.contains(Self.address(slot)))
        #expect(!kernelLines.contains(Self.address(ports)), "a kernel's period does not read the ports")
        #expect(queue.periodLines.allSatisfy(kernelLines.contains), "a waiting change still looks at the queue")
    }
}
