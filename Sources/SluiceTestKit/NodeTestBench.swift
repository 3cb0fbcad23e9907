import SluiceAudio
@_spi(TestKit) import SluiceGraph

/// Drives one `ProcessorNode` the way every Sluice driver does — the graph's worker, the JACK
/// cycle, the offline renderer — for a node author's tests: the same `ProcessorSlot` between
/// real edges, so the rule "deliver the markers the input has reached, then move audio" is
/// the engine's own, not a copy.
///
/// What a test adds on top: input fed in blocks of random sizes and output room of random
/// sizes (zero included), from a seeded generator, so a node that depends on how its input is
/// cut shows it; and checks of what the node emits — markers in position order on each
/// output, and never behind audio already produced (a marker goes out before the audio it
/// describes). Violations are collected in `violations`; a test asserts it is empty.
///
/// ```swift
/// let bench = try NodeTestBench(FaderNode(length: 64), inputs: [.frames(rate: 48_000, channels: 1)])
/// bench.feed(samples, markers: [Marker(position: samples.count, event: .endOfStream)])
/// bench.run()
/// #expect(bench.violations.isEmpty)
/// #expect(bench.output() == expected)
/// ```
///
/// Threading: one thread at a time ([control-thread] for the test, [audio-thread] rules for
/// the node inside `run`).
public final class NodeTestBench {
    public let node: any ProcessorNode
    public let inputFormats: [StreamFormat]
    public let outputFormats: [StreamFormat]
    public let inputBlocks: ClosedRange<Int>
    public let outputBlocks: ClosedRange<Int>
    /// Problems found in what the node emitted, in the order found.
    public private(set) var violations: [String] = []
    /// Markers each output carried so far, in order.
    public private(set) var markers: [[Marker]]
    /// Wraps every call into the node (each step and drain): a test counts allocations in it.
    public var aroundNodeCalls: ((() -> Void) -> Void)?

    private let slot: ProcessorSlot
    private let writers: [EdgeWriter]
    private let readers: [EdgeReader]
    private var inputs: [Input]
    private var outputs: [[Float]]
    private var generator: SplitMix64

    /// - Parameters:
    ///   - context: the format context the node decides its outputs in.
    ///   - prepares: false to keep driving a node already prepared (after `reset`).
    ///   - maximumUnits: what `prepare` is told; by default the largest block offered.
    /// - Throws: the node's `FormatMismatch`, or what `prepare` throws.
    public init(
        _ node: any ProcessorNode, inputs formats: [StreamFormat],
        context: FormatContext = FormatContext(downstreamRate: nil, blockFrames: 256, isLive: false),
        seed: UInt64 = 1, inputBlocks: ClosedRange<Int> = 1...512, outputBlocks: ClosedRange<Int> = 0...512,
        prepares: Bool = true, maximumUnits: Int? = nil
    ) throws {
        precondition(inputBlocks.lowerBound >= 1 && outputBlocks.upperBound >= 1, "blocks must offer something")
        self.node = node
        inputFormats = formats
        outputFormats = try node.outputFormats(for: formats, context: context)
        precondition(outputFormats.allSatisfy { $0.medium == .frames }, "the bench collects frame outputs only")
        if prepares {
            try node.prepare(PrepareContext(
                inputFormats: formats, outputFormats: outputFormats,
                maximumUnits: maximumUnits ?? max(inputBlocks.upperBound, outputBlocks.upperBound),
                blockFrames: context.blockFrames))
        }
        self.inputBlocks = inputBlocks
        self.outputBlocks = outputBlocks
        generator = SplitMix64(seed: seed)
        var writers: [EdgeWriter] = [], readers: [EdgeReader] = []
        var inputReaders: [EdgeReader] = [], outputWriters: [EdgeWriter] = []
        for format in formats {
            let (writer, reader) = makeEdge(format: format, capacityUnits: 4 * inputBlocks.upperBound + 4_096, readerWake: nil, writerWake: nil)
            writers.append(writer)
            inputReaders.append(reader)
        }
        for format in outputFormats {
            let (writer, reader) = makeEdge(format: format, capacityUnits: 4 * outputBlocks.upperBound + 4_096, readerWake: nil, writerWake: nil)
            outputWriters.append(writer)
            readers.append(reader)
        }
        self.writers = writers
        self.readers = readers
        inputs = formats.map(Input.init)
        outputs = Array(repeating: [], count: outputFormats.count)
        markers = Array(repeating: [], count: outputFormats.count)
        slot = ProcessorSlot(
            name: "bench", node: node, ports: NodePorts(inputs: formats, outputs: outputFormats),
            inputs: inputReaders, outputs: outputWriters)
    }

    // MARK: Feeding

    /// Appends interleaved frames (and markers, positioned on this input) to frame input `port`.
    public func feed(_ samples: [Float], markers: [Marker] = [], input port: Int = 0) {
        precondition(inputFormats[port].medium == .frames, "input \(port) carries bytes")
        inputs[port].samples += samples
        inputs[port].append(markers)
    }

    /// Appends bytes (and markers at byte positions) to byte input `port`.
    public func feed(bytes: [UInt8], markers: [Marker] = [], input port: Int = 0) {
        precondition(inputFormats[port].medium == .bytes, "input \(port) carries frames")
        inputs[port].bytes += bytes
        inputs[port].append(markers)
    }

    // MARK: Running

    /// Steps until nothing moves in a few steps that offered room on every output.
    public func run() {
        var idle = 0
        var steps = 0
        while idle < 3 {
            let (moved, hadRoom) = step()
            if moved {
                idle = 0
            } else if hadRoom {
                idle += 1
            }
            steps += 1
            if steps == 2_000_000 {
                violations.append("the node kept moving for \(steps) steps")
                return
            }
        }
    }

    /// What a driver does when the sink starved and nothing waits upstream: `drain` with empty
    /// inputs, then steps until nothing moves.
    public func drain() {
        let room = Int.random(in: max(1, outputBlocks.lowerBound)...outputBlocks.upperBound, using: &generator)
        around { _ = slot.drain(outputLimit: room) }
        collect()
        run()
    }

    /// One step of the slot with a random input block and output room; whether anything
    /// moved, and whether every output was offered room.
    private func step() -> (moved: Bool, hadRoom: Bool) {
        for port in inputs.indices { topUp(port) }
        let block = Int.random(in: inputBlocks, using: &generator)
        let room = Int.random(in: outputBlocks, using: &generator)
        var moved = false
        around { moved = slot.step(inputLimit: block, outputLimit: room) }
        collect()
        return (moved, room > 0)
    }

    private func around(_ call: () -> Void) {
        if let aroundNodeCalls { aroundNodeCalls(call) } else { call() }
    }

    /// Moves what was fed into input `port`'s edge as room allows: each marker before the
    /// audio past its position.
    private func topUp(_ port: Int) {
        let writer = writers[port]
        let input = inputs[port]
        while true {
            let next = input.pushedMarkers < input.markers.count ? input.markers[input.pushedMarkers] : nil
            if let next, next.position <= input.written {
                guard writer.markerRoom() > 0 else { return }
                writer.push(next)
                input.pushedMarkers += 1
                continue
            }
            let limit = min(input.units, next?.position ?? input.units)
            let region = writer.writableRegion()
            let count = min(region.units, limit - input.written)
            guard count > 0, let base = region.base else { return }
            input.copy(count, to: base)
            writer.commit(count)
        }
    }

    /// Takes what the node put on its output edges: markers first (checked), then audio.
    private func collect() {
        for port in readers.indices {
            let reader = readers[port]
            let channels = outputFormats[port].channels
            while let marker = reader.takeNextMarker() {
                let produced = outputs[port].count / channels
                if marker.position < produced {
                    violations.append("output \(port): \(marker) emitted after \(produced) frames had gone out")
                }
                if let last = markers[port].last, marker.position < last.position {
                    violations.append("output \(port): \(marker) emitted after \(last)")
                }
                markers[port].append(marker)
            }
            while true {
                let region = reader.readableRegion()
                guard region.units > 0, let base = region.base else { break }
                // SAFETY: a frame edge is a ring of Float; the region holds `units` frames.
                let samples = base.assumingMemoryBound(to: Float.self)
                outputs[port] += UnsafeBufferPointer(start: samples, count: region.units * channels)
                reader.release(region.units)
            }
        }
    }

    // MARK: Results

    /// Output `port`'s interleaved frames so far.
    public func output(_ port: Int = 0) -> [Float] { outputs[port] }

    /// Frames output `port` produced so far.
    public func frameCount(output port: Int = 0) -> Int { outputs[port].count / outputFormats[port].channels }

    /// Units of input `port` the node has consumed.
    public func consumed(input port: Int = 0) -> Int { slot.inputs[port].position }

    /// One input's stream: what was fed and how much of it reached the edge.
    private final class Input {
        let format: StreamFormat
        var samples: [Float] = []
        var bytes: [UInt8] = []
        var markers: [Marker] = []
        var pushedMarkers = 0
        /// Units moved into the edge.
        var written = 0

        init(format: StreamFormat) {
            self.format = format
        }

        var units: Int { format.medium == .bytes ? bytes.count : samples.count / format.channels }

        func append(_ added: [Marker]) {
            for marker in added {
                precondition(marker.position >= (markers.last?.position ?? 0), "markers must be fed in position order")
                markers.append(marker)
            }
        }

        /// Copies `count` units from the write position to `base` (the edge's free room).
        func copy(_ count: Int, to base: UnsafeMutableRawPointer) {
            if format.medium == .bytes {
                bytes.withUnsafeBufferPointer { source in
                    // SAFETY: `count` units follow `written` in what was fed, and fit the room.
                    base.copyMemory(from: source.baseAddress! + written, byteCount: count)
                }
            } else {
                let channels = format.channels
                samples.withUnsafeBufferPointer { source in
                    // SAFETY: as above, in frames of `channels` samples.
                    base.assumingMemoryBound(to: Float.self).update(from: source.baseAddress! + written * channels, count: count * channels)
                }
            }
            written += count
        }
    }
}

/// A small seeded generator (SplitMix64), so a bench's splits repeat from run to run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
