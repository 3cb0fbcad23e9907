import SluicePluginKit

/// The parameters every HTTP provider shares: how much audio it holds, how long it waits,
/// how often it retries.
public struct HTTPOptions: Sendable, Hashable {
    /// Seconds of audio held ahead of the graph at most (the transfer pauses beyond).
    public var bufferSeconds: Double
    public var connectTimeout: Double
    /// Seconds without data (while not paused by backpressure) before a transfer is abandoned.
    public var stallTimeout: Double
    /// Retries of a request the server asks to retry (busy, too many concurrent requests).
    public var retries: Int
    /// The first retry's delay; each further retry doubles it.
    public var retryDelay: Double
    /// The most audio one utterance may bring: a server that streams on and on (a broken
    /// endpoint, a hostile one) ends with the error `utterance-too-long` instead of playing
    /// or writing forever.
    public var maximumUtteranceSeconds: Double
    /// The longest one utterance may take, from its request (or, streaming, from its text's
    /// end) to its last audio, not counting waits for room in the buffer: a server that keeps
    /// the connection busy without finishing (empty messages every second, a byte every few
    /// seconds) ends with the error `utterance-timeout` instead of holding the run for ever.
    public var utteranceTimeout: Double

    /// The shared parameters, to append to a provider's own.
    public static let parameters: [Parameter] = [
        Parameter("buffer", .number(0.1...600), default: .number(2), unit: "s",
                  summary: "Most audio held ahead of the graph; the transfer pauses beyond it (bounded memory)."),
        Parameter("connect-timeout", .number(0.1...120), default: .number(10), unit: "s",
                  summary: "Longest wait for the server to accept the connection."),
        Parameter("stall-timeout", .number(0.1...600), default: .number(10), unit: "s",
                  summary: "Longest wait for data while the transfer is not paused; then the error 'stalled'."),
        Parameter("retries", .integer(0...10), default: .integer(3),
                  summary: "Retries of a request the server asks to retry (busy, too many concurrent requests)."),
        Parameter("retry-delay", .number(0...60), default: .number(0.5), unit: "s",
                  summary: "Delay before the first retry; each further retry doubles it."),
        Parameter("max-utterance", .number(0.1...86_400), default: .number(600), unit: "s",
                  summary: "Most audio one utterance may bring; beyond it the transfer ends with the error 'utterance-too-long'."),
        Parameter("utterance-timeout", .number(0.1...86_400), default: .number(120), unit: "s",
                  summary: "Longest time one utterance may take to arrive, waits for room not counted; then the error 'utterance-timeout'."),
    ]

    public init(_ parameters: Parameters) {
        bufferSeconds = parameters.double("buffer") ?? 2
        connectTimeout = parameters.double("connect-timeout") ?? 10
        stallTimeout = parameters.double("stall-timeout") ?? 10
        retries = parameters.integer("retries") ?? 3
        retryDelay = parameters.double("retry-delay") ?? 0.5
        maximumUtteranceSeconds = parameters.double("max-utterance") ?? 600
        utteranceTimeout = parameters.double("utterance-timeout") ?? 120
    }

    /// `maximumUtteranceSeconds` in whole frames of `format`, as bytes.
    public func maximumUtteranceBytes(for format: PCMFormat) -> Int {
        Int(maximumUtteranceSeconds * Double(format.sampleRate)) * format.frameBytes
    }

    /// The buffer's size in bytes for `format`: whole frames, and at least 64 KiB so a
    /// network chunk (libcurl hands over at most 16 KiB at once) always fits in an empty buffer.
    public func bufferBytes(for format: PCMFormat) -> Int {
        let frameBytes = format.frameBytes
        let wanted = Int(bufferSeconds * Double(format.sampleRate)) * frameBytes
        let minimum = ((64 << 10) + frameBytes - 1) / frameBytes * frameBytes
        return max(wanted, minimum)
    }
}

extension PCMFormat {
    /// Bytes of one frame (a sample of every channel).
    public var frameBytes: Int {
        let sample =
            switch sampleFormat {
            case .s16le: 2
            case .s24le: 3
            case .s32le, .f32le: 4
            }
        return sample * channels
    }
}
