import SluiceAudio
import SluiceGraph
import SluiceTestKit
import SluiceTestSupport

/// Plays the scheduler's part for one Float32 DSP type (`Fader`, `Crossfader`, …): wraps its
/// `process` and `receive` in a node and drives it with SluiceTestKit's `NodeTestBench`, so
/// input comes in blocks of random sizes, output room is of random sizes, and each marker is
/// delivered once the input has reached its position — by the engine's own `ProcessorSlot`.
struct NodeDriver {
    typealias Process = (UnsafeBufferPointer<Float>, UnsafeMutableBufferPointer<Float>, inout MarkerBatch) -> (Int, Int)
    typealias Receive = (Marker, inout MarkerBatch) -> Void

    let channels: Int
    var inputBlocks: ClosedRange<Int> = 1...512
    var outputBlocks: ClosedRange<Int> = 1...512
    var seed: UInt64 = 1

    struct Result {
        var output: [Float] = []
        var markers: [Marker] = []
    }

    func run(input: [Float], markers: [Marker], process: Process, receive: Receive) -> Result {
        withoutActuallyEscaping(process) { process in
            withoutActuallyEscaping(receive) { receive in
                let node = ClosureNode(process: process, receive: receive)
                // SAFETY of the force-try: a frame input always gives the node its format.
                let bench = try! NodeTestBench(
                    node, inputs: [.frames(rate: 48_000, channels: channels)], seed: seed,
                    inputBlocks: inputBlocks, outputBlocks: outputBlocks)
                bench.feed(input, markers: markers)
                bench.run()
                precondition(bench.violations.isEmpty, "\(bench.violations)")
                return Result(output: bench.output(), markers: bench.markers[0])
            }
        }
    }
}

/// A DSP type's two calls as a processor node with one frame input and one frame output.
private final class ClosureNode: ProcessorNode {
    let processCall: NodeDriver.Process
    let receiveCall: NodeDriver.Receive

    init(process: @escaping NodeDriver.Process, receive: @escaping NodeDriver.Receive) {
        processCall = process
        receiveCall = receive
    }

    func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        inputs
    }

    func process(_ io: inout ProcessIO) {
        var batch = MarkerBatch()
        let (consumed, produced) = processCall(io.frames(input: 0), io.frames(output: 0), &batch)
        io.emit(batch, on: 0)
        io.consume(consumed, input: 0)
        io.produce(produced, output: 0)
    }

    func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        var batch = MarkerBatch()
        receiveCall(marker, &batch)
        io.emit(batch, on: 0)
    }
}

/// Interleaves per-channel sample arrays.
func interleave(_ channels: [[Float]]) -> [Float] {
    var result: [Float] = []
    result.reserveCapacity(channels.count * channels[0].count)
    for frame in 0..<channels[0].count {
        for channel in channels { result.append(channel[frame]) }
    }
    return result
}

/// One channel out of interleaved samples.
func channel(_ index: Int, of samples: [Float], channels: Int) -> [Float] {
    stride(from: index, to: samples.count, by: channels).map { samples[$0] }
}
