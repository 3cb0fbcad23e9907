import SluiceGraph

/// What a progress callback is told. Samples are frames at the sink's rate.
public struct SpeechProgress: Sendable, Hashable {
    /// Frames that reached the sink so far (synthesised and carried through the graph).
    public var samplesGenerated: Int
    /// Frames played so far.
    public var samplesPlayed: Int
    /// The sink's rate, in Hz.
    public var sampleRate: Int
    /// Seconds of audio played: `samplesPlayed / sampleRate`, never past the audio scheduled.
    public var playbackTime: Double
    /// Seconds still to buffer before playback starts (0 while playing); nil while `auto` is
    /// still measuring or `generateFirst` waits for the end.
    public var secondsToBuffer: Double?
    /// Wall seconds since `start()`.
    public var elapsed: Double
    /// Graph seconds from `start()` to the first audio in the sink's buffer, once it came.
    public var timeToFirstBuffer: Double?
}

/// Which part of the text was heard, from the markers of the audio played: exact to the word
/// for providers that report word timing (an utterance cut off midway counts as heard up to
/// the end of its last word heard whole), else exact to the utterance (one cut off midway is
/// `interrupted`, not heard). `granularity` says which.
public struct HeardText: Sendable, Hashable {
    /// How exact `heard` is.
    public enum Granularity: String, Sendable, Hashable, Codable {
        case word, utterance
    }

    /// The text from its start to the end of the last word (or, by utterance, the last
    /// utterance) played to its end.
    public var heard: String
    /// The utterance that was playing when speech stopped, when one was cut off.
    public var interrupted: String?
    /// The word that was playing when speech stopped (word granularity only).
    public var interruptedWord: String?
    public var granularity: Granularity
    /// Everything after `heard` (the interrupted word or utterance included), whitespace
    /// trimmed at the start: where a conversation resumes.
    public var remainder: String
    /// Utterances played to their end.
    public var completedUtterances: Int

    public init(
        heard: String = "", interrupted: String? = nil, interruptedWord: String? = nil, granularity: Granularity = .utterance,
        remainder: String = "", completedUtterances: Int = 0
    ) {
        self.heard = heard
        self.interrupted = interrupted
        self.interruptedWord = interruptedWord
        self.granularity = granularity
        self.remainder = remainder
        self.completedUtterances = completedUtterances
    }
}

/// One utterance as it played: its text and when, in seconds of played audio.
public struct PlayedUtterance: Sendable, Hashable, Codable {
    public var text: String
    /// UTF-8 byte range in the whole text.
    public var textRange: Range<Int>
    public var start: Double
    /// Nil when it was cut off.
    public var end: Double?
    /// Its words that began to play, from providers with word timing (empty otherwise).
    public var words: [PlayedWord] = []
}

/// One word as it played, from a provider's word timing.
public struct PlayedWord: Sendable, Hashable, Codable {
    public var text: String
    /// UTF-8 byte range in the whole text.
    public var textRange: Range<Int>
    /// Seconds of played audio when it began.
    public var start: Double
}

/// The figures at the end of a speech.
public struct SpeechTimings: Sendable, Hashable, Codable {
    /// Graph seconds from `start()` to the first audio in the sink's buffer.
    public var timeToFirstBuffer: Double?
    /// Graph seconds from `start()` to the start of playback.
    public var timeToFirstAudio: Double?
    /// Into JACK: wall seconds from the first text given (`yield`) to the JACK callback that
    /// played the first sample.
    public var firstAudioAfterText: Double?
    /// Seconds the provider took per second of audio (below 1: faster than real time).
    public var realTimeFactor: Double?
    public var underruns: Int
    /// Seconds of audio played.
    public var audioSeconds: Double
    /// Wall seconds from `start()` to the end.
    public var wallSeconds: Double
}

/// How a speech ended: everything a caller may want afterwards.
public struct SpeechResult: Sendable, Hashable {
    public var timings: SpeechTimings
    public var heard: HeardText
    public var utterances: [PlayedUtterance]
    public var cancelled: Bool
    /// The run's full report (counters, peak buffering, watermark, failures).
    public var report: RunReport
}
