import SluiceAudio
import SluiceGraph

/// The `aligner` node: PCM bytes cut anywhere in, whole Float32 frames out. Wraps `Aligner`.
///
/// Markers: restamped from byte positions to frame positions; utterance boundaries,
/// discontinuities and the end of the stream drop an unfinished frame (counted in the report).
/// Drain: nothing to release: a partial frame is not audio yet.
public final class AlignerNode: ProcessorNode {
    public static let type = NodeType(
        NodeDescriptor(
            typeName: "aligner", kind: .processor,
            summary: "Turns PCM bytes cut anywhere into whole Float32 frames; unfinished frames at boundaries are dropped and counted.",
            inputs: [PortDescriptor("in", .bytes, summary: "PCM bytes in the upstream node's declared format")],
            outputs: [PortDescriptor("out", .frames, summary: "Float32 frames at the input's rate and channel count")])
    ) { _ in AlignerNode() }

    private var aligner: Aligner?
    /// Counters kept across `deactivate`, which releases the aligner, so a report made after
    /// the run still has them.
    private var droppedPartialFrames = 0
    private var droppedBytes = 0

    public init() {}

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        guard let input = inputs.first, case .bytes(let format) = input else {
            throw FormatMismatch(input: 0, required: .medium(.bytes))
        }
        return [.frames(rate: format.sampleRate, channels: format.channels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let input = context.inputFormats.first, case .bytes(let format) = input else {
            throw ProcessorFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        aligner = Aligner(inputFormat: format)
    }

    public func process(_ io: inout ProcessIO) {
        guard let aligner else { return }
        let (consumed, produced) = aligner.process(io.bytes(input: 0), into: io.frames(output: 0))
        io.consume(consumed, input: 0)
        io.produce(produced, output: 0)
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        guard let aligner else { return }
        var batch = MarkerBatch()
        aligner.receive(marker, emitting: &batch)
        io.emit(batch, on: 0)
    }

    public func reset() {
        aligner?.reset()
        droppedPartialFrames = 0
        droppedBytes = 0
    }

    public func deactivate() {
        saveCounters()
        aligner = nil
    }

    public func report(into report: inout NodeReport) {
        saveCounters()
        report.droppedPartialFrames += droppedPartialFrames
        if droppedBytes > 0 { report.counters["dropped-bytes", default: 0] += droppedBytes }
    }

    private func saveCounters() {
        guard let aligner else { return }
        droppedPartialFrames = aligner.droppedPartialFrames
        droppedBytes = aligner.droppedBytes
    }
}
