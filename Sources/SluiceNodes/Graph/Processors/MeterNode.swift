import SluiceAudio
import SluiceGraph

/// The `meter` node: passes its input through untouched and measures it — per channel peak,
/// RMS and true peak, and EBU R128 loudness (momentary, short-term, integrated) — a reading
/// every `interval` seconds of its stream. `sluice serve` sends the readings to watchers of
/// levels and to OSC subscribers (docs/control.md). Wraps `LevelMeter`.
///
/// Frame for frame, so in the JACK cycle it measures the period's samples where it stands.
public final class MeterNode: MeteringNode, ProcessorNode {
    public static let type = NodeType(
        NodeDescriptor(
            typeName: "meter", kind: .processor,
            summary: "Passes audio through and measures it: peak, RMS and true peak per channel, EBU R128 loudness (momentary, short-term, integrated).",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames")],
            outputs: [PortDescriptor("out", .frames, summary: "The same frames, untouched")],
            parameters: [
                ParameterDescriptor(
                    "interval", .number(0.01...10), default: .number(0.1), unit: "s",
                    summary: "How often a reading is made, in seconds of the stream."),
                ParameterDescriptor(
                    "loudness", .boolean, default: .boolean(true),
                    summary: "Measure EBU R128 loudness (libebur128, off the real-time thread)."),
                ParameterDescriptor(
                    "true-peak", .boolean, default: .boolean(true),
                    summary: "Measure the true peak (4× oversampled, BS.1770), off the real-time thread."),
            ])
    ) { parameters in
        MeterNode(
            interval: parameters.double("interval"), loudness: parameters.boolean("loudness"),
            truePeak: parameters.boolean("true-peak"))
    }

    public let interval: Double
    public let measuresLoudness: Bool
    public let measuresTruePeak: Bool
    // SAFETY: `meter`, unretained, for the audio thread; `meter` keeps it alive.
    private var meterRef: Unmanaged<LevelMeter>?
    private var meter: LevelMeter? {
        didSet { meterRef = meter.map { .passUnretained($0) } }
    }
    private var channels = 1

    public init(interval: Double = 0.1, loudness: Bool = true, truePeak: Bool = true) {
        precondition(interval > 0, "a meter's interval must be positive")
        self.interval = interval
        measuresLoudness = loudness
        measuresTruePeak = truePeak
    }

    public var processesFrameForFrame: Bool { true }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        let (rate, channels) = try ProcessorFormats.frames(inputs)
        return [.frames(rate: rate, channels: channels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let input = context.inputFormats.first, case .frames(let rate, let channels) = input else {
            throw ProcessorFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        self.channels = channels
        meter = try LevelMeter(
            channels: channels, rate: rate, windowFrames: Int((interval * Double(rate)).rounded()),
            loudness: measuresLoudness, truePeak: measuresTruePeak)
    }

    public func takeReadings() -> [MeterReading] { meter?.readings() ?? [] }

    /// Frames whose samples did not reach the loudness analysis because readings were not
    /// taken for longer than the backlog (peak and RMS still counted them).
    public var droppedFrames: Int { meter?.droppedFrames ?? 0 }

    public func process(_ io: inout ProcessIO) {
        let input = io.frames(input: 0)
        let output = io.frames(output: 0)
        let samples = min(input.count, output.count) / channels * channels
        guard samples > 0, let source = input.baseAddress, let destination = output.baseAddress else { return }
        destination.update(from: source, count: samples)
        meterRef?._withUnsafeGuaranteedRef { $0.measure(source, frames: samples / channels) }
        io.consume(samples / channels, input: 0)
        io.produce(samples / channels, output: 0)
    }

    /// In the JACK cycle: measure the period's samples and pass them on.
    public var frameKernel: FrameKernel? {
        // SAFETY: the node outlives its slot's periods, which hold it; unretained here.
        FrameKernel(context: Unmanaged.passUnretained(self).toOpaque(), function: Self.kernelPeriod)
    }

    private static let kernelPeriod: FrameKernel.Function = { context, input, output, samples in
        // SAFETY: `context` is this node (`frameKernel`), alive while its slot runs.
        Unmanaged<MeterNode>.fromOpaque(context)._withUnsafeGuaranteedRef { node in
            guard let meter = node.meterRef else { return false }
            if input != UnsafePointer(output) { output.update(from: input, count: samples) }
            meter._withUnsafeGuaranteedRef { $0.measure(input, frames: samples / node.channels) }
            return true
        }
    }

    public func reset() { meter?.reset() }

    public func deactivate() { meter = nil }
}
