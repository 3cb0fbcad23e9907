import Foundation

/// Gain curves computed once, when a node is created, and only read while it processes.
/// Tables are sampled at the centre of each frame: `(i + 0.5) / length`.
final class FadeCurve: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the table is written in `init` only and read afterwards.
    let length: Int
    private let table: UnsafeMutablePointer<Float>

    private init(length: Int, _ gain: (Double) -> Double) {
        self.length = length
        table = .allocate(capacity: max(length, 1))
        table.initialize(repeating: 1, count: max(length, 1))
        for index in 0..<length {
            table[index] = Float(gain((Double(index) + 0.5) / Double(length)))
        }
    }

    deinit {
        table.deallocate()
    }

    /// Rises from near 0 to near 1: `sin(π/2 · x)`, the incoming side of an equal-power
    /// crossfade.
    static func equalPowerIn(length: Int) -> FadeCurve {
        FadeCurve(length: length) { sin(Double.pi / 2 * $0) }
    }

    /// Falls from near 1 to near 0: `cos(π/2 · x)`, the outgoing side. With `equalPowerIn` of
    /// the same length, `in[i]² + out[i]² = 1` for every `i` (to Float rounding).
    static func equalPowerOut(length: Int) -> FadeCurve {
        FadeCurve(length: length) { cos(Double.pi / 2 * $0) }
    }

    /// Rises from near 0 to near 1 along a raised cosine, `(1 - cos(π·x)) / 2`: no corner at
    /// either end, so edge fades do not click. Its steepest step is about `π / (2 · length)`.
    static func raisedCosineIn(length: Int) -> FadeCurve {
        FadeCurve(length: length) { (1 - cos(Double.pi * $0)) / 2 }
    }

    @inline(__always)
    subscript(index: Int) -> Float { table[index] }

    /// The curve stretched or squeezed to `span` frames: the gain for frame `index` of `span`.
    /// Used when fewer frames than the curve's length are there to fade.
    @inline(__always)
    func value(at index: Int, of span: Int) -> Float {
        span == length ? table[index] : table[index * length / span]
    }

    /// The largest step between neighbouring gains, as a test bound.
    var steepestStep: Float {
        var steepest: Float = length > 0 ? table[0] : 0
        if length > 1 {
            for index in 1..<length { steepest = max(steepest, abs(table[index] - table[index - 1])) }
            steepest = max(steepest, 1 - table[length - 1])
        }
        return steepest
    }
}
