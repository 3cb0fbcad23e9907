import Foundation

/// Float32 WAV files for tests that feed a graph known samples (an impulse, noise).
public enum WAVFile {
    /// Writes `samples` (interleaved, `channels` a frame) at `rate` as a 32-bit float WAV, or
    /// as 16-bit PCM (rounded, clipped) for tools that read only that.
    public static func write(_ samples: [Float], channels: Int, rate: Int, to path: String, sixteenBit: Bool = false) throws {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let bytesPerSample = sixteenBit ? 2 : 4
        let payload = samples.count * bytesPerSample
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + payload))
        data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); append(UInt32(16))
        append(UInt16(sixteenBit ? 1 : 3))  // PCM or IEEE float
        append(UInt16(channels)); append(UInt32(rate)); append(UInt32(rate * channels * bytesPerSample))
        append(UInt16(channels * bytesPerSample)); append(UInt16(bytesPerSample * 8))
        data.append(contentsOf: Array("data".utf8)); append(UInt32(payload))
        for sample in samples {
            if sixteenBit {
                append(Int16((Double(sample) * 32768).rounded().clamped(to: -32768...32767)))
            } else {
                append(sample.bitPattern)
            }
        }
        try data.write(to: URL(fileURLWithPath: path))
    }
}

extension Double {
    fileprivate func clamped(to range: ClosedRange<Double>) -> Double { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
