import SluiceAudio
import SluiceGraph

/// The `channel-map` node: rearranges channels. Wraps `ChannelMap`.
///
/// Without a routing: equal channel counts pass through, mono is copied to every output
/// channel, and N channels to mono are averaged (stereo to mono is `ChannelMap.stereoToMono`).
/// Other counts need a routing, so channels are never guessed.
///
/// Markers: pass through at the same positions (the node is 1:1). Drain: nothing held.
public final class ChannelMapNode: ProcessorNode {
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
            ])
    ) { parameters in
        let channels = parameters.integer("channels")
        guard parameters["routing"] != nil else { return ChannelMapNode(channels: channels) }
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
        return ChannelMapNode(channels: channels, routing: routing)
    }

    public let outputChannels: Int
    /// Per output channel, the input channel it copies (nil: silence); nil for the defaults.
    public let routing: [Int?]?
    private var map: ChannelMap?

    public init(channels: Int = 2, routing: [Int?]? = nil) {
        precondition(channels > 0, "a channel map needs an output channel")
        precondition(routing == nil || routing!.count == channels, "one routing entry per output channel")
        outputChannels = channels
        self.routing = routing
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
        io.consume(frames, input: 0)
        io.produce(frames, output: 0)
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        io.emit(marker, on: 0)
    }

    public func deactivate() {
        map = nil
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
