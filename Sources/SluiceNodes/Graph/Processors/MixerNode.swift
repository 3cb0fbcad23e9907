import SluiceAudio
import SluiceGraph

/// The `mixer` node: sums its inputs `in1`…`inN`, each with its own gain. Wraps `Mixer`.
///
/// Inputs move in lockstep: each call mixes as many frames as every input still streaming
/// has waiting (and the output has room for). An input whose stream has ended counts as
/// silence, so a shorter input does not stop the mix.
///
/// Markers: output positions equal the positions of the inputs still streaming, so every
/// marker from every input passes through at the mix's current position — except the end of
/// the stream, which is emitted once, when the last input has ended. Drain: nothing held.
///
/// Live: `level1`…`level16` move an input's gain while the graph plays (`sluice ctl set mix
/// level2 0.3`), in a straight line over `ramp` seconds, so a change never clicks.
public final class MixerNode: LiveParameterNode {
    /// Inputs a mixer can have: the descriptor declares this many ports.
    public static let maximumInputs = 16

    public static let type = NodeType(
        NodeDescriptor(
            typeName: "mixer", kind: .processor,
            summary: "Sums in1…inN (the first `inputs` ports; the graph uses only those), each with its own gain.",
            inputs: (1...maximumInputs).map { index in
                PortDescriptor(
                    "in\(index)", .frames, required: index == 1,
                    summary: index == 1 ? "Float32 frames; sets the mix's rate and channels" : "Float32 frames, same format as in1")
            },
            outputs: [PortDescriptor("out", .frames, summary: "The mix, in in1's format")],
            parameters: [
                ParameterDescriptor(
                    "inputs", .integer(1...maximumInputs), default: .integer(2),
                    summary: "How many inputs the mixer has: ports in1…inN, all to be linked."),
                ParameterDescriptor(
                    "gains", .list, default: nil,
                    summary: "Linear gain per input, in1 first; inputs without one get 1."),
                ParameterDescriptor(
                    "ramp", .number(0...10), default: .number(0.02), unit: "s",
                    summary: "How long a level change takes while playing, a straight line so it never clicks."),
            ] + (1...maximumInputs).map { index in
                ParameterDescriptor(
                    "level\(index)", .number(0...4), default: nil, live: true,
                    summary: "Input \(index)'s gain while playing (it starts at its `gains` entry).")
            },
            inputCountParameter: "inputs")
    ) { parameters in
        let inputs = parameters.integer("inputs")
        let texts = parameters.list("gains")
        guard texts.count <= inputs else {
            throw NodeCreationError(
                "\(texts.count) gains for \(inputs) inputs", fix: "give at most one gain per input, or raise `inputs`",
                parameter: "gains")
        }
        var gains: [Float] = []
        for text in texts {
            guard let gain = Float(ProcessorFormats.trimmed(text)), gain.isFinite else {
                throw NodeCreationError(
                    "gain '\(text)' is not a number", fix: "give linear gains such as 1, 0.5 or 2", parameter: "gains")
            }
            gains.append(gain)
        }
        return MixerNode(inputs: inputs, gains: gains, ramp: parameters.double("ramp"))
    }

    /// `level1`'s index among the type's parameters; `levelN` follows at N − 1 after it.
    static let firstLevelParameter = 3

    public let inputCount: Int
    /// One gain per input.
    public let gains: [Float]
    public let ramp: Double
    private var rampFrames = 0

    private var mixer: Mixer?
    private var channels = 0
    /// Per input: the pointer `Mixer.mix` reads, allocated in `prepare`.
    private var sources: UnsafeMutablePointer<UnsafePointer<Float>>?
    /// Per input: whether its end of stream has arrived.
    private var inputs: LockstepInputs?
    /// Zeros standing in for ended inputs, `silenceFrames` long; longer mixes go in chunks.
    private var silence: UnsafeMutablePointer<Float>?
    private var silenceFrames = 0
    /// Output frames since the stream began: the position every streaming input is at.
    private var framesProduced = 0

    /// - Parameter gains: one per input, in order; inputs without one get 1.
    public init(inputs: Int = 2, gains: [Float] = [], ramp: Double = 0.02) {
        precondition((1...Self.maximumInputs).contains(inputs), "a mixer has 1…\(Self.maximumInputs) inputs")
        precondition(gains.count <= inputs, "more gains than inputs")
        inputCount = inputs
        self.gains = gains + [Float](repeating: 1, count: inputs - gains.count)
        self.ramp = ramp
    }

    public func apply(_ change: ParameterChange) {
        let input = change.parameter - Self.firstLevelParameter
        guard let mixer, input >= 0, input < inputCount else { return }
        mixer.setGain(Float(change.value), ofInput: input, rampFrames: rampFrames)
    }

    deinit {
        release()
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        let (rate, channels) = try ProcessorFormats.frames(inputs, port: 0)
        for port in 1..<max(1, inputs.count) {
            let (otherRate, otherChannels) = try ProcessorFormats.frames(inputs, port: port)
            if otherRate != rate { throw FormatMismatch(input: port, required: .sampleRate(rate)) }
            if otherChannels != channels { throw FormatMismatch(input: port, required: .channels(channels)) }
        }
        return [.frames(rate: rate, channels: channels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard context.inputFormats.count == inputCount, case .frames(let rate, let channels) = context.inputFormats[0] else {
            throw ProcessorFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        release()
        let mixer = Mixer(inputs: inputCount, channels: channels)
        for (index, gain) in gains.enumerated() { mixer.setGain(gain, ofInput: index) }
        self.mixer = mixer
        self.channels = channels
        rampFrames = Int((ramp * Double(rate)).rounded())
        silenceFrames = max(1, context.maximumUnits, context.blockFrames)
        let silence = UnsafeMutablePointer<Float>.allocate(capacity: silenceFrames * channels)
        silence.initialize(repeating: 0, count: silenceFrames * channels)
        self.silence = silence
        let sources = UnsafeMutablePointer<UnsafePointer<Float>>.allocate(capacity: inputCount)
        sources.initialize(repeating: UnsafePointer(silence), count: inputCount)
        self.sources = sources
        inputs = LockstepInputs(count: inputCount)
        framesProduced = 0
    }

    /// Each frame of the inputs is one mixed frame out.
    public var processesFrameForFrame: Bool { true }

    public func process(_ io: inout ProcessIO) {
        guard let mixer, let sources, let inputs, let silence else { return }
        let frames = inputs.availableFrames(io, limit: io.room(output: 0))
        guard frames > 0, let output = io.frames(output: 0).baseAddress else { return }
        var mixed = 0
        while mixed < frames {
            let chunk = min(frames - mixed, silenceFrames)
            for port in 0..<inputCount {
                // SAFETY: a streaming input has `frames` frames waiting, so `mixed + chunk`
                // frames from its view's start are readable; silence holds `silenceFrames`.
                sources[port] = inputs.hasEnded(port)
                    ? UnsafePointer(silence)
                    : io.frames(input: port).baseAddress! + mixed * channels
            }
            // SAFETY: the output view has room for `frames` frames, and `sources` holds one
            // pointer per input, each to `chunk` frames.
            mixer.mix(
                UnsafeBufferPointer(start: sources, count: inputCount), frames: chunk,
                into: output + mixed * channels)
            mixed += chunk
        }
        inputs.consume(frames, &io)
        io.produce(frames, output: 0)
        framesProduced += frames
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        guard let inputs, inputs.passes(marker, on: port) else { return }
        io.emit(marker.moved(to: framesProduced), on: 0)
    }

    public func reset() {
        inputs?.reset()
        framesProduced = 0
    }

    public func deactivate() {
        release()
    }

    private func release() {
        mixer = nil
        silence?.deallocate()
        silence = nil
        sources?.deallocate()
        sources = nil
        inputs = nil
    }
}

