import SluiceAudio

/// One cached synthesis: the audio's PCM layout and its bytes, exactly as the provider
/// delivered them.
public struct CachedAudio: Hashable, Sendable {
    public var format: PCMFormat
    /// Interleaved little-endian samples in ``format``.
    public var bytes: [UInt8]

    public init(format: PCMFormat, bytes: [UInt8]) {
        self.format = format
        self.bytes = bytes
    }
}
