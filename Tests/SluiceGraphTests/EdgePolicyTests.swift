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
        frames.setPolicy(policy, keepUnits: keep, scratchUnits: 64)
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
        // what the edge keeps, so the reader skips the 50 oldest: a marker among them is reached.
        writer.push(Marker(position: 1_210, event: .discontinuity))
        #expect(Self.write(writer, from: 1_200, count: 150) == 150)
        reader.skipOldest()
        #expect(writer.drops.load(ordering: .relaxed) == 50)
        #expect(reader.takeReachedMarker()?.position == 1_210)
        #expect(Self.readAll(reader) == (1_250..<1_350).map(Float.init))
    }

    @Test("drop-oldest with a reader that has stopped: once the ring itself is full, what the writer makes is dropped and counted; it never waits")
    func dropOldestReaderStopped() {
        let (writer, _) = Self.edge(.dropOldest, keep: 100, beyond: 64)
        #expect(Self.write(writer, from: 0, count: 1_000) == 1_000)
        // 164 on the ring (64 of them asked to be skipped); the rest dropped as they came.
        #expect(writer.drops.load(ordering: .relaxed) == 1_000 - 164)
        #expect(writer.skipRequests.load(ordering: .relaxed) == 64)
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
}
