import SluiceAudio
import SluiceGraph

/// The `tee` node: copies one stream to several outputs (play it and record it). Moves only
/// as many frames as every output has room for, so the slowest branch sets the pace and no
/// branch ever misses audio.
///
/// Markers: each goes to every output at the same position. Drain: nothing held.
public final class TeeNode: ProcessorNode {
    public static let maximumOutputs = 8

    public static let type = NodeType(
        NodeDescriptor(
            typeName: "tee", kind: .processor,
            summary: "Copies one stream to several outputs; uses the first `outputs` of out1…out8.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames")],
            outputs: (1...maximumOutputs).map { PortDescriptor("out\($0)", .frames, summary: "a copy of the input") },
            parameters: [
                ParameterDescriptor("outputs", .integer(1...maximumOutputs), default: .integer(2), summary: "How many copies."),
            ],
            outputCountParameter: "outputs")
    ) { parameters in
        TeeNode(outputs: parameters.integer("outputs"))
    }

    public let outputCount: Int

    public init(outputs: Int) {
        precondition(outputs >= 1 && outputs <= Self.maximumOutputs)
        outputCount = outputs
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        guard case .frames = inputs[0] else { throw FormatMismatch(input: 0, required: .medium(.frames)) }
        return Array(repeating: inputs[0], count: outputCount)
    }

    /// Each frame in is one frame on every output.
    public var processesFrameForFrame: Bool { true }

    public func process(_ io: inout ProcessIO) {
        var frames = io.available(input: 0)
        for port in 0..<outputCount { frames = min(frames, io.room(output: port)) }
        guard frames > 0, let source = io.frames(input: 0).baseAddress else { return }
        let samples = frames * (io.frames(input: 0).count / io.available(input: 0))
        for port in 0..<outputCount {
            io.frames(output: port).baseAddress!.update(from: source, count: samples)
            io.produce(frames, output: port)
        }
        io.consume(frames, input: 0)
    }
}
