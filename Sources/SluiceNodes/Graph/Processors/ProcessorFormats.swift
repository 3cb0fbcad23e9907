import SluiceGraph

/// Format checks and errors the built-in processors share.
enum ProcessorFormats {
    /// The rate and channel count of frame input `port`, or the mismatch that names it.
    static func frames(_ inputs: [StreamFormat], port: Int = 0) throws(FormatMismatch) -> (rate: Int, channels: Int) {
        guard port < inputs.count, case .frames(let rate, let channels) = inputs[port] else {
            throw FormatMismatch(input: port, required: .medium(.frames))
        }
        return (rate, channels)
    }

    /// `prepare` was given formats `outputFormats` would have refused: a graph bug, reported
    /// as an error rather than a trap so a custom runtime cannot crash the process with it.
    static func unprepared(_ typeName: String, _ formats: [StreamFormat]) -> NodeCreationError {
        NodeCreationError("'\(typeName)' cannot be prepared for inputs \(formats)")
    }

    /// `text` without surrounding spaces and tabs, for list items of parameters.
    static func trimmed(_ text: String) -> Substring {
        var view = Substring(text)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return view
    }
}
