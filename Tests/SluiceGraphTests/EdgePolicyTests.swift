import SluiceAudio
import SluiceNodes
import SluiceTestSupport
import Testing
@_spi(TestKit) @testable import SluiceGraph

/// Links that drop when full (`when-full: drop-oldest` / `drop-newest`): what each end sees,
/// where markers land, and a `tee` whose dropping branch is never read going on regardless.
@Suite struct EdgePolicyTests {
    static let mono = StreamFormat.frames(rate: 48_000, channels: 1)

    /// A mono edge keeping `keep` frames, with room for `beyond` more, under `policy`.
    static func edge(_ policy: LinkPolicy, keep: Int, beyond: Int) -> (FrameEdgeWriter, EdgeReader) {
        let (writer, reader) = makeEdge(format: mono, capacityUnits: keep + beyond, readerWake: nil, writerWake: nil)
        let frames = writer as! FrameEdgeWriter
        // No room for a step beyond what it keeps: what each end does at the edge of it.
        frames.setPolicy(policy, keepUnits: keep, burstUnits: policy == .dropOldest ? beyond : 0, scratchUnits: 64)
        if policy == .dropOldest { reader.skipsOldest(for: writer) }
        return (frames, reader)
    }

    /// Writes frames numbered from `first` (each sample its frame's number) as the writer
    /// offers room; returns how many the writer took.
    @discardableResult
    static func write(_ writer: EdgeWriter, from first: Int, count: Int) -> Int {
        var written = 0
        while written < count {
            let region = writer.writableRegion()
            let frames = min(region.units, count - written)
            guard frames > 0, let base = region.base?.assumingMemoryBound(to: Float.self) else { break }
            for index in 0..<frames { base[index] = Float(first + written + index) }
            writer.commit(frames)
            written += frames
        }
        return written
    }

    /// Reads everything waiting: the samples, in order.
    static func readAll(_ reader: EdgeReader) -> [Float] {
        var samples: [Float] = []
        while true {
            let region = reader.readableRegion()
            guard region.units > 0, let base = region.base?.assumingMemoryBound(to: Float.self) else { return samples }
            samples += UnsafeBufferPointer(start: base, count: region.units)
            reader.release(region.units)
        }
    }

    @Test("drop-newest: once it holds what it keeps, what the writer makes is dropped and counted, never waited for; a marker of dropped audio lands where the drop is")
    func dropNewest() {
        let (writer, reader) = Self.edge(.dropNewest, keep: 100, beyond: 50)
        #expect(Self.write(writer, from: 0, count: 100) == 100)
        // Full as it counts: the writer is handed scratch, every time, and loses nothing but audio.
        #expect(Self.write(writer, from: 100, count: 300) == 300)
        #expect(writer.drops.load(ordering: .relaxed) == 300)
        #expect(writer.writtenUnits.load(ordering: .relaxed) == 400, "the writer's own count goes on")
        writer.push(Marker(position: 400, event: .endOfStream))
        #expect(Self.readAll(reader) == (0..<100).map(Float.init))
        let end = reader.takeReachedMarker()
        #expect(end?.position == 100, "the end of the stream reaches the reader where its audio stops")
        // Room again: what follows is kept, its markers moved back by what was dropped.
        #expect(Self.write(writer, from: 400, count: 10) == 10)
        writer.push(Marker(position: 405, event: .discontinuity))
        #expect(Self.readAll(reader) == (400..<410).map(Float.init))
        #expect(reader.nextMarker()?.position == 105)
    }

    @Test("drop-oldest: a reader that keeps up loses nothing; one that falls behind skips the oldest, keeping the newest, and the markers it skips over reach it")
    func dropOldest() {
        let (writer, reader) = Self.edge(.dropOldest, keep: 100, beyond: 64)
        // Keeping up: written and read in turn, far more than the edge keeps.
        for round in 0..<20 {
            #expect(Self.write(writer, from: round * 60, count: 60) == 60)
            reader.skipOldest()
            #expect(Self.readAll(reader) == (round * 60..<(round + 1) * 60).map(Float.init))
        }
        #expect(writer.drops.load(ordering: .relaxed) == 0)

        // Falling behind: 150 frames while the reader does not read. The last 50 go beyond
        // what the edge keeps, so the reader skips the 50 oldest: a marker among them is
        // reached where the reader is (it never gets the skipped frames), and one after them
        // comes 50 frames sooner in the reader's count, so a node's output positions stay
        // its input's.
        writer.push(Marker(position: 1_210, event: .discontinuity))
        writer.push(Marker(position: 1_300, event: .discontinuity))
        #expect(Self.write(writer, from: 1_200, count: 150) == 150)
        reader.skipOldest()
        #expect(writer.drops.load(ordering: .relaxed) == 50)
        #expect(reader.takeReachedMarker()?.position == 1_200)
        #expect(reader.takeReachedMarker() == nil)
        #expect(reader.nextMarker()?.position == 1_250)
        #expect(Self.readAll(reader) == (1_250..<1_350).map(Float.init))
        #expect(reader.position == 1_300)
    }

    @Test("drop-oldest with a reader that has stopped: once the ring itself is full, what the writer makes is dropped and counted; it never waits")
    func dropOldestReaderStopped() {
        let (writer, _) = Self.edge(.dropOldest, keep: 100, beyond: 64)
        #expect(Self.write(writer, from: 0, count: 1_000) == 1_000)
        // 164 on the ring (64 beyond what it keeps, for the reader to skip); the rest dropped
        // as they came.
        #expect(writer.drops.load(ordering: .relaxed) == 1_000 - 164)
    }

    @Test("a tee whose second output's link drops and is never read moves the whole stream to its first output")
    func teeGoesOn() throws {
        let node = TeeNode(outputs: 2)
        try node.prepare(PrepareContext(inputFormats: [Self.mono], outputFormats: [Self.mono, Self.mono], maximumUnits: 4_096, blockFrames: 256))
        for policy in [LinkPolicy.dropOldest, .dropNewest] {
            let (sourceWriter, sourceReader) = makeEdge(format: Self.mono, capacityUnits: 4_800, readerWake: nil, writerWake: nil)
            let (mainWriter, mainReader) = makeEdge(format: Self.mono, capacityUnits: 1_024, readerWake: nil, writerWake: nil)
            let (branchWriter, _) = Self.edge(policy, keep: 960, beyond: 1_024)
            let slot = ProcessorSlot(
                name: "split", node: node, ports: NodePorts(inputs: [Self.mono], outputs: [Self.mono, Self.mono]),
                inputs: [sourceReader], outputs: [mainWriter, branchWriter])
            var heard: [Float] = []
            for block in 0..<40 {
                Self.write(sourceWriter, from: block * 480, count: 480)
                while slot.step() {}
                heard += Self.readAll(mainReader)
            }
            #expect(heard == (0..<19_200).map(Float.init), "\(policy): the main path got all of it")
            #expect(branchWriter.drops.load(ordering: .relaxed) > 0, "\(policy)")
            // Dropping, as it runs in the cycle or on the worker, allocates nothing.
            if AllocationCounter.testsEnabled {
                let allocations = AllocationCounter.count {
                    for block in 40..<80 {
                        Self.write(sourceWriter, from: block * 480, count: 480)
                        while slot.step() {}
                        while true {
                            let waiting = mainReader.readableRegion().units
                            if waiting == 0 { break }
                            mainReader.release(waiting)
                        }
                    }
                }
                #expect(allocations == 0, "\(policy)")
            }
            node.reset()
        }
    }

    /// `ramp -> tee -> main` (a sink at twice real time), the tee's second output through a
    /// 20 ms `drop-oldest` link into `pass -> slow` (a sink at real time), run to its end.
    private func slowBranchRun(frames: Int) throws -> (live: LiveRun, main: CollectingSink, slow: CollectingSink) {
        let main = CollectingSink(pace: .realtime(speed: 2))
        let slow = CollectingSink(pace: .realtime(speed: 1))
        var registry = BuiltinNodes.registry()
        try registry.register(NodeType(RampSource.type.descriptor) { _ in RampSource(rate: 48_000, frames: frames, counting: true) })
        try registry.register(PassThrough.type)
        try registry.register(NodeType(NodeDescriptor(
            typeName: "main", kind: .sink, summary: "The main path.", inputs: [PortDescriptor("in", .frames)])) { _ in main })
        try registry.register(NodeType(NodeDescriptor(
            typeName: "slow", kind: .sink, summary: "The slow branch.", inputs: [PortDescriptor("in", .frames)])) { _ in slow })
        var description = chain(
            [("src", "ramp", [:]), ("split", "tee", ["outputs": "2"]), ("out", "main", [:])],
            playback: PlaybackSettings(strategy: .buffered, watermark: 0.05, maxBuffered: 0.2, blockFrames: 256))
        description.nodes += [NodeDeclaration(name: "branch", type: "pass", parameters: []), NodeDeclaration(name: "ear", type: "slow", parameters: [])]
        let dropping = LinkDeclaration(
            from: PortReference(node: "split", port: "out2"), to: PortReference(node: "branch"), capacity: .seconds(0.02), whenFull: .dropOldest)
        description.links += [dropping, LinkDeclaration(from: PortReference(node: "branch"), to: PortReference(node: "ear"))]
        let live = try LiveRun(graph: GraphCompiler(registry: registry, options: .init(isLive: true)).compile(description))
        _ = try live.run()
        return (live, main, slow)
    }

    @Test("a live run whose analysing branch plays at half the speed: with drop-oldest the main sink gets every frame in order, without an underrun; the branch gets the newest, in order, and the drops are counted")
    func slowBranchDoesNotHoldUpTheGraph() throws {
        let frames = 48_000
        // A run on a starved machine can underrun for want of CPU: tried again, up to three
        // times; a branch that starves itself or the main path underruns every time.
        var attempt = 0
        var run: (live: LiveRun, main: CollectingSink, slow: CollectingSink)
        repeat {
            attempt += 1
            run = try slowBranchRun(frames: frames)
        } while run.live.playheads.contains { $0.underruns > 0 } && attempt < 3
        let (live, main, slow) = run

        // Each sink plays silence until its first audio and pads its last period; every
        // sample is its frame's number from 1.
        func played(_ sink: CollectingSink) -> [Float] {
            Array(Array(sink.samples.drop { $0 == 0 }.reversed().drop { $0 == 0 }).reversed())
        }
        #expect(firstDifference(played(main), (1...frames).map(Float.init)) == nil, "the main path lost or reordered audio")
        #expect(live.playheads.map(\.underruns) == [0, 0], "neither sink ran dry: the branch keeps up with what it is given")
        let drops = live.linkDrops.first { $0.link == "split.out2 -> branch.in" }?.frames ?? 0
        #expect(drops > frames / 4, "\(live.linkDrops)")
        // What the branch heard: frames in order, each at most once, every frame made either
        // heard or dropped, ending on the newest.
        let heard = played(slow)
        #expect(zip(heard, heard.dropFirst()).allSatisfy { $0 < $1 }, "the branch heard frames out of order or twice")
        #expect(heard.count + drops == frames, "heard \(heard.count), dropped \(drops)")
        #expect(heard.last == Float(frames))
    }
}
