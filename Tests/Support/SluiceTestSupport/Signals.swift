import Foundation

/// Deterministic test signals and measurements.
public enum Signals {
    /// A sine of `frequency` Hz at `amplitude`, `frames` frames long, one channel.
    public static func sine(
        frequency: Double, sampleRate: Int, frames: Int, amplitude: Double = 0.5, phase: Double = 0
    ) -> [Float] {
        (0..<frames).map {
            Float(amplitude * sin(2 * .pi * frequency * Double($0) / Double(sampleRate) + phase))
        }
    }

    /// Uniform white noise in -amplitude...amplitude from a seeded generator.
    public static func noise(count: Int, amplitude: Float = 0.5, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in Float.random(in: -amplitude...amplitude, using: &generator) }
    }

    /// Mean square of a slice.
    public static func power<C: Collection>(_ samples: C) -> Double where C.Element == Float {
        guard !samples.isEmpty else { return 0 }
        return samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)
    }

    /// Signal-to-noise ratio, in dB, of `measured` against the ideal `reference`.
    public static func snr(measured: [Float], reference: [Float]) -> Double {
        precondition(measured.count == reference.count)
        var signal = 0.0
        var noise = 0.0
        for (value, ideal) in zip(measured, reference) {
            signal += Double(ideal) * Double(ideal)
            noise += (Double(value) - Double(ideal)) * (Double(value) - Double(ideal))
        }
        return 10 * log10(signal / max(noise, 1e-300))
    }
}

/// SplitMix64: a small, fast, seedable generator so random tests are reproducible.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// Describes the first difference between two sample arrays, or nil when they are equal.
/// Tests print this instead of whole arrays.
public func firstDifference(_ actual: [Float], _ expected: [Float]) -> String? {
    if actual == expected { return nil }
    if actual.count != expected.count { return "\(actual.count) samples, expected \(expected.count)" }
    let index = actual.indices.first { actual[$0] != expected[$0] }!
    return "sample \(index): \(actual[index]), expected \(expected[index])"
}
