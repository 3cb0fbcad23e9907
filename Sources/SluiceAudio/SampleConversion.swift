// Conversions between packed little-endian samples and Float32.
//
// Integer → float divides by 2^(bits-1): the most negative code maps to exactly -1.0 and the
// most positive to just under +1.0 (32767 → 0.999969482421875). Float → integer multiplies by
// the same power of two, rounds to nearest (ties away from zero), and clips to the integer
// range, so +1.0 and anything above it become the largest code. NaN becomes 0. These rules make
// every 16- and 24-bit code survive a round trip exactly.
//
// The functions never allocate; they run on the worker thread inside the aligner.

public enum SampleConversion {
    // MARK: Single samples

    /// Reads the sample at `bytes` (no alignment needed) and returns it as Float32.
    @inlinable @inline(__always)
    public static func decode(_ bytes: UnsafeRawPointer, as format: SampleFormat) -> Float {
        switch format {
        case .s16le:
            return Float(Int16(littleEndian: bytes.loadUnaligned(as: Int16.self))) * (1 / 32_768)
        case .s24le:
            let low = UInt32(bytes.load(fromByteOffset: 0, as: UInt8.self))
            let middle = UInt32(bytes.load(fromByteOffset: 1, as: UInt8.self))
            let high = UInt32(bytes.load(fromByteOffset: 2, as: UInt8.self))
            // Place the 24 bits at the top of an Int32, then shift back to sign-extend.
            let value = Int32(bitPattern: (low << 8) | (middle << 16) | (high << 24)) >> 8
            return Float(value) * (1 / 8_388_608)
        case .s32le:
            let value = Int32(littleEndian: bytes.loadUnaligned(as: Int32.self))
            return Float(Double(value) * (1 / 2_147_483_648))
        case .f32le:
            return Float(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)))
        }
    }

    /// Writes `sample` at `bytes` (no alignment needed) in `format`, clipping integers.
    @inlinable @inline(__always)
    public static func encode(
        _ sample: Float, as format: SampleFormat, to bytes: UnsafeMutableRawPointer
    ) {
        switch format {
        case .s16le:
            let code = Int16(clippedCode(Double(sample) * 32_768, min: -32_768, max: 32_767))
            bytes.storeBytes(of: code.littleEndian, as: Int16.self)
        case .s24le:
            let code = UInt32(
                bitPattern: Int32(clippedCode(Double(sample) * 8_388_608, min: -8_388_608, max: 8_388_607)))
            bytes.storeBytes(of: UInt8(truncatingIfNeeded: code), toByteOffset: 0, as: UInt8.self)
            bytes.storeBytes(of: UInt8(truncatingIfNeeded: code >> 8), toByteOffset: 1, as: UInt8.self)
            bytes.storeBytes(of: UInt8(truncatingIfNeeded: code >> 16), toByteOffset: 2, as: UInt8.self)
        case .s32le:
            let code = Int32(
                clippedCode(Double(sample) * 2_147_483_648, min: -2_147_483_648, max: 2_147_483_647))
            bytes.storeBytes(of: code.littleEndian, as: Int32.self)
        case .f32le:
            bytes.storeBytes(of: sample.bitPattern.littleEndian, as: UInt32.self)
        }
    }

    /// Rounds half away from zero and clips to `min...max`; NaN gives 0.
    @inlinable @inline(__always)
    static func clippedCode(_ scaled: Double, min: Double, max: Double) -> Int64 {
        guard !scaled.isNaN else { return 0 }
        return Int64(Swift.min(Swift.max(scaled.rounded(), min), max))
    }

    // MARK: Buffers

    /// Decodes `frames` whole frames of interleaved samples into `destination`.
    ///
    /// - Precondition: `source` holds `frames * channels * bytesPerSample` bytes and
    ///   `destination` holds `frames * channels` samples.
    @inlinable
    public static func decode(
        _ source: UnsafeRawPointer, format: SampleFormat, samples count: Int,
        into destination: UnsafeMutablePointer<Float>
    ) {
        switch format {
        case .s16le:
            // The common speech format gets a loop the compiler can vectorise.
            for index in 0..<count {
                let code = Int16(
                    littleEndian: source.loadUnaligned(fromByteOffset: index &* 2, as: Int16.self))
                destination[index] = Float(code) * (1 / 32_768)
            }
        case .f32le:
            for index in 0..<count {
                let bits = UInt32(
                    littleEndian: source.loadUnaligned(fromByteOffset: index &* 4, as: UInt32.self))
                destination[index] = Float(bitPattern: bits)
            }
        case .s24le, .s32le:
            let stride = format.bytesPerSample
            for index in 0..<count {
                destination[index] = decode(source + index &* stride, as: format)
            }
        }
    }

    /// Encodes `count` samples from `source` into `destination` in `format`, clipping integers.
    @inlinable
    public static func encode(
        _ source: UnsafePointer<Float>, samples count: Int, as format: SampleFormat,
        into destination: UnsafeMutableRawPointer
    ) {
        let stride = format.bytesPerSample
        for index in 0..<count {
            encode(source[index], as: format, to: destination + index &* stride)
        }
    }
}
