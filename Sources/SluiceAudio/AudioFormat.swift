/// How one sample is stored in a byte stream. All formats are little-endian and signed
/// integers are two's complement, as providers and WAV files deliver them.
public enum SampleFormat: String, CaseIterable, Hashable, Sendable, BitwiseCopyable,
    CustomStringConvertible
{
    /// 16-bit signed integer.
    case s16le
    /// 24-bit signed integer packed in 3 bytes.
    case s24le
    /// 32-bit signed integer.
    case s32le
    /// IEEE-754 32-bit float; full scale is ±1.0.
    case f32le

    /// Bytes one sample of one channel takes.
    @inlinable
    public var bytesPerSample: Int {
        switch self {
        case .s16le: 2
        case .s24le: 3
        case .s32le, .f32le: 4
        }
    }

    /// Parses a name as written in graph files, such as `s16le` or `S16LE`.
    public init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    public var description: String { rawValue.uppercased() }
}

/// A PCM stream's layout: sample format, interleaved channel count and rate.
public struct PCMFormat: Hashable, Sendable, BitwiseCopyable, CustomStringConvertible {
    public var sampleFormat: SampleFormat
    public var channels: Int
    /// Frames per second.
    public var sampleRate: Int

    public init(_ sampleFormat: SampleFormat, channels: Int, sampleRate: Int) {
        precondition(channels > 0, "a PCM format needs at least one channel")
        precondition(sampleRate > 0, "a PCM format needs a positive sample rate")
        self.sampleFormat = sampleFormat
        self.channels = channels
        self.sampleRate = sampleRate
    }

    /// Bytes one frame (one sample of every channel) takes.
    @inlinable
    public var bytesPerFrame: Int { sampleFormat.bytesPerSample * channels }

    /// The same layout with Float32 samples: what the aligner produces from it.
    public var float32: PCMFormat { PCMFormat(.f32le, channels: channels, sampleRate: sampleRate) }

    /// `S16LE 24000 Hz mono`, as errors and `sluice dot` print it.
    public var description: String {
        let layout =
            switch channels {
            case 1: "mono"
            case 2: "stereo"
            default: "\(channels) ch"
            }
        return "\(sampleFormat) \(sampleRate) Hz \(layout)"
    }
}
