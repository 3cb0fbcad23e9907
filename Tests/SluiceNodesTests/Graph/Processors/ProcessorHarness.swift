import SluiceAudio
import SluiceGraph
import SluiceTestSupport
import Testing

/// Plays the graph runtime's part for one `ProcessorNode`, as `ProcessorSlot` does: decides
/// formats and prepares the node, then on every step delivers the markers each input has
/// reached, offers each input a random block of what waits (never past its next marker) and
/// each output a random amount of room (zero included), and calls `process`. `run` steps
/// until nothing moves; `drain` plays a starving sink.
///
/// Emitted markers are checked as they arrive: in position order on each output, and never
/// behind audio already produced (a marker must go out before the audio it describes).
final class ProcessorHarness {
    static let offline = FormatContext(downstreamRate: nil, blockFrames: 256, isLive: false)

    let node: any ProcessorNode
    let inputFormats: [StreamFormat]
    let outputFormats: [StreamFormat]
    let ports: NodePorts
    let inputBlocks: ClosedRange<Int>
    let outputBlocks: ClosedRange<Int>
    /// Interleaved frames each output produced so far.
    private(set) var outputs: [[Float]]
    /// Markers each output received so far, in order.
    private(set) var markers: [[Marker]]
    /// Whether to count the heap allocations the node's own calls make (and only those).
    var countsAllocations = false
    /// Allocations counted in the node's `receive`, `process` and `drain` calls.
    private(set) var allocations: UInt64 = 0

    private var generator: SeededGenerator
    private let inputs: [Input]
    private let outputScratch: [UnsafeMutablePointer<Float>]

    /// - Parameters:
    ///   - prepares: false to keep driving a node already prepared (after `reset`).
    ///   - maximumUnits: what `prepare` is told; by default the largest block offered. A
    ///     smaller figure checks that a node does not trust it to bound the output room.
    /// - Throws: the node's `FormatMismatch`, or what `prepare` throws.
    init(
        _ node: any ProcessorNode, inputs formats: [StreamFormat], context: FormatContext = ProcessorHarness.offline,
        seed: UInt64 = 1, inputBlocks: ClosedRange<Int> = 1...512, outputBlocks: ClosedRange<Int> = 0...512,
        prepares: Bool = true, maximumUnits: Int? = nil
    ) throws {
        precondition(inputBlocks.lowerBound >= 1 && outputBlocks.upperBound >= 1)
        self.node = node
        inputFormats = formats
        outputFormats = try node.outputFormats(for: formats, context: context)
        precondition(outputFormats.allSatisfy { $0.medium == .frames }, "the harness collects frame outputs only")
        if prepares {
            try node.prepare(PrepareContext(
                inputFormats: formats, outputFormats: outputFormats,
                maximumUnits: maximumUnits ?? max(inputBlocks.upperBound, outputBlocks.upperBound),
                blockFrames: context.blockFrames))
        }
        ports = NodePorts(inputs: formats, outputs: outputFormats)
        self.inputBlocks = inputBlocks
        self.outputBlocks = outputBlocks
        generator = SeededGenerator(seed: seed)
        inputs = formats.map { Input(format: $0, capacity: inputBlocks.upperBound) }
        outputScratch = outputFormats.map { .allocate(capacity: outputBlocks.upperBound * $0.channels) }
        outputs = Array(repeating: [], count: outputFormats.count)
        markers = Array(repeating: [], count: outputFormats.count)
    }

    deinit {
        for scratch in outputScratch { scratch.deallocate() }
    }

    /// Output `port`'s frames so far.
    func output(_ port: Int = 0) -> [Float] { outputs[port] }

    /// Frames output `port` produced so far.
    func frameCount(output port: Int = 0) -> Int { outputs[port].count / outputFormats[port].channels }

    /// Appends interleaved frames (and markers, positioned on this input) to frame input `port`.
    func feed(_ samples: [Float], markers: [Marker] = [], input port: Int = 0) {
        precondition(inputs[port].format.medium == .frames)
        inputs[port].samples += samples
        inputs[port].append(markers)
    }

    /// Appends bytes (and markers at byte positions) to byte input `port`.
    func feed(bytes: [UInt8], markers: [Marker] = [], input port: Int = 0) {
        precondition(inputs[port].format.medium == .bytes)
        inputs[port].bytes += bytes
        inputs[port].append(markers)
    }

    /// Steps until nothing moves in a few steps that offered room on every output.
    func run() {
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
                Issue.record("the node kept moving for \(steps) steps")
                return
            }
        }
    }

    /// What the runtime does when the sink starved and nothing waits upstream: `drain` with
    /// empty inputs, then steps until nothing moves.
    func drain() {
        var io = ProcessIO(ports)
        for port in inputs.indices { ports.setInput(port, base: nil, units: 0) }
        for port in outputFormats.indices {
            let room = Int.random(in: max(1, outputBlocks.lowerBound)...outputBlocks.upperBound, using: &generator)
            ports.setOutput(port, base: outputScratch[port], units: room)
        }
        counting { node.drain(&io) }
        _ = finishCall()
        run()
    }

    /// One round of markers and audio; whether anything moved, and whether every output
    /// was offered room.
    private func step() -> (moved: Bool, hadRoom: Bool) {
        var io = ProcessIO(ports)
        var moved = false
        for port in outputFormats.indices { ports.setOutput(port, base: nil, units: 0) }
        for (port, input) in inputs.enumerated() {
            ports.setInput(port, base: nil, units: 0)
            while let marker = input.nextMarker, marker.position <= input.position {
                input.delivered += 1
                if case .endOfStream = marker.event { ports.setEnded(port) }
                counting { node.receive(marker, on: port, &io) }
                collectMarkers()
                moved = true
            }
        }
        for (port, input) in inputs.enumerated() {
            let limit = min(input.nextMarker?.position ?? input.units, input.units)
            let units = max(0, min(Int.random(in: inputBlocks, using: &generator), limit - input.position))
            ports.setInput(port, base: input.offer(units), units: units)
        }
        var hadRoom = true
        for port in outputFormats.indices {
            let room = Int.random(in: outputBlocks, using: &generator)
            hadRoom = hadRoom && room > 0
            ports.setOutput(port, base: outputScratch[port], units: room)
        }
        counting { node.process(&io) }
        let finished = finishCall()
        return (moved || finished, hadRoom)
    }

    private func counting(_ call: () -> Void) {
        guard countsAllocations else { return call() }
        AllocationCounter.begin()
        call()
        allocations += AllocationCounter.end()
    }

    /// Moves what the last call consumed, produced and emitted; whether anything moved.
    private func finishCall() -> Bool {
        var moved = collectMarkers()
        for (port, input) in inputs.enumerated() {
            let consumed = ports.consumed(input: port)
            if consumed > 0 {
                input.position += consumed
                moved = true
            }
        }
        for port in outputFormats.indices {
            let produced = ports.produced(output: port)
            if produced > 0 {
                outputs[port] += UnsafeBufferPointer(start: outputScratch[port], count: produced * outputFormats[port].channels)
                moved = true
            }
        }
        return moved
    }

    @discardableResult
    private func collectMarkers() -> Bool {
        var any = false
        for port in outputFormats.indices {
            for index in 0..<ports.markerCount(output: port) {
                let marker = ports.marker(index, output: port)
                let produced = frameCount(output: port)
                if marker.position < produced {
                    Issue.record("output \(port): \(marker) emitted after \(produced) frames had gone out")
                }
                if let last = markers[port].last, marker.position < last.position {
                    Issue.record("output \(port): \(marker) emitted after \(last)")
                }
                markers[port].append(marker)
                any = true
            }
            ports.removeMarkers(output: port)
        }
        return any
    }

    /// One input's stream: what was fed, how far the node read, which markers it received.
    private final class Input {
        let format: StreamFormat
        var samples: [Float] = []
        var bytes: [UInt8] = []
        var markers: [Marker] = []
        var delivered = 0
        /// Units the node consumed.
        var position = 0
        /// The block offered to the node, typed as the edge's ring would be.
        private let floats: UnsafeMutablePointer<Float>?
        private let raw: UnsafeMutablePointer<UInt8>?

        init(format: StreamFormat, capacity: Int) {
            self.format = format
            switch format {
            case .frames(_, let channels):
                floats = .allocate(capacity: capacity * channels)
                raw = nil
            case .bytes:
                floats = nil
                raw = .allocate(capacity: capacity)
            }
        }

        deinit {
            floats?.deallocate()
            raw?.deallocate()
        }

        var units: Int { format.medium == .bytes ? bytes.count : samples.count / format.channels }

        var nextMarker: Marker? { delivered < markers.count ? markers[delivered] : nil }

        func append(_ added: [Marker]) {
            for marker in added {
                precondition(marker.position >= (markers.last?.position ?? 0), "markers must be fed in position order")
                markers.append(marker)
            }
        }

        /// Copies `units` units from the read position into the block and returns its start.
        func offer(_ units: Int) -> UnsafeRawPointer {
            if let floats {
                let count = units * format.channels
                samples.withUnsafeBufferPointer { source in
                    // SAFETY: `units` never passes what was fed, and the block holds the
                    // largest input block.
                    if count > 0 { floats.update(from: source.baseAddress! + position * format.channels, count: count) }
                }
                return UnsafeRawPointer(floats)
            }
            bytes.withUnsafeBufferPointer { source in
                // SAFETY: as above, in bytes.
                if units > 0 { raw!.update(from: source.baseAddress! + position, count: units) }
            }
            return UnsafeRawPointer(raw!)
        }
    }
}

/// Creates a processor of `type` as the graph compiler would: the descriptor's defaults,
/// then `values`.
func makeProcessor(_ type: NodeType, _ values: [String: ParameterValue] = [:]) throws -> any ProcessorNode {
    var parameters = NodeParameters()
    for parameter in type.descriptor.parameters {
        if let value = parameter.defaultValue { parameters[parameter.name] = value }
    }
    for (name, value) in values {
        precondition(type.descriptor.parameter(named: name) != nil, "\(type.descriptor.typeName) has no parameter '\(name)'")
        parameters[name] = value
    }
    let node = try type.make(parameters)
    return try #require(node as? any ProcessorNode, "\(type.descriptor.typeName) did not make a processor")
}

/// `count` frames of `channels` channels of seeded noise, interleaved.
func noiseFrames(_ count: Int, channels: Int = 1, seed: UInt64) -> [Float] {
    Signals.noise(count: count * channels, seed: seed)
}
