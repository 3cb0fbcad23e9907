import SluiceAudio
import SluiceGraph
import SluiceTestKit
import SluiceTestSupport
import Testing

/// The node tests' driver: SluiceTestKit's `NodeTestBench` — the engine's own `ProcessorSlot`
/// between real edges, input in random blocks, output room of random sizes (zero included) —
/// with what the bench finds recorded as test issues, and allocations counted in the node's
/// calls when asked. `run` steps until nothing moves; `drain` plays a starving sink.
final class ProcessorHarness {
    static let offline = FormatContext(downstreamRate: nil, blockFrames: 256, isLive: false)

    let bench: NodeTestBench
    var node: any ProcessorNode { bench.node }
    var inputFormats: [StreamFormat] { bench.inputFormats }
    var outputFormats: [StreamFormat] { bench.outputFormats }
    /// Whether to count the heap allocations the node's own calls make (and only those).
    var countsAllocations = false
    /// Allocations counted in the node's `receive`, `process` and `drain` calls.
    private(set) var allocations: UInt64 = 0
    private var reported = 0

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
        bench = try NodeTestBench(
            node, inputs: formats, context: context, seed: seed, inputBlocks: inputBlocks, outputBlocks: outputBlocks,
            prepares: prepares, maximumUnits: maximumUnits)
        bench.aroundNodeCalls = { [unowned self] call in
            guard countsAllocations else { return call() }
            AllocationCounter.begin()
            call()
            allocations += AllocationCounter.end()
        }
    }

    /// Output `port`'s frames so far.
    func output(_ port: Int = 0) -> [Float] { bench.output(port) }

    /// Frames output `port` produced so far.
    func frameCount(output port: Int = 0) -> Int { bench.frameCount(output: port) }

    /// Markers each output received so far, in order.
    var markers: [[Marker]] { bench.markers }

    /// Appends interleaved frames (and markers, positioned on this input) to frame input `port`.
    func feed(_ samples: [Float], markers: [Marker] = [], input port: Int = 0) {
        bench.feed(samples, markers: markers, input: port)
    }

    /// Appends bytes (and markers at byte positions) to byte input `port`.
    func feed(bytes: [UInt8], markers: [Marker] = [], input port: Int = 0) {
        bench.feed(bytes: bytes, markers: markers, input: port)
    }

    /// Steps until nothing moves in a few steps that offered room on every output.
    func run() {
        bench.run()
        reportViolations()
    }

    /// What the runtime does when the sink starved and nothing waits upstream.
    func drain() {
        bench.drain()
        reportViolations()
    }

    private func reportViolations() {
        for violation in bench.violations.dropFirst(reported) { Issue.record(Comment(rawValue: violation)) }
        reported = bench.violations.count
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
