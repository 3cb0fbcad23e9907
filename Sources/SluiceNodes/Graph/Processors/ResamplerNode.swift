import SluiceAudio
import SluiceGraph

/// The `resampler` node: Float32 frames from one rate to another. Wraps `Resampler`.
///
/// Quality `auto` (the default) is `ResamplerQuality.automatic(live:)`: libsoxr's `soxr-hq`
/// in a render, speexdsp's `speex-6` in a graph a device drives. It is decided when the
/// graph is compiled, and `quality` then tells which.
///
/// Markers: restamped to `round(position × outputRate / inputRate)`; the end of the stream
/// starts the converter's flush, and the tail keeps coming from `process` calls with empty
/// input until the output holds exactly `round(inputFrames × ratio)` frames.
/// Drain: nothing is released: the resampler holds its filter delay and part of a converter
/// block, and releasing them early would change the output for the rest of the stream.
public final class ResamplerNode: ProcessorNode {
    public static let type = NodeType(
        NodeDescriptor(
            typeName: "resampler", kind: .processor,
            summary: "Converts Float32 frames to another sample rate (libsoxr, speexdsp or libsamplerate).",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames at any rate")],
            outputs: [PortDescriptor("out", .frames, summary: "Float32 frames at `rate`, same channels")],
            parameters: [
                ParameterDescriptor(
                    "quality", .choice(["auto"] + ResamplerQuality.allCases.map(\.rawValue)),
                    default: .string("auto"),
                    summary: "Converter: auto (soxr-hq in renders, speex-6 live), soxr-* (offline only), speex-0…10 or libsamplerate's sinc-*."),
                ParameterDescriptor(
                    "rate", .rate(1_000...Resampler.maximumRate), default: .auto, unit: "Hz",
                    summary: "Output rate; auto takes the rate of the sink downstream, or keeps the input's."),
            ])
    ) { parameters in
        let name = parameters.string("quality") ?? "auto"
        guard name == "auto" else {
            guard let quality = ResamplerQuality(rawValue: name) else {
                throw NodeCreationError(
                    "unknown resampler quality '\(name)'",
                    fix: "use auto or one of " + ResamplerQuality.allCases.map(\.rawValue).joined(separator: ", "),
                    parameter: "quality")
            }
            return ResamplerNode(quality: quality, rate: parameters.rate("rate"))
        }
        return ResamplerNode(quality: nil, rate: parameters.rate("rate"))
    }

    /// The converter asked for, or nil for `auto`.
    public let requestedQuality: ResamplerQuality?
    /// The converter the node uses: the one asked for, or what `auto` became when the graph
    /// was compiled (before that, a render's).
    public private(set) var quality: ResamplerQuality
    /// The output rate asked for, or nil for `auto`.
    public let requestedRate: Int?
    private var resampler: Resampler?

    /// - Parameter quality: nil chooses by where the graph runs (`ResamplerQuality.automatic`).
    public init(quality: ResamplerQuality? = nil, rate: Int? = nil) {
        requestedQuality = quality
        self.quality = quality ?? .automatic(live: false)
        requestedRate = rate
    }

    /// Output frames the node holds back once prepared: the converter's filter delay, plus
    /// the output of a block's worth of input that staging may hold (a live stream's input
    /// waits until a whole block has arrived). 0 before `prepare`.
    public var latencyFrames: Int {
        guard let resampler else { return 0 }
        guard resampler.ratio != 1 || resampler.latencyFrames > 0 else { return 0 }
        return resampler.latencyFrames + Int((Double(resampler.blockFrames) * resampler.ratio).rounded(.up))
    }

    public var compiledChoice: String? {
        guard requestedQuality == nil else { return "quality \(quality.rawValue)" }
        let other = ResamplerQuality.automatic(live: quality != .automatic(live: true))
        return "quality auto: \(quality.rawValue) here, \(other.rawValue) \(quality == .automatic(live: true) ? "rendered" : "live")"
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        let (inputRate, channels) = try ProcessorFormats.frames(inputs)
        quality = requestedQuality ?? .automatic(live: context.isLive)
        if context.isLive && !quality.isRealtimeSafe {
            throw FormatMismatch(
                input: 0,
                required: .parameter(
                    name: "quality",
                    problem: "quality '\(quality.rawValue)' is for offline rendering: libsoxr allocates while it runs",
                    fix: "use auto, a speex-N or a libsamplerate quality (sinc-medium, …) in a live graph"))
        }
        let supported = 1...Resampler.maximumRate
        guard supported.contains(inputRate) else {
            throw FormatMismatch(input: 0, required: .other("a rate within 1…\(Resampler.maximumRate) Hz (the resampler's limit)"))
        }
        guard (1...Resampler.maximumChannels).contains(channels) else {
            throw FormatMismatch(input: 0, required: .other("at most \(Resampler.maximumChannels) channels (the resampler's limit)"))
        }
        let outputRate = requestedRate ?? context.downstreamRate ?? inputRate
        guard supported.contains(outputRate) else {
            // Only an `auto` rate can land here: the parameter's range is within the limit.
            throw FormatMismatch(
                input: 0, required: .other("a sink rate within 1…\(Resampler.maximumRate) Hz (the resampler's limit)"))
        }
        return [.frames(rate: outputRate, channels: channels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let input = context.inputFormats.first, case .frames(let inputRate, let channels) = input,
            let output = context.outputFormats.first
        else {
            throw ProcessorFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        resampler = try Resampler(
            channels: channels, inputRate: inputRate, outputRate: output.sampleRate, quality: quality)
    }

    public func process(_ io: inout ProcessIO) {
        guard let resampler else { return }
        let (consumed, produced) = resampler.process(io.frames(input: 0), into: io.frames(output: 0))
        io.consume(consumed, input: 0)
        io.produce(produced, output: 0)
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        guard let resampler else { return }
        var batch = MarkerBatch()
        resampler.receive(marker, emitting: &batch)
        io.emit(batch, on: 0)
    }

    public func reset() {
        resampler?.reset()
    }

    public func deactivate() {
        resampler = nil
    }
}

/// Resampling filters each channel by itself, linearly: gains on its input pass through it.
extension ResamplerNode: GainTransparentNode {
    public var keepsChannelsApart: Bool { true }
}
