import SluiceAudio
import SluiceGraph

/// The `fader` node: fades in and out at breaks in the stream and applies a gain. Wraps
/// `Fader`.
///
/// Markers: restamped to where their input frame lands (`fadeLength` frames of delay); breaks
/// in continuity and the end of the stream fade out what is held. Drain: the held frames
/// leave faded out, as before a discontinuity, and a discontinuity marker is emitted where
/// they end, because the audio really breaks there: what follows fades in.
///
/// Live: `gain` may change while the graph plays; it moves there in a straight line over
/// `ramp` seconds, from the frame the change is applied at. Before a sink's buffer, a live
/// run hands the gain to the sink's playhead (`OutputGainNode`), which applies it to what it
/// plays, so a change is heard within a period; the fades stay here. `fade-in` and
/// `fade-out` are live too, up to `length` (the look-ahead, which is the node's latency and so
/// fixed): a new length shapes the breaks to come, never a fade under way.
public final class FaderNode: OutputGainNode, GainTransparentNode {
    public static let type = NodeType(
        NodeDescriptor(
            typeName: "fader", kind: .processor,
            summary: "Fades in and out around breaks and at the end so nothing clicks, and applies a gain.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames")],
            outputs: [PortDescriptor("out", .frames, summary: "The same format, `length` frames later")],
            parameters: [
                ParameterDescriptor(
                    "length", .integer(0...48_000), default: .integer(Fader.defaultFadeLength), unit: "frames",
                    summary: "The look-ahead: the delay the node adds to see breaks coming, and the longest fade (both fades default to it)."),
                ParameterDescriptor(
                    "gain", .number(0...4), default: .number(1), live: true,
                    summary: "Linear gain on everything; 1 leaves samples outside the fades untouched."),
                ParameterDescriptor(
                    "ramp", .number(0...10), default: .number(FaderNode.defaultRamp), unit: "s", live: true,
                    summary: "How long a gain change takes while playing, a straight line so it never clicks; live (from the next gain change)."),
                ParameterDescriptor(
                    "fade-in", .integer(0...48_000), default: nil, unit: "frames", live: true,
                    summary: "Fade-in length after a break, at most `length` (the default); live, from the next break."),
                ParameterDescriptor(
                    "fade-out", .integer(0...48_000), default: nil, unit: "frames", live: true,
                    summary: "Fade-out length before a break, at most `length` (the default); live, from the next break."),
            ])
    ) { parameters in
        let length = parameters.integer("length")
        for name in ["fade-in", "fade-out"] where parameters[name] != nil && parameters.integer(name) > length {
            throw NodeCreationError(
                "\(name) \(parameters.integer(name)) is longer than the look-ahead (length \(length)): a fade cannot be longer than what the fader holds",
                fix: "raise `length` to at least \(parameters.integer(name)), or shorten `\(name)`", parameter: name)
        }
        return FaderNode(
            length: length, gain: Float(parameters.double("gain")), ramp: parameters.double("ramp"),
            fadeIn: parameters["fade-in"] == nil ? nil : parameters.integer("fade-in"),
            fadeOut: parameters["fade-out"] == nil ? nil : parameters.integer("fade-out"))
    }

    /// 20 ms: long enough that no gain change clicks, short enough to feel immediate.
    public static let defaultRamp = 0.02
    /// The live parameters' indices among the type's parameters, as live changes name them.
    public static let gainParameter = 1
    public static let rampParameter = 2
    public static let fadeInParameter = 3
    public static let fadeOutParameter = 4

    // The two fields the frame kernel reads come first, on the object's first cache line.
    // SAFETY: `fader`, unretained, for `process` on the audio thread (binding the optional
    // retains and releases it every call); set with it, and `fader` keeps it alive.
    private var faderRef: Unmanaged<Fader>?
    /// Input frames taken since the stream began: with the fader's output count, says
    /// whether it holds anything.
    private var framesConsumed = 0

    public let length: Int
    /// The gain the graph file gave; live changes move the fader's own (`currentGain`).
    public let gain: Float
    public let ramp: Double
    /// The fades the graph file gave (`length` when it gave none); live changes move the
    /// fader's own (`Fader.fadeInLength`, `Fader.fadeOutLength`).
    public let fadeIn: Int
    public let fadeOut: Int
    private var rampFrames = 0
    private var rate = 0
    private var fader: Fader? {
        didSet { faderRef = fader.map { .passUnretained($0) } }
    }
    /// The gain went to a playhead (`handOverOutputGains`): the fader's own stays at 1.
    private var gainHandedOver = false
    /// `framesConsumed` at the last break: frames held from before it are already faded out
    /// and on their way, so a drain has nothing new to shape.
    private var shapedThrough = 0

    /// - Parameters:
    ///   - fadeIn: frames, at most `length`; nil for `length`.
    ///   - fadeOut: frames, at most `length`; nil for `length`.
    public init(
        length: Int = Fader.defaultFadeLength, gain: Float = 1, ramp: Double = FaderNode.defaultRamp,
        fadeIn: Int? = nil, fadeOut: Int? = nil
    ) {
        precondition(length >= 0 && ramp >= 0, "a fade or ramp cannot be negative")
        precondition((fadeIn ?? 0) >= 0 && (fadeOut ?? 0) >= 0, "a fade cannot be negative")
        self.length = length
        self.gain = gain
        self.ramp = ramp
        self.fadeIn = min(fadeIn ?? length, length)
        self.fadeOut = min(fadeOut ?? length, length)
    }

    /// The gain applied to the next output frame (moving, during a ramp).
    public var currentGain: Float { fader?.gain ?? gain }

    /// The fade lengths the next break will use.
    public var currentFadeLengths: (in: Int, out: Int) { fader.map { ($0.fadeInLength, $0.fadeOutLength) } ?? (fadeIn, fadeOut) }

    public func apply(_ change: ParameterChange) {
        switch change.parameter {
        case Self.gainParameter: fader?.setGain(Float(change.value), rampFrames: rampFrames)
        case Self.rampParameter where change.value.isFinite && change.value >= 0:
            rampFrames = Int((min(change.value, 10) * Double(rate)).rounded())
        case Self.fadeInParameter, Self.fadeOutParameter:
            guard let fader, change.value.isFinite, let frames = ExternalNumber.clamped(change.value, to: 0...length) else { return }
            fader.setFadeLengths(
                in: change.parameter == Self.fadeInParameter ? frames : fader.fadeInLength,
                out: change.parameter == Self.fadeOutParameter ? frames : fader.fadeOutLength)
        default: break
        }
    }

    /// The gain is one number for every channel.
    public var outputGainsAreUniform: Bool { true }

    /// The fades shape the stream here; only the gain and its ramp go to a playhead.
    public var outputGainParameters: [Int] { [Self.gainParameter, Self.rampParameter] }

    /// Fades and a gain scale each channel by itself.
    public var keepsChannelsApart: Bool { true }

    public func handOverOutputGains(sampleRate: Int) -> any OutputGains {
        gainHandedOver = true
        fader?.setGain(1, rampFrames: 0)
        return FaderGains(gain: gain, rampFrames: Int((ramp * Double(sampleRate)).rounded()), rate: sampleRate)
    }

    /// The look-ahead: output lags input by the fade length.
    public var latencyFrames: Int { length }

    /// With no look-ahead the fader holds nothing: a period in is a period out.
    public var processesFrameForFrame: Bool { length == 0 }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        let (rate, channels) = try ProcessorFormats.frames(inputs)
        return [.frames(rate: rate, channels: channels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let input = context.inputFormats.first, case .frames(let rate, let channels) = input else {
            throw ProcessorFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        let fader = Fader(channels: channels, fadeLength: length)
        fader.setFadeLengths(in: fadeIn, out: fadeOut)
        fader.setGain(gainHandedOver ? 1 : gain, rampFrames: 0)
        rampFrames = Int((ramp * Double(rate)).rounded())
        self.rate = rate
        self.fader = fader
        framesConsumed = 0
        shapedThrough = 0
    }

    public func process(_ io: inout ProcessIO) {
        guard let faderRef else { return }
        let (consumed, produced) = faderRef._withUnsafeGuaranteedRef { $0.process(io.frames(input: 0), into: io.frames(output: 0)) }
        framesConsumed += consumed
        io.consume(consumed, input: 0)
        io.produce(produced, output: 0)
    }

    /// With no look-ahead, a period in the JACK cycle is a copy and the gain: done on the
    /// period's buffers by one call (`Fader.processFrameForFrame`), as a C client would.
    public var frameKernel: FrameKernel? {
        guard length == 0 else { return nil }
        // SAFETY: the node outlives its slot's periods, which hold it; unretained here.
        return FrameKernel(context: Unmanaged.passUnretained(self).toOpaque(), function: Self.kernelPeriod)
    }

    private static let kernelPeriod: FrameKernel.Function = { context, input, output, samples in
        // SAFETY: `context` is this node (`frameKernel`), alive while its slot runs.
        Unmanaged<FaderNode>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.kernelPeriod(input, output, samples) }
    }

    @inline(__always)
    private func kernelPeriod(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>, _ samples: Int) -> Bool {
        guard let faderRef,
            let frames = faderRef._withUnsafeGuaranteedRef({ $0.processFrameForFrame(input, into: output, samples: samples) })
        else { return false }
        framesConsumed += frames
        return true
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        guard let fader else { return }
        var batch = MarkerBatch()
        fader.receive(marker, emitting: &batch)
        if marker.breaksContinuity { shapedThrough = framesConsumed }
        io.emit(batch, on: 0)
    }

    /// Fades out what is held, as a discontinuity would, and writes what the output has room
    /// for; `process` calls with empty input write the rest. With nothing held that is not
    /// already faded out, it does nothing (and emits no marker).
    public func drain(_ io: inout ProcessIO) {
        guard let fader, framesConsumed > shapedThrough, framesConsumed > fader.framesProduced else { return }
        receive(Marker(position: framesConsumed, event: .discontinuity, isDiscontinuous: true), on: 0, &io)
        process(&io)
    }

    /// The gain is kept, as `Fader.reset` keeps it.
    public func reset() {
        fader?.reset()
        framesConsumed = 0
        shapedThrough = 0
    }

    public func deactivate() {
        fader = nil
    }
}

/// A fader's `gain` and `ramp` as a playhead applies them (`FaderNode.handOverOutputGains`).
final class FaderGains: OutputGains {
    private var value: Float
    private(set) var rampFrames: Int
    private let rate: Int

    init(gain: Float, rampFrames: Int, rate: Int) {
        value = gain
        self.rampFrames = rampFrames
        self.rate = rate
    }

    func gain(channel: Int) -> Float { value }

    func apply(_ change: ParameterChange) {
        guard change.value.isFinite else { return }
        switch change.parameter {
        case FaderNode.gainParameter: value = Float(min(max(change.value, 0), 4))
        case FaderNode.rampParameter: rampFrames = Int((min(max(change.value, 0), 10) * Double(rate)).rounded())
        default: break
        }
    }
}
