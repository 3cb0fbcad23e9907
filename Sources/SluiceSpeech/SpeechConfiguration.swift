import SluiceGraph

/// When playback starts: the speech-facing names of the graph's playback strategies
/// (docs/flow-control.md has the rules and the `auto` formula).
public enum SpeechStrategy: Sendable, Hashable, CustomStringConvertible {
    /// As soon as a period of audio is there: lowest latency, underruns when synthesis is
    /// slower than real time.
    case stream
    /// Once this many seconds are buffered (or the text has all been spoken).
    case buffered(seconds: Double)
    /// Once enough is buffered that, at the provider's measured speed, the rest will not run dry.
    case auto
    /// Once everything is synthesised: never an underrun, the longest wait.
    case generateFirst

    /// The playback settings it stands for, over `base`.
    func apply(to base: PlaybackSettings) -> PlaybackSettings {
        var settings = base
        switch self {
        case .stream: settings.strategy = .stream
        case .buffered(let seconds):
            settings.strategy = .buffered
            settings.watermark = seconds
        case .auto: settings.strategy = .auto
        case .generateFirst: settings.strategy = .generateFirst
        }
        return settings
    }

    public var description: String {
        switch self {
        case .stream: "stream"
        case .buffered(let seconds): "buffered(\(seconds) s)"
        case .auto: "auto"
        case .generateFirst: "generate-first"
        }
    }
}

/// Where the speech goes.
public enum SpeechOutput: Sendable, Hashable {
    /// Into JACK, through the graph's `jack.sink`, on this server (nil: the one the graph or
    /// `$JACK_DEFAULT_SERVER` names, then "default").
    case jack(server: String?)
    /// Rendered offline into a sound file (WAV as 32-bit float; FLAC as 24-bit when the path
    /// ends in `.flac`) in place of the graph's sink, as fast as synthesis allows.
    case file(path: String)
}

/// Which graph speaks.
public enum SpeechGraphChoice: Sendable, Hashable {
    /// The standard speech graph: provider → aligner → resampler → crossfader → fader →
    /// channel map (stereo) → `jack.sink` (``SpeechGraph/standardYAML``).
    case standard
    /// A graph file with one text-driven source (a provider, or `morse`).
    case file(path: String)
    /// A graph built in code.
    case description(GraphDescription)
}

/// How a ``SpeechController`` speaks. Every field has a default: `SpeechConfiguration()`
/// speaks through espeak into JACK with the graph's own playback settings.
public struct SpeechConfiguration: Sendable {
    public var graph: SpeechGraphChoice = .standard
    /// The provider node type (`espeak`, `openai`, `elevenlabs`, `http-pcm`, a plugin of your
    /// own) that replaces the graph's text-driven source, with only `voice` and `settings` as
    /// its parameters. Nil keeps the graph's source as declared.
    public var provider: String?
    /// The provider's `voice` parameter.
    public var voice: String?
    /// Further provider parameters, by name (`rate: "190"`, `model: "tts-1"`), as a graph file
    /// would write them.
    public var settings: [String: String] = [:]
    /// How an error names where `provider`, `voice` and `settings` came from: `sluice speak`
    /// sets its options (`error: --set rate=fast: parameter 'rate' … must be …`), so a
    /// message names what the user typed, never a line of the standard graph.
    public var sourceNames = SourceNames()

    /// The words errors put before a value of `provider`, `voice` or `settings`.
    public struct SourceNames: Sendable, Hashable {
        public var provider: String
        public var voice: String
        /// Before `name=value`.
        public var setting: String

        public init(provider: String = "provider", voice: String = "voice", setting: String = "setting") {
            self.provider = provider
            self.voice = voice
            self.setting = setting
        }
    }
    /// Nil keeps the graph's `playback:` strategy.
    public var strategy: SpeechStrategy?
    /// The most audio the sink holds, in seconds (upstream waits when it is full). Nil keeps
    /// the graph's `max-buffered`.
    public var maxBuffered: Double?
    public var output: SpeechOutput = .jack(server: nil)
    /// The synthesis cache: whole utterances already synthesised with the same provider and
    /// settings play from it. Nil: no cache.
    public var cache: SynthesisCache?
    /// How streamed text is cut into utterances for providers that need whole ones.
    public var chunker = SentenceChunker()
    /// Folders searched for plugins before the standard search path (docs/plugins.md).
    public var pluginFolders: [String] = []
    /// Whether plugins in a graph file's own folder are loaded (opening a library runs its
    /// code, and a graph file may come from elsewhere with libraries beside it). Off by
    /// default; `sluice speak --trust-graph-folder` turns it on. docs/plugins.md.
    public var trustGraphFolder = false
    /// Called on the controller's thread at each change: new audio reached the sink, or more
    /// of it played (every few milliseconds while speaking): the samples so far and the
    /// timings. Returning false cancels, as `cancel()` does.
    public var progress: (@Sendable (SpeechProgress) -> Bool)?
    /// Whether the result's report carries the run over time (`RunReport.timeline`: buffer
    /// fill, first audio, underruns, utterances), as `sluice speak --timeline` draws it.
    public var recordsTimeline = false

    public init() {}
}
