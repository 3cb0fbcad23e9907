/// Why a channel map could not be made.
public enum ChannelMapError: Error, Equatable, Sendable, CustomStringConvertible {
    case noChannels
    case ragged(row: Int, expected: Int, found: Int)
    case sourceOutOfRange(output: Int, source: Int, inputChannels: Int)

    public var description: String {
        switch self {
        case .noChannels:
            "a channel map needs at least one input and one output channel"
        case .ragged(let row, let expected, let found):
            "row \(row) of the matrix has \(found) gains; every row needs one per input channel (\(expected))"
        case .sourceOutOfRange(let output, let source, let inputChannels):
            "output channel \(output) takes input channel \(source), but the input has channels 0..<\(inputChannels)"
        }
    }
}

/// Rearranges channels: every output channel is a weighted sum of the input channels.
/// Built from a matrix, from a routing list, or as the common mono ↔ stereo maps. A map whose
/// rows each pick one input at gain 1 copies samples exactly.
///
/// Threading: one thread at a time (the graph worker). `process` never allocates.
public final class ChannelMap {
    public let inputChannels: Int
    public let outputChannels: Int
    /// `outputChannels × inputChannels` gains, row by row.
    private let matrix: UnsafeMutablePointer<Float>
    /// For each output channel, the one input it copies, or -1 when it mixes or is silent.
    private let route: UnsafeMutablePointer<Int>

    /// Output channel `o` = Σ `matrix[o][i]` × input channel `i`.
    public init(matrix rows: [[Float]]) throws(ChannelMapError) {
        guard let width = rows.first?.count, width > 0 else { throw .noChannels }
        for (index, row) in rows.enumerated() where row.count != width {
            throw .ragged(row: index, expected: width, found: row.count)
        }
        inputChannels = width
        outputChannels = rows.count
        matrix = .allocate(capacity: width * rows.count)
        route = .allocate(capacity: rows.count)
        for (output, row) in rows.enumerated() {
            (matrix + output * width).initialize(from: row, count: width)
            let picked = row.indices.filter { row[$0] != 0 }
            route[output] = picked.count == 1 && row[picked[0]] == 1 ? picked[0] : -1
        }
    }

    /// Output channel `o` copies input channel `sources[o]`; nil leaves it silent.
    public convenience init(inputChannels: Int, routing sources: [Int?]) throws(ChannelMapError) {
        guard inputChannels > 0, !sources.isEmpty else { throw .noChannels }
        var rows: [[Float]] = []
        for (output, source) in sources.enumerated() {
            var row = [Float](repeating: 0, count: inputChannels)
            if let source {
                guard (0..<inputChannels).contains(source) else {
                    throw .sourceOutOfRange(output: output, source: source, inputChannels: inputChannels)
                }
                row[source] = 1
            }
            rows.append(row)
        }
        try self.init(matrix: rows)
    }

    /// Mono to stereo: both outputs copy the one input.
    public static func monoToStereo() -> ChannelMap {
        // The matrix is well formed, so this cannot throw.
        try! ChannelMap(matrix: [[1], [1]])
    }

    /// Stereo to mono: the average of left and right (−6 dB each, so full-scale identical
    /// channels stay full scale).
    public static func stereoToMono() -> ChannelMap {
        try! ChannelMap(matrix: [[0.5, 0.5]])
    }

    deinit {
        matrix.deallocate()
        route.deallocate()
    }

    /// The gain from input channel `input` into output channel `output`.
    public func gain(output: Int, input: Int) -> Float { matrix[output * inputChannels + input] }

    /// Maps `frames` interleaved frames from `input` (`inputChannels` wide) to `output`
    /// (`outputChannels` wide).
    public func process(
        _ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>
    ) {
        for frame in 0..<frames {
            let source = input + frame * inputChannels
            let target = output + frame * outputChannels
            for channel in 0..<outputChannels {
                let picked = route[channel]
                if picked >= 0 {
                    target[channel] = source[picked]
                } else {
                    let gains = matrix + channel * inputChannels
                    var sum: Float = 0
                    for inputChannel in 0..<inputChannels { sum += gains[inputChannel] * source[inputChannel] }
                    target[channel] = sum
                }
            }
        }
    }
}
