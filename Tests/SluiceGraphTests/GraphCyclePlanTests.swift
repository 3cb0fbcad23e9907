import Glibc
import SluiceAudio
import SluiceNodes
import Testing
@_spi(TestKit) @testable import SluiceGraph

/// The two shapes a live graph usually has, which a device runs with one call a period
/// (`GraphCycle.Plan`): what each call makes must be what the steps make.
@Suite struct GraphCyclePlanTests {
    static let mono = StreamFormat.frames(rate: 48_000, channels: 1)

    static func playhead(channels: Int = 1) -> (FrameEdgeWriter, Playhead) {
        let (writer, playhead, _) = makeSinkEdge(
            rate: 48_000, channels: channels, capacityFrames: 4800, fadeFrames: 240,
            watermarkFrames: 0, eventCapacity: 16, workerWake: nil)
        return (writer, playhead)
    }

    /// `jack.source -> fader -> jack.sink` as the runtime builds it: links 0 (the source's) and
    /// 1 (the sink's), the fader between.
    static func chain(gain: Float) throws -> (GraphCycle, Playhead) {
        let node = FaderNode(length: 0, gain: gain)
        try node.prepare(PrepareContext(inputFormats: [mono], outputFormats: [mono], maximumUnits: 4096, blockFrames: 256))
        let slot = ProcessorSlot(name: "gain", node: node, ports: NodePorts(inputs: [mono], outputs: [mono]), inputs: [], outputs: [])
        return chain(DirectSection(linkChannels: [1, 1], steps: [DirectSection.Step(slot: slot, inputs: [0], outputs: [1])]), sinkLink: 1)
    }

    /// A chain cycle of `direct`: the source on link 0, the sink on `sinkLink`.
    static func chain(_ direct: DirectSection, sinkLink: Int) -> (GraphCycle, Playhead) {
        let (_, playhead) = Self.playhead()
        let cycle = GraphCycle(
            processors: [], direct: direct,
            captures: [GraphCycle.Capture(name: "in", node: NullSink(), writer: nil, channels: 1, directLink: 0)],
            playbacks: [GraphCycle.Playback(name: "out", node: NullSink(), playhead: playhead, directLink: sinkLink)],
            latencies: [[0]])
        return (cycle, playhead)
    }

    @Test("one mono sink on its ring, and a mono source through frame-for-frame nodes to a mono sink, have plans; more sinks or channels take the steps")
    func plansByShape() throws {
        func ringCycle(_ playheads: [Playhead]) -> GraphCycle {
            GraphCycle(
                processors: [], direct: nil, captures: [],
                playbacks: playheads.map { GraphCycle.Playback(name: "out", node: NullSink(), playhead: $0, directLink: nil) },
                latencies: playheads.map { _ in [] })
        }
        let ring = ringCycle([Self.playhead().1])
        #expect(ring.plan == .ringSink)
        // Its period reads the cycle and the playhead, not the steps' records.
        #expect(ring.periodLines.count == 2 + 4)
        #expect(ringCycle([Self.playhead(channels: 2).1]).plan == .general)
        #expect(ringCycle([Self.playhead().1, Self.playhead().1]).plan == .general)
        #expect(try Self.chain(gain: 1).0.plan == .chain)
    }

    @Test("a chain's period is the nodes' output, played in place in the sink's buffer")
    func chainPeriod() throws {
        let (cycle, playhead) = try Self.chain(gain: 0.5)
        cycle.warmUp(blockFrames: 256)
        var input: [Float] = (0..<256).map { sin(Float($0) * 0.05) }
        var output = [Float](repeating: 9, count: 256)
        let finished = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { cycle.runChain(from: source.baseAddress!, into: $0.baseAddress!, frames: 256) }
        }
        #expect(!finished)
        #expect(output == input.map { $0 * 0.5 })
        #expect(playhead.playedFrames == 256)
        #expect(cycle.periods == 1)
        // The source's buffer is only read.
        #expect(input == (0..<256).map { sin(Float($0) * 0.05) })
    }

    /// `jack.source -> fader -> fader -> jack.sink`: links 0 (the source's), 1 (between the
    /// faders, a buffer of the section's own) and 2 (the sink's). `ramp` is the second
    /// fader's, in seconds.
    static func twoFaders(_ first: Float, _ second: Float, ramp: Double = 0) throws -> (GraphCycle, Playhead, ProcessorSlot) {
        func slot(_ name: String, _ node: FaderNode) throws -> ProcessorSlot {
            try node.prepare(PrepareContext(inputFormats: [mono], outputFormats: [mono], maximumUnits: 4096, blockFrames: 256))
            return ProcessorSlot(name: name, node: node, ports: NodePorts(inputs: [mono], outputs: [mono]), inputs: [], outputs: [])
        }
        let last = try slot("b", FaderNode(length: 0, gain: second, ramp: ramp))
        let direct = DirectSection(
            linkChannels: [1, 1, 1],
            steps: [
                DirectSection.Step(slot: try slot("a", FaderNode(length: 0, gain: first)), inputs: [0], outputs: [1]),
                DirectSection.Step(slot: last, inputs: [1], outputs: [2]),
            ])
        let (cycle, playhead) = chain(direct, sinkLink: 2)
        return (cycle, playhead, last)
    }

    @Test("a chain of kernels runs them one after another, each into the next one's input")
    func chainOfKernels() throws {
        let (cycle, _, _) = try Self.twoFaders(0.5, 0.25)
        cycle.warmUp(blockFrames: 256)
        #expect(cycle.kernelChainLength == 2)
        var input: [Float] = (0..<256).map { cos(Float($0) * 0.03) }
        var output = [Float](repeating: 9, count: 256)
        input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { _ = cycle.runChain(from: source.baseAddress!, into: $0.baseAddress!, frames: 256) }
        }
        #expect(output == input.map { $0 * 0.5 * 0.25 })
    }

    @Test("a parameter change for a node in the middle of a chain of kernels takes the steps from that node on, and lands where the steps land it")
    func kernelChainFallsBackMidway() throws {
        // The same chain twice: one run by `runChain`, one by the direct section's steps alone.
        let (cycle, _, slot) = try Self.twoFaders(0.5, 1, ramp: 0.002)
        let (reference, _, referenceSlot) = try Self.twoFaders(0.5, 1, ramp: 0.002)
        cycle.warmUp(blockFrames: 256)
        reference.warmUp(blockFrames: 256)
        let direct = try #require(reference.direct)
        // The second fader's gain falls to 0.25 from frame 300, inside the second period, over
        // a 96-frame ramp.
        for queue in [slot.parameters, referenceSlot.parameters] {
            #expect(try #require(queue).send(parameter: FaderNode.gainParameter, value: 0.25, atFrame: 300) != nil)
        }
        var made: [Float] = []
        var expected: [Float] = []
        for period in 0..<4 {
            var input: [Float] = (0..<256).map { sin(Float(period * 256 + $0) * 0.02) }
            var output = [Float](repeating: 9, count: 256)
            var steps = [Float](repeating: 9, count: 256)
            input.withUnsafeMutableBufferPointer { source in
                output.withUnsafeMutableBufferPointer { _ = cycle.runChain(from: source.baseAddress!, into: $0.baseAddress!, frames: 256) }
                steps.withUnsafeMutableBufferPointer { target in
                    direct.bind(0, to: source.baseAddress!)
                    _ = direct.bindOutput(2, to: target.baseAddress!)
                    direct.process(frames: 256)
                    direct.unbind(2)
                }
            }
            made += output
            expected += steps
        }
        #expect(made == expected)
        // The change did land: a ramp from 0.5 down to 0.125 of the input, then the new level.
        let last = (768..<1024).map { sin(Float($0) * 0.02) * 0.125 }
        #expect(Array(made[768...]) == last)
        #expect(made[299] == sin(Float(299) * 0.02) * 0.5)
    }

    @Test("a change timed far ahead holds back none sent after it: an untimed one applies at once, one timed earlier at its frame")
    func farTimedChangeHoldsBackNothing() throws {
        let (cycle, _, slot) = try Self.twoFaders(1, 1)
        cycle.warmUp(blockFrames: 256)
        let queue = try #require(slot.parameters)
        // An hour ahead at 48 kHz, then "now", then frame 600.
        #expect(queue.send(parameter: FaderNode.gainParameter, value: 0, atFrame: 172_800_000) != nil)
        #expect(queue.send(parameter: FaderNode.gainParameter, value: 0.5, atFrame: 0) != nil)
        #expect(queue.send(parameter: FaderNode.gainParameter, value: 0.25, atFrame: 600) != nil)
        var made: [Float] = []
        for _ in 0..<4 {
            var input = [Float](repeating: 1, count: 256)
            var output = [Float](repeating: 9, count: 256)
            input.withUnsafeMutableBufferPointer { source in
                output.withUnsafeMutableBufferPointer { _ = cycle.runChain(from: source.baseAddress!, into: $0.baseAddress!, frames: 256) }
            }
            made += output
        }
        #expect(Array(made[0..<600]) == [Float](repeating: 0.5, count: 600))
        #expect(Array(made[600...]) == [Float](repeating: 0.25, count: 424))
        #expect(queue.acknowledgedFrame(of: 2) == 0)
        #expect(queue.acknowledgedFrame(of: 3) == 600)
        #expect(queue.acknowledgedFrame(of: 1) == nil, "the change an hour ahead still waits")
    }

    @Test("a chain with no node between source and sink copies the source's buffer into the sink's")
    func chainWithoutNodes() throws {
        let (cycle, _) = Self.chain(DirectSection(linkChannels: [1], steps: []), sinkLink: 0)
        #expect(cycle.plan == .chain)
        var input: [Float] = (0..<128).map { Float($0) }
        var output = [Float](repeating: 9, count: 128)
        input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { _ = cycle.runChain(from: source.baseAddress!, into: $0.baseAddress!, frames: 128) }
        }
        #expect(output == input)
    }

    @Test("a ring sink's period is its playhead's render")
    func ringSinkPeriod() {
        let (writer, playhead) = Self.playhead()
        let cycle = GraphCycle(
            processors: [], direct: nil, captures: [],
            playbacks: [GraphCycle.Playback(name: "out", node: NullSink(), playhead: playhead, directLink: nil)],
            latencies: [[]])
        let region = writer.writableRegion()
        region.base!.assumingMemoryBound(to: Float.self).update(repeating: 0.25, count: 300)
        writer.commit(300)
        var output = [Float](repeating: 9, count: 256)
        output.withUnsafeMutableBufferPointer { _ = cycle.renderRingSink(into: $0.baseAddress!, frames: 256) }
        #expect(output == [Float](repeating: 0.25, count: 256))
        #expect(playhead.playedFrames == 256)
        #expect(cycle.periods == 1)
    }
}
