import SluiceAudio
import SluiceGraph

/// The `channel-map` node: rearranges channels. Wraps `ChannelMap`.
///
/// Without a routing: equal channel counts pass through, mono is copied to every output
/// channel, and N channels to mono are averaged (stereo to mono is `ChannelMap.stereoToMono`).
/// Other counts need a routing, so channels are never guessed.
///
/// Live: `gain` (on every output channel) and `pan` (the balance of a stereo output: centre
/// leaves both sides at 0 dB, −1 silences the right, 1 the left, linearly) may change while
/// the graph plays; each output channel's gain moves there in a straight line over
/// `rampSeconds`. Before a sink's buffer, a live run hands them to the sink's playhead
/// (`OutputGainNode`), which applies them to what it plays, so a change is heard within a
/// period.
///
/// Markers: pass through at the same positions (the node is 1:1). Drain: nothing held.
public final class ChannelMapNode: OutputGainNode, GainTransparentNode {
    public static let type = NodeType(
        NodeDescriptor(
            typeName: "channel-map", kind: .processor,
            summary: "Rearranges channels: copies mono to N, averages N to mono, or follows a routing.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames")],
            outputs: [PortDescriptor("out", .frames, summary: "Float32 frames with `channels` channels, same rate")],
            parameters: [
                ParameterDescriptor(
                    "channels", .integer(1...64), default: .integer(2),
                    summary: "Output channel count."),
                ParameterDescriptor(
                    "routing", .list, default: nil,
                    summary: "Per output channel, the input channel it copies (0 is the first) or - for silence."),
                ParameterDescriptor(
                    "gain", .number(0...4), default: .number(1), live: true,
                    summary: "Linear gain on every output channel; changes move there over 20 ms."),
                ParameterDescriptor(
                    "pan", .number(-1...1), default: .number(0), live: true,
                    summary: "Balance of a stereo output: 0 leaves both sides as they are, -1 silences the right, 1 the left (linear); changes move there over 20 ms."),
            ])
    ) { parameters in
        let channels = parameters.integer("channels")
        let gain = Float(parameters.double("gain")), pan = Float(parameters.double("pan"))
        if parameters.isGiven("pan") && pan != 0 && channels != 2 {
            throw NodeCreationError(
                "`pan` balances a stereo output, and this map has \(channels) channels",
                fix: "leave `pan` out, or set `channels: 2`", parameter: "pan")
        }
        guard parameters["routing"] != nil else { return ChannelMapNode(channels: channels, gain: gain, pan: pan) }
        let entries = parameters.list("routing")
        guard entries.count == channels else {
            throw NodeCreationError(
                "routing names \(entries.count) output channels but `channels` is \(channels)",
                fix: "give one entry per output channel, or set `channels: \(entries.count)`", parameter: "routing")
        }
        var routing: [Int?] = []
        for entry in entries {
            let text = ProcessorFormats.trimmed(entry)
            if text == "-" {
                routing.append(nil)
            } else if let source = Int(text), source >= 0 {
                routing.append(source)
            } else {
                throw NodeCreationError(
                    "routing entry '\(entry)' is neither an input channel nor -",
                    fix: "give input channel numbers counted from 0, or - for silence", parameter: "routing")
            }
        }
        return ChannelMapNode(channels: channels, routing: routing, gain: gain, pan: pan)
    }

    /// `gain`'s and `pan`'s indices among the type's parameters, as live changes name them.
    public static let gainParameter = 2
    public static let panParameter = 3
    /// How long a live change of `gain` or `pan` takes: short enough to feel immediate, long
    /// enough not to click (the fader's default ramp).
    public static let rampSeconds = 0.02

    public let outputChannels: Int
    /// Per output channel, the input channel it copies (nil: silence); nil for the defaults.
    public let routing: [Int?]?
    private var map: ChannelMap?
    /// The gain and pan the graph gave, and those live changes set.
    public private(set) var gain: Float
    public private(set) var pan: Float
    // SAFETY: one ramp per output channel, allocated in `prepare`, freed in `deactivate`; used
    // by one thread at a time (the graph's rule).
    private var ramps: UnsafeMutableBufferPointer<GainRamp>?
    /// True while every output gain is exactly 1: the map's output passes untouched.
    private var unity = true
    private var rampFrames = 0

    public init(channels: Int = 2, routing: [Int?]? = nil, gain: Float = 1, pan: Float = 0) {
        precondition(channels > 0, "a channel map needs an output channel")
        precondition(routing == nil || routing!.count == channels, "one routing entry per output channel")
        outputChannels = channels
        self.routing = routing
        self.gain = gain
        self.pan = pan
    }

    deinit { ramps?.deallocate() }

    /// Output channel `channel`'s gain for `gain` and `pan`.
    func outputGain(_ channel: Int) -> Float {
        gainsHandedOver ? 1 : Self.outputGain(channel, of: outputChannels, gain: gain, pan: pan)
    }

    /// Output channel `channel`'s gain, of `channels`, for `gain` and `pan` (a stereo output's
    /// balance; any other has one gain for all).
    static func outputGain(_ channel: Int, of channels: Int, gain: Float, pan: Float) -> Float {
        guard channels == 2 else { return gain }
        let side: Float = channel == 0 ? min(1, 1 - pan) : min(1, 1 + pan)
        return gain * side
    }

    /// The gains went to a playhead (`handOverOutputGains`): the map's own stay at 1.
    private var gainsHandedOver = false

    /// Only a stereo output has a balance.
    public var outputGainsAreUniform: Bool { outputChannels != 2 }

    public var outputGainParameters: [Int] { [Self.gainParameter, Self.panParameter] }

    /// Mono copied to stereo, or stereo averaged: channels mix.
    public var keepsChannelsApart: Bool { false }

    public func handOverOutputGains(sampleRate: Int) -> any OutputGains {
        gainsHandedOver = true
        if let ramps {
            for channel in 0..<outputChannels { ramps[channel] = GainRamp(1) }
        }
        unity = true
        return ChannelMapGains(
            channels: outputChannels, gain: gain, pan: pan, rampFrames: Int((Self.rampSeconds * Double(sampleRate)).rounded()))
    }

    public func apply(_ change: ParameterChange) {
        guard let ramps, change.value.isFinite, !gainsHandedOver else { return }
        switch change.parameter {
        case Self.gainParameter: gain = Float(min(max(change.value, 0), 4))
        case Self.panParameter: pan = Float(min(max(change.value, -1), 1))
        default: return
        }
        for channel in 0..<outputChannels { ramps[channel].ramp(to: outputGain(channel), over: rampFrames) }
        unity = false
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        let (rate, channels) = try ProcessorFormats.frames(inputs)
        _ = try matrix(inputChannels: channels)
        return [.frames(rate: rate, channels: outputChannels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let input = context.inputFormats.first, case .frames(_, let channels) = input else {
            throw ProcessorFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        map = try ChannelMap(matrix: matrix(inputChannels: channels))
        if case .frames(let rate, _)? = context.inputFormats.first { rampFrames = Int((Self.rampSeconds * Double(rate)).rounded()) }
        ramps?.deallocate()
        let ramps = UnsafeMutableBufferPointer<GainRamp>.allocate(capacity: outputChannels)
        for channel in 0..<outputChannels { ramps[channel] = GainRamp(outputGain(channel)) }
        self.ramps = ramps
        unity = (0..<outputChannels).allSatisfy { ramps[$0].isUnity }
    }

    /// Each frame in is one frame out, mapped.
    public var processesFrameForFrame: Bool { true }

    public func process(_ io: inout ProcessIO) {
        guard let map else { return }
        let frames = min(io.available(input: 0), io.room(output: 0))
        guard frames > 0, let source = io.frames(input: 0).baseAddress, let target = io.frames(output: 0).baseAddress
        else { return }
        // SAFETY: both views hold at least `frames` frames of their own channel counts.
        map.process(source, frames: frames, into: target)
        if !unity, let ramps {
            var settled = true
            for channel in 0..<outputChannels {
                ramps[channel].apply(toChannel: channel, of: target, frames: frames, channels: outputChannels)
                settled = settled && ramps[channel].isUnity
            }
            unity = settled
        }
        io.consume(frames, input: 0)
        io.produce(frames, output: 0)
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        io.emit(marker, on: 0)
    }

    public func deactivate() {
        map = nil
        ramps?.deallocate()
        ramps = nil
    }

    /// The gains from `inputChannels` to the output, row by row, or why that input cannot be
    /// mapped.
    func matrix(inputChannels: Int) throws(FormatMismatch) -> [[Float]] {
        if let routing {
            let highest = routing.compactMap { $0 }.max() ?? -1
            guard highest < inputChannels else {
                throw FormatMismatch(
                    input: 0,
                    required: .other("an input with at least \(highest + 1) channels (the routing reads channel \(highest))"))
            }
            return routing.map { source in
                (0..<inputChannels).map { $0 == source ? 1 : 0 }
            }
        }
        if inputChannels == outputChannels {
            return (0..<outputChannels).map { output in (0..<inputChannels).map { $0 == output ? 1 : 0 } }
        }
        if inputChannels == 1 {
            return [[Float]](repeating: [1], count: outputChannels)
        }
        if outputChannels == 1 {
            return [[Float](repeating: 1 / Float(inputChannels), count: inputChannels)]
        }
        throw FormatMismatch(
            input: 0,
            required: .other(
                "a mono or \(channelWord(outputChannels)) input, or a `routing` list giving each of the \(outputChannels) output channels an input channel (0 is the first) or -"
            ))
    }

    private func channelWord(_ channels: Int) -> String {
        channels == 2 ? "stereo" : "\(channels)-channel"
    }
}

/// A channel map's `gain` and `pan` as a playhead applies them
/// (`ChannelMapNode.handOverOutputGains`).
final class ChannelMapGains: OutputGains {
    private let channels: Int
    private var gain: Float
    private var pan: Float
    let rampFrames: Int

    init(channels: Int, gain: Float, pan: Float, rampFrames: Int) {
        self.channels = channels
        self.gain = gain
        self.pan = pan
        self.rampFrames = rampFrames
    }

    func gain(channel: Int) -> Float { ChannelMapNode.outputGain(channel, of: channels, gain: gain, pan: pan) }

    func apply(_ change: ParameterChange) {
        guard change.value.isFinite else { return }
        switch change.parameter {
        case ChannelMapNode.gainParameter: gain = Float(min(max(change.value, 0), 4))
        case ChannelMapNode.panParameter: pan = Float(min(max(change.value, -1), 1))
        default: break
        }
    }
}
