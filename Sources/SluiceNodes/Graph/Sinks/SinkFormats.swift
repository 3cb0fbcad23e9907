import SluiceGraph

/// The format check the built-in sinks share: one input of frames, at the sink's rate and
/// channel count when those are set.
enum SinkFormats {
    /// The input's rate and channels, or the mismatch that names what the sink needs.
    static func check(_ inputs: [StreamFormat], rate: Int?, channels: Int?) throws(FormatMismatch) -> (rate: Int, channels: Int) {
        guard let input = inputs.first, case .frames(let inputRate, let inputChannels) = input else {
            throw FormatMismatch(input: 0, required: .medium(.frames))
        }
        if let rate, rate != inputRate { throw FormatMismatch(input: 0, required: .sampleRate(rate)) }
        if let channels, channels != inputChannels { throw FormatMismatch(input: 0, required: .channels(channels)) }
        return (inputRate, inputChannels)
    }

    /// `prepare` was given formats `outputFormats` would have refused: a graph bug, reported
    /// as an error rather than a trap.
    static func unprepared(_ typeName: String, _ formats: [StreamFormat]) -> NodeCreationError {
        NodeCreationError("'\(typeName)' cannot be prepared for inputs \(formats)")
    }

    /// The `channels` parameter, or nil when absent (take the input's).
    static func channels(_ parameters: NodeParameters) -> Int? {
        parameters["channels"] == nil ? nil : parameters.integer("channels")
    }
}
