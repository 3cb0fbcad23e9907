import Foundation
import SluiceGraph

// The worked example of docs/custom-nodes.md: a processor written outside Sluice, registered
// by its type name and used from a graph file. Keep the two in step.

/// Tremolo: moves the level up and down with a slow sine.
///
/// gain(n) = 1 − depth · (1 − cos(2π · rate · n / sampleRate)) / 2, for output frame n.
final class Tremolo: ProcessorNode {
    /// The type, as data: what graph files, `sluice nodes` and the compiler see.
    static let type = NodeType(
        NodeDescriptor(
            typeName: "tremolo", kind: .processor,
            summary: "Moves the level up and down with a slow sine.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames")],
            outputs: [PortDescriptor("out", .frames, summary: "the same format")],
            parameters: [
                ParameterDescriptor("rate", .number(0.1...20), default: .number(5), unit: "Hz",
                                    summary: "How fast the level moves."),
                ParameterDescriptor("depth", .number(0...1), default: .number(0.5),
                                    summary: "How far it dips: 0 not at all, 1 down to silence."),
            ])
    ) { parameters in
        // Parameters arrive checked against the descriptor, defaults filled in.
        Tremolo(rate: parameters.double("rate"), depth: parameters.double("depth"))
    }

    let rate: Double
    let depth: Double
    private var channels = 1
    private var sampleRate = 48_000
    private var frame = 0

    init(rate: Double, depth: Double) {
        self.rate = rate
        self.depth = depth
    }

    /// Frames in, the same frames out; bytes would need an aligner first.
    func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        guard case .frames = inputs[0] else { throw FormatMismatch(input: 0, required: .medium(.frames)) }
        return [inputs[0]]
    }

    /// The only place that may allocate; this node needs nothing but the format.
    func prepare(_ context: PrepareContext) throws {
        guard case .frames(let rate, let channels) = context.inputFormats[0] else { return }
        sampleRate = rate
        self.channels = channels
    }

    /// Worker thread: no allocation, no locks, no I/O.
    func process(_ io: inout ProcessIO) {
        let frames = min(io.available(input: 0), io.room(output: 0))
        guard frames > 0 else { return }
        let input = io.frames(input: 0)
        let output = io.frames(output: 0)
        for offset in 0..<frames {
            let phase = 2 * Double.pi * rate * Double(frame + offset) / Double(sampleRate)
            let gain = Float(1 - depth * (1 - cos(phase)) / 2)
            for channel in 0..<channels {
                output[offset * channels + channel] = input[offset * channels + channel] * gain
            }
        }
        frame += frames
        io.consume(frames, input: 0)
        io.produce(frames, output: 0)
    }

    // Markers: the default `receive` passes each one on at the same position, which is
    // right for a node whose output frame n is its input frame n.

    func reset() { frame = 0 }
}
