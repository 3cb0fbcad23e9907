import SluiceAudio
import SluiceGraph

/// The `crossfader` node: blends the end of one utterance into the start of the next.
/// Wraps `Crossfader`.
///
/// Markers: boundary markers between continuous utterances are emitted where the crossfade
/// begins (the output is shorter by the overlap); all others are restamped to where their
/// input frame lands. Drain: `Crossfader.flush`: the held tail leaves unchanged, with any
/// held utterance end emitted where the tail ends.
///
/// Live: `duration` may change while the graph plays, up to the value the graph started
/// with: crossfades that begin after the change are that long at most. The delay the node
/// adds (and its reported latency) stays the duration it started with.
public final class CrossfaderNode: LiveParameterNode {
    public static let type = NodeType(
        NodeDescriptor(
            typeName: "crossfader", kind: .processor,
            summary: "Crossfades back-to-back continuous utterances (equal power) so they join without a click.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames with utterance markers")],
            outputs: [PortDescriptor("out", .frames, summary: "The same format, shorter by each overlap")],
            parameters: [
                ParameterDescriptor(
                    "duration", .number(0...1), default: .number(0.1), unit: "s", live: true,
                    summary: "Longest crossfade, and the delay the node adds; 0 turns crossfading off. Live up to the starting value (the delay stays).")
            ])
    ) { parameters in
        CrossfaderNode(duration: parameters.double("duration"))
    }

    /// The longest crossfade, in seconds.
    public let duration: Double
    private var crossfader: Crossfader?
    private var crossfades = 0
    private var rate = 0

    public init(duration: Double = 0.1) {
        precondition(duration >= 0, "a crossfade cannot be negative")
        self.duration = duration
    }

    /// The longest crossfade in frames at `rate`: `round(duration × rate)`.
    public func durationFrames(rate: Int) -> Int { Int((duration * Double(rate)).rounded()) }

    /// The tail held until the next utterance is known, once prepared.
    public var latencyFrames: Int { crossfader?.latencyFrames ?? 0 }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        let (rate, channels) = try ProcessorFormats.frames(inputs)
        return [.frames(rate: rate, channels: channels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let input = context.inputFormats.first, case .frames(let rate, let channels) = input else {
            throw ProcessorFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        crossfader = Crossfader(channels: channels, durationFrames: durationFrames(rate: rate))
        self.rate = rate
    }

    public func apply(_ change: ParameterChange) {
        guard change.parameter == 0, change.value.isFinite, let crossfader else { return }
        crossfader.crossfadeFrames = Int((min(max(change.value, 0), 1) * Double(rate)).rounded())
    }

    public func process(_ io: inout ProcessIO) {
        guard let crossfader else { return }
        var batch = MarkerBatch()
        let (consumed, produced) = crossfader.process(io.frames(input: 0), into: io.frames(output: 0), emitting: &batch)
        io.emit(batch, on: 0)
        io.consume(consumed, input: 0)
        io.produce(produced, output: 0)
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        guard let crossfader else { return }
        var batch = MarkerBatch()
        crossfader.receive(marker, emitting: &batch)
        io.emit(batch, on: 0)
    }

    /// Releases the held tail and writes what the output has room for; `process` calls with
    /// empty input write the rest.
    public func drain(_ io: inout ProcessIO) {
        guard let crossfader else { return }
        var batch = MarkerBatch()
        crossfader.flush(emitting: &batch)
        io.emit(batch, on: 0)
        process(&io)
    }

    public func reset() {
        crossfader?.reset()
        crossfades = 0
    }

    public func deactivate() {
        crossfades = crossfader?.crossfades ?? crossfades
        crossfader = nil
    }

    public func report(into report: inout NodeReport) {
        let count = crossfader?.crossfades ?? crossfades
        if count > 0 { report.counters["crossfades", default: 0] += count }
    }
}

/// A crossfade is a weighted sum of the stream with itself, channel by channel: gains on its
/// input pass through it.
extension CrossfaderNode: GainTransparentNode {
    public var keepsChannelsApart: Bool { true }
}
