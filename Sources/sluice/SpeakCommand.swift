import ArgumentParser
import Foundation
import SluiceGraph
import SluiceTimeline
import SluiceSpeech

struct SpeakCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "speak", _superCommandName: SluiceCommand.name,
        abstract: "Speak text into JACK (or into a file) through a speech graph.",
        discussion: """
            `sluice speak "Hello."` speaks through the standard graph: espeak → aligner → \
            resampler → crossfader → fader → channel map → jack.sink. `sluice speak -` reads \
            standard input as it arrives and speaks each sentence as soon as it is complete, \
            while the rest is still coming (`some-llm | sluice speak -`). Ctrl-C fades out and \
            exits 130. A summary (time to first audio, duration, underruns) goes to standard \
            error; --stats json prints every figure on standard output.
            """
    )


    @Argument(help: "The text, or `-` to read standard input as it arrives.")
    var text: String

    @Option(name: .long, help: "The provider node type (espeak, openai, elevenlabs, http-pcm, or a plugin's).", completion: .shellCommand("sluice nodes --complete provider 2>/dev/null"))
    var provider: String?

    @Option(name: .long, help: "The provider's voice.", completion: .shellCommand("sluice nodes --complete voice 2>/dev/null"))
    var voice: String?

    @Option(help: ArgumentHelp(
        "The text's language, for where its sentences end (default: the voice's, for a voice named by its language: de, en-us).",
        valueName: "tag"))
    var language: String?

    @Option(name: .customLong("set"), help: ArgumentHelp("A provider parameter, as in a graph file (repeatable).", valueName: "name=value"))
    var settings: [String] = []

    @Option(name: .long, help: "A graph file with one text-driven source, in place of the standard graph.", completion: .file(extensions: ["yaml", "yml"]))
    var graph: String?

    @Option(name: .long, help: "When playback starts: stream, buffered, auto, generate-first (default: the graph's).")
    var strategy: StrategyName?

    @Option(name: .long, help: "Seconds buffered before playback starts (the buffered strategy; implies it).")
    var watermark: Double?

    @Option(name: .customLong("max-buffered"), help: "The most seconds of audio the sink holds.")
    var maxBuffered: Double?

    @Option(name: .shortAndLong, help: "Render into this file (.wav, or .flac) instead of playing into JACK (--out is its old name).", completion: .file(extensions: ["wav", "flac"]))
    var output: String?

    /// The spelling before `-o/--output` was the same on every command; still read.
    @Option(name: .customLong("out"), help: .hidden)
    var oldOutput: String?

    /// The file to write, however it was given.
    var outputFile: String? { output ?? oldOutput }

    @Option(name: .long, help: "The JACK server (default: $JACK_DEFAULT_SERVER, then \"default\").")
    var server: String?

    @Flag(name: .customLong("no-cache"), help: "Do not use the synthesis cache ($XDG_CACHE_HOME/sluice).")
    var noCache = false

    @Option(
        name: .customLong("first-clause"),
        help: ArgumentHelp(
            "Speak the first sentence's first clause (at a comma, semicolon, colon or dash) on its own once it has this many characters, so speech starts sooner; 0 keeps the first sentence whole (default \(SentenceChunker.defaultEarlyFirstClause); providers taking text piece by piece never need it).",
            valueName: "characters"))
    var firstClause: Int?

    @Option(name: .long, help: "Print the run's timings and counters: json.")
    var stats: StatsFormat?

    @OptionGroup var timeline: TimelineOption

    @OptionGroup var failures: FailureOptions

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var logging: LoggingOptions

    enum StrategyName: String, ExpressibleByArgument, CaseIterable {
        case stream, buffered, auto
        case generateFirst = "generate-first"
    }

    func validate() throws {
        if text != "-" && text.allSatisfy(\.isWhitespace) {
            throw ValidationError("nothing to speak: the text is empty (give a sentence, or - to read standard input)")
        }
        if let watermark, !(0...60).contains(watermark) { throw ValidationError("--watermark must be 0…60 seconds") }
        if let maxBuffered, !(0.05...600).contains(maxBuffered) { throw ValidationError("--max-buffered must be 0.05…600 seconds") }
        if let firstClause, !(0...10_000).contains(firstClause) { throw ValidationError("--first-clause must be 0…10000 characters") }
        if watermark != nil, let strategy, strategy != .buffered {
            throw ValidationError("--watermark sets the buffered strategy's watermark; it does not apply to --strategy \(strategy.rawValue)")
        }
        for setting in settings where !setting.contains("=") {
            throw ValidationError("--set takes name=value, not '\(setting)'")
        }
        if output != nil && oldOutput != nil { throw ValidationError("give the output file once: -o/--output (--out is its old name)") }
        if let outputFile { try OutputFile.check(outputFile) }
    }

    func run() throws {
        var configuration = SpeechConfiguration()
        if let graph { configuration.graph = .file(path: graph) }
        configuration.provider = provider
        configuration.voice = voice
        configuration.sourceNames = .init(provider: "--provider", voice: "--voice", setting: "--set")
        for setting in settings {
            let parts = setting.split(separator: "=", maxSplits: 1)
            configuration.settings[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        switch strategy {
        case .buffered?: configuration.strategy = .buffered(seconds: watermark ?? PlaybackSettings.defaultWatermark)
        case .stream?: configuration.strategy = .stream
        case .auto?: configuration.strategy = .auto
        case .generateFirst?: configuration.strategy = .generateFirst
        case nil: configuration.strategy = watermark.map { .buffered(seconds: $0) }
        }
        configuration.maxBuffered = maxBuffered
        if let firstClause { configuration.chunker.earlyFirstClause = firstClause == 0 ? nil : firstClause }
        if let language {
            guard let known = SentenceChunker.language(ofVoice: language), known == language else {
                throw ValidationError("--language '\(language)' is not a language tag ICU knows; give one such as de, en-US or fr")
            }
            configuration.chunker = configuration.chunker.speaking(known)
        }
        configuration.trustGraphFolder = plugins.trustGraphFolder
        configuration.recordsTimeline = timeline.isRequested
        configuration.output = outputFile.map { .file(path: $0) } ?? .jack(server: server)
        if !noCache {
            // A folder the cache cannot use (or refuses: a link, another user's, open to
            // writers) costs only the caching; the reason is said once.
            do { configuration.cache = try SynthesisCache() } catch { log.warning("synthesis cache off: \(error)") }
        }

        let speech = try Self.controller(configuration)
        var result: SpeechResult
        do {
            let interrupt = InterruptHandler { speech.cancel() }
            defer { interrupt.stop() }
            try speech.start()
            if text == "-" {
                // Polled, so Ctrl-C ends the reading even while the writer sends nothing.
                try StandardInputStream.forEachPiece(until: { interrupt.interrupted }) { piece in
                    do { try speech.yield(text: piece) } catch SpeechError.alreadyCancelled { return false }
                    return true
                }
            } else {
                try speech.yield(text: text)
            }
            if speech.state == .running { try speech.finish() }
            result = try speech.waitUntilFinished()
        } catch SpeechError.alreadyCancelled {
            throw ExitCode(ExitStatus.interrupted)
        } catch SpeechError.provider(let failure) where failures.keepGoing {
            // The audio received before the failure played out (or was written), faded.
            log.warning("\(failure)")
            result = failure.result
        } catch let error as SpeechError {
            printError(Self.errorText(error))
            if case .provider(let failure) = error {
                printError("heard: \(failure.result.heard.heard)")
                try drawTimeline(failure.result)
                // The figures of what played, with the failure listed by its code (README).
                try printStats(failure.result, graph: speech.graph)
            }
            throw ExitCode(ExitStatus.failure)
        }
        printError(Self.summary(result))
        try drawTimeline(result)
        try printStats(result, graph: speech.graph)
        if result.cancelled {
            printError("cancelled: heard \"\(result.heard.heard)\"")
            throw ExitCode(ExitStatus.interrupted)
        }
    }

    /// `--stats json`: the run's report (its failures among it) and the speech figures.
    private func printStats(_ result: SpeechResult, graph: CompiledGraph) throws {
        guard stats == .json else { return }
        var extra = LivePlayback.jackFigures(graph)
        extra["speech"] = Self.speechFigures(result)
        try StatsOutput.print(result.report, extra: extra)
    }

    /// `--timeline`: the run, with each utterance's text as the controller heard it played.
    private func drawTimeline(_ result: SpeechResult) throws {
        let spans = result.utterances.map { TimelineDrawing.Span(text: $0.text, start: $0.start, end: $0.end) }
        try timeline.write(result.report, title: "sluice speak", spans: spans)
    }

    /// The controller, or exit 1 with the reason (a graph, provider or device error).
    private static func controller(_ configuration: SpeechConfiguration) throws -> SpeechController {
        do {
            return try SpeechController(configuration)
        } catch {
            printError(errorText(error))
            throw ExitCode(ExitStatus.failure)
        }
    }

    /// `error: …`; a graph's diagnostics carry their own (`file:line:column: error: …`).
    static func errorText(_ error: any Error) -> String {
        let text = "\(error)"
        let firstLine = text.prefix { $0 != "\n" }
        return firstLine.hasPrefix("error: ") || firstLine.contains(": error: ") ? text : "error: " + text
    }

    /// One line: time to first audio, duration, underruns.
    static func summary(_ result: SpeechResult) -> String {
        let timings = result.timings
        // Standard input that ended with no text: said as it is, not as 0 s of speech that
        // started after some milliseconds.
        if result.utterances.isEmpty && timings.audioSeconds == 0 { return "spoke nothing: the input ended before any text" }
        let first = (timings.firstAudioAfterText ?? timings.timeToFirstAudio).map { String(format: "%.0f ms", $0 * 1000) } ?? "none"
        return String(format: "spoke %.2f s of audio: first audio after %@, %d underrun%@, %d utterance%@",
                      timings.audioSeconds, first, timings.underruns, timings.underruns == 1 ? "" : "s",
                      result.utterances.count, result.utterances.count == 1 ? "" : "s")
    }

    static func speechFigures(_ result: SpeechResult) -> [String: Any] {
        let timings = result.timings
        var figures: [String: Any] = [
            "underruns": timings.underruns, "audioSeconds": timings.audioSeconds, "wallSeconds": timings.wallSeconds,
            "heard": result.heard.heard, "completedUtterances": result.heard.completedUtterances,
            "granularity": result.heard.granularity.rawValue,
            "utterances": result.utterances.map { utterance -> [String: Any] in
                var entry: [String: Any] = ["text": utterance.text, "start": utterance.start]
                if let end = utterance.end { entry["end"] = end }
                // Where each word began, from providers with word timing (captions, karaoke).
                if !utterance.words.isEmpty {
                    entry["words"] = utterance.words.map { ["text": $0.text, "start": $0.start] as [String: Any] }
                }
                return entry
            },
        ]
        if let word = result.heard.interruptedWord { figures["interruptedWord"] = word }
        if let value = timings.timeToFirstBuffer { figures["timeToFirstBuffer"] = value }
        if let value = timings.timeToFirstAudio { figures["timeToFirstAudio"] = value }
        if let value = timings.firstAudioAfterText { figures["firstAudioAfterText"] = value }
        if let value = timings.realTimeFactor { figures["realTimeFactor"] = value }
        return figures
    }
}

/// Standard input as it arrives, in UTF-8 pieces (a character split across two reads waits
/// for its last byte).
enum StandardInputStream {
    /// How often a wait for input looks at `until`.
    static let pollMilliseconds: Int32 = 50

    /// Calls `body` with each piece until the input ends, `body` returns false or `until`
    /// turns true (looked at while waiting for input, so a silent writer never blocks it).
    static func forEachPiece(until stop: () -> Bool = { false }, _ body: (String) throws -> Bool) throws {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var carry: [UInt8] = []
        while true {
            if stop() { return }
            var ready = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, pollMilliseconds)
            if polled == 0 || (polled < 0 && errno == EINTR) { continue }
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            carry += buffer[0..<count]
            let complete = completeLength(carry)
            guard complete > 0 else { continue }
            let piece = String(decoding: carry[0..<complete], as: UTF8.self)
            carry.removeFirst(complete)
            guard try body(piece) else { return }
        }
        if !carry.isEmpty { _ = try body(String(decoding: carry, as: UTF8.self)) }
    }

    /// The length of `bytes` without a trailing incomplete UTF-8 sequence.
    static func completeLength(_ bytes: [UInt8]) -> Int {
        var index = bytes.count
        var back = 0
        while index > 0 && back < 4 {
            index -= 1
            back += 1
            let byte = bytes[index]
            if byte & 0xC0 != 0x80 {
                let needed = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
                return needed > back ? index : bytes.count
            }
        }
        return bytes.count
    }
}
