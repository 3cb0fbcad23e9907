import Foundation
import WebSocketTestSupport

/// `scripts/bench speech`: time to first audio of `sluice speak -` fed a paragraph at 30 tokens
/// per second, against espeak-ng speaking the first sentence on its own, in the same run.
///
/// One private server (`BenchServer`, as the jack suite's) and its ear serve the whole suite.
/// Each round runs, in this order:
///
/// - `sluice speak - --server S --no-cache --stats json`, once with the standard graph's own
///   strategy (`auto`) and once with `--strategy stream`. Once its ports are connected to the
///   ear (the client has activated and reads standard input) and a further `settleSeconds`
///   have passed, the paragraph goes to its standard input token by token, on a 30-per-second
///   schedule timed so that the token releasing the first sentence is written at a chosen point
///   of a JACK period (run r of N: (r − ½)/N of the way through, read from the ear's client),
///   so the runs cover the period evenly; then standard input is closed and the run plays
///   out. The figures: Sluice's own `speech.firstAudioAfterText` (its first read of text to
///   the callback that rendered the first sample), the sentence's arrival (the first byte
///   written to the token that lets the chunker release the first sentence: the one after its
///   final `.`), and Sluice's latency after the sentence = the first minus the second. The
///   ear notes the first non-zero sample as a check, and `pipelineLatency` splits the latency
///   into before and inside the graph.
/// - espeak-ng's synthesis alone: `espeak-ng -v en -s 175 --stdout` already running (reading
///   standard input a line at a time), from writing the first sentence and a newline to the
///   first byte of audio after the 44-byte WAV header on its standard output.
/// - espeak-ng as the requirement states it: `espeak-ng -v en -s 175 --stdout "<first
///   sentence>"`, from `posix_spawn` to the first byte of audio (start-up included).
/// - espeak-ng's start-up: `espeak-ng -v en -s 175 --stdout ""`, from `posix_spawn` to the
///   first byte after the header (its end pause, flushed as it exits).
///
/// Goal: Sluice's latency after the sentence exceeds espeak-ng's synthesis alone by no more
/// than one JACK period plus the watermark playback started from (`watermarkSeconds`).
enum SpeechSuite {
    static let tokensPerSecond = 30.0
    /// A reply as a language model might stream it; the first sentence is the one timed.
    static let paragraph = """
        Rivers are older than the roads that follow them. They carve the valleys first, and \
        people settle where the water allows. Later come the bridges, then the towns.
        """
    /// A reply whose first sentence has a clause, for the early-start figures: the first
    /// clause ("When the river rises in spring,", 31 characters) is complete long before the
    /// sentence is.
    static let clauseParagraph = """
        When the river rises in spring, the valley floods and the roads close. People wait on \
        the hills, and the water slowly falls.
        """
    static let firstClause = "When the river rises in spring,"
    static let webSocketKey = "sluice-bench-ws-key"
    /// The standard graph's espeak node (SpeechGraph.standardYAML): voice en, rate 175.
    static let espeakCommand = ["espeak-ng", "-v", "en", "-s", "175", "--stdout"]
    /// Playback strategies, one figure each: the standard graph's own, then `stream`.
    static let strategies = ["auto", "stream"]
    /// Seconds between the client's activation and the first token; SLUICE_BENCH_SPEECH_SETTLE
    /// changes it (a run that starts speaking later than a user's would, to see whether idle
    /// time before the first text changes the watermark `auto` chooses).
    static let settleSeconds: Double = {
        let variable = ProcessInfo.processInfo.environment["SLUICE_BENCH_SPEECH_SETTLE"]
        return variable.flatMap(Double.init) ?? 0.5
    }()
    /// Seconds espeak-ng is given to start before the synthesis-alone reference writes to it.
    static let espeakSettleSeconds = 0.5
    static let wavHeaderBytes = 44
    static var periodMilliseconds: Double { JackSuite.periodMilliseconds }

    static func run(runs: Int) {
        // A child that dies mid-feed must fail the suite with a message, not kill it silently.
        signal(SIGPIPE, SIG_IGN)
        let sluice = locateSluice()
        let text = Paragraph(paragraph)
        let folder = makeBenchFolder("speech")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = BenchServer.start(logPath: "\(folder)/jackd.log")
        defer { server.stop() }
        let ear = Ear(server: server.name)
        defer { ear.close() }
        note("server '\(server.name)': \(server.realtime ? "real-time scheduling" : "no real-time scheduling (jackd -R was refused)"), \(JackSuite.sampleRate) Hz, \(JackSuite.periodFrames)-frame periods")
        note(String(format: "the first token goes %.2f s after the client has connected", settleSeconds))
        note("\(text.tokens.count) tokens at \(Int(tokensPerSecond))/s; the first sentence (\"\(text.firstSentence)\") is released by token \(text.releasing + 1), \(jsonString(text.tokens[text.releasing]))")

        var speakRuns: [String: [SpeakRun]] = [:]
        var synthesis: [Double] = []
        var cold: [Double] = []
        var startup: [Double] = []
        for run in 1...runs {
            // The period's phase, spread evenly over the runs and the same for each strategy.
            let phase = (Double(run) - 0.5) / Double(runs)
            for strategy in strategies {
                let output = "\(folder)/speak-\(strategy)-\(run).json"
                speakRuns[strategy, default: []].append(
                    speak(sluice: sluice, server: server, ear: ear, strategy: strategy, text: text, phase: phase, output: output))
            }
            let warm = espeakSynthesis(text.firstSentence)
            let coldRun = espeakCold(text.firstSentence)
            guard warm.bytes == coldRun.bytes else {
                fail("espeak-ng wrote \(warm.bytes) bytes reading the sentence from stdin but \(coldRun.bytes) from its argument")
            }
            synthesis.append(warm.firstAudio * 1_000)
            cold.append(coldRun.firstAudio * 1_000)
            startup.append(espeakStartup() * 1_000)
        }
        // ElevenLabs' stream-input protocol on loopback: the server starts audio once it holds
        // the schedule's first 50 characters or a flush, as the service does, and speaks at a
        // speaking rate (65 ms a character, about 150 words a minute; the test suites' 10 ms
        // would run dry between generations no real voice would).
        var script = StreamInputTestServer.Script(key: webSocketKey)
        script.framesPerCharacter = 1_560
        let webSocket: StreamInputTestServer
        do { webSocket = try StreamInputTestServer(script) } catch {
            fail("the loopback stream-input server did not start: \(error)")
        }
        let elevenlabs = EarlyVariant(
            name: "elevenlabs websocket",
            arguments: [
                "--provider", "elevenlabs", "--voice", "voice-7", "--set", "base-url=\(webSocket.baseURL)",
                "--set", "key-env=SLUICE_BENCH_WS_KEY",
            ],
            environment: ["SLUICE_BENCH_WS_KEY": webSocketKey], firstUtterance: Paragraph(clauseParagraph).firstSentence)
        runEarlyStart(sluice: sluice, server: server, ear: ear, folder: folder, runs: runs, extra: [elevenlabs])
        note("espeak-ng (ms): synthesis alone \(JackSuite.formattedList(synthesis)), with start-up \(JackSuite.formattedList(cold)), start-up alone \(JackSuite.formattedList(startup))")

        for strategy in strategies {
            let series = speakRuns[strategy]!
            let ttfa = series.map { $0.firstAudioAfterText * 1_000 }
            let arrival = series.map { $0.sentenceArrival * 1_000 }
            let after = series.map { ($0.firstAudioAfterText - $0.sentenceArrival) * 1_000 }
            let earAfter = series.compactMap { run in run.earFirstSound.map { ($0 - run.sentenceArrival) * 1_000 } }
            let pipeline = series.map { $0.pipelineLatency * 1_000 }
            let watermarks = series.map { $0.watermark * 1_000 }
            note("\(strategy) (ms): first audio after text \(JackSuite.formattedList(ttfa)), sentence arrival \(JackSuite.formattedList(arrival)), after the sentence \(JackSuite.formattedList(after)), at the ear after the sentence \(JackSuite.formattedList(earAfter)), pipeline latency \(JackSuite.formattedList(pipeline)), watermark \(JackSuite.formattedList(watermarks)), sentence released at frame \(series.map(\.releasedAtFrame)) of \(JackSuite.periodFrames), underruns \(series.map { Int($0.underruns) }), xruns \(series.map { Int($0.xruns) })")
            if watermarks.max()! != watermarks.min()! { note("\(strategy): the watermark differed between runs; the goal uses the median") }
            let sluiceAfter = median(after)
            let reference = median(synthesis)
            let watermark = median(watermarks)
            let limit = periodMilliseconds + watermark
            let added = sluiceAfter - reference
            var extras: [(key: String, value: Double)] = [
                ("added", added), ("goal_limit", limit), ("period", periodMilliseconds), ("watermark", watermark),
                ("sluice_min", after.min()!), ("sluice_max", after.max()!),
                ("reference_min", synthesis.min()!), ("reference_max", synthesis.max()!),
                ("ttfa", median(ttfa)), ("ttfa_min", ttfa.min()!), ("ttfa_max", ttfa.max()!),
                ("sentence_arrival", median(arrival)), ("pipeline_latency", median(pipeline)),
            ]
            if !earAfter.isEmpty { extras.append(("ear_after_sentence", median(earAfter))) }
            extras += [
                ("espeak_cold", median(cold)), ("espeak_startup", median(startup)),
                ("added_vs_cold", sluiceAfter - median(cold)),
                ("underruns", series.map(\.underruns).max()!), ("xruns", series.map(\.xruns).max()!),
            ]
            Figure(
                bench: "speech", metric: "first-audio-after-sentence \(strategy)", sluice: sluiceAfter,
                reference: reference, unit: "ms (lower is better)",
                referenceName: "espeak-ng --stdout, running, the first sentence on stdin", runs: runs,
                goal: String(format: "sluice - reference <= %.3f ms (a period + the watermark)", limit),
                goalMet: added <= limit, extras: extras
            ).emit()
        }
    }

    // MARK: Before the sentence ends

    /// One way of speaking `clauseParagraph`: `sluice speak -` with these arguments.
    struct EarlyVariant {
        var name: String
        var arguments: [String]
        var environment: [String: String] = [:]
        var firstUtterance: String
    }

    /// First audio from the first token, fed at 30 tokens/s, for each variant, against today's
    /// sentence at a time (espeak with `--first-clause 0`). Goal: the first audio plays before
    /// the first sentence is complete.
    static func runEarlyStart(sluice: String, server: BenchServer, ear: Ear, folder: String, runs: Int, extra: [EarlyVariant]) {
        let text = Paragraph(clauseParagraph)
        let variants = [
            EarlyVariant(name: "espeak sentence", arguments: ["--first-clause", "0"], firstUtterance: text.firstSentence),
            EarlyVariant(name: "espeak early-clause", arguments: [], firstUtterance: firstClause),
        ] + extra
        var results: [String: [SpeakRun]] = [:]
        for run in 1...runs {
            let phase = (Double(run) - 0.5) / Double(runs)
            for variant in variants {
                let output = "\(folder)/early-\(variant.name.replacingOccurrences(of: " ", with: "-"))-\(run).json"
                results[variant.name, default: []].append(speak(
                    sluice: sluice, server: server, ear: ear, strategy: "auto", text: text, phase: phase, output: output,
                    extraArguments: variant.arguments, environment: variant.environment, firstUtterance: variant.firstUtterance))
            }
        }
        let reference = median(results["espeak sentence"]!.map { $0.firstAudioAfterText * 1_000 })
        for variant in variants {
            let series = results[variant.name]!
            let ttfa = series.map { $0.firstAudioAfterText * 1_000 }
            let arrival = series.map { $0.sentenceArrival * 1_000 }
            note("\(variant.name) (ms): first audio from the first token \(JackSuite.formattedList(ttfa)), first sentence complete at \(JackSuite.formattedList(arrival)), underruns \(series.map { Int($0.underruns) })")
            Figure(
                bench: "speech", metric: "first-audio-from-first-token \(variant.name)", sluice: median(ttfa),
                reference: reference, unit: "ms (lower is better)",
                referenceName: "espeak, the first sentence whole (--first-clause 0)", runs: runs,
                goal: "first audio before the first sentence is complete", goalMet: median(ttfa) < median(arrival),
                extras: [
                    ("sentence_complete", median(arrival)), ("ttfa_min", ttfa.min()!), ("ttfa_max", ttfa.max()!),
                    ("underruns", series.map(\.underruns).max()!),
                ]
            ).emit()
        }
    }

    // MARK: The paragraph as tokens

    /// The paragraph cut the way a language model streams text, and where its first sentence
    /// becomes complete.
    struct Paragraph {
        /// Each word with the space before it, cut into pieces of at most four characters
        /// (" roa", "ds"): about the size of a BPE token, and a sentence's final `.` always
        /// ends a piece, so the space after it starts the next one.
        let tokens: [String]
        /// The whole text.
        let text: String
        /// The first sentence, as the chunker releases it.
        let firstSentence: String
        /// The index of the token that completes the first sentence for the chunker: the one
        /// carrying the whitespace after its final `.`.
        let releasing: Int

        init(_ text: String) {
            var tokens: [String] = []
            for (index, word) in text.split(separator: " ").enumerated() {
                var rest = Substring(index == 0 ? String(word) : " " + word)
                while !rest.isEmpty {
                    tokens.append(String(rest.prefix(4)))
                    rest = rest.dropFirst(4)
                }
            }
            guard let period = text.range(of: ". ") else { fail("the paragraph has no second sentence") }
            firstSentence = String(text[..<period.upperBound]).trimmingCharacters(in: .whitespaces)
            // The first token that starts after the period.
            var offset = 0
            var releasing: Int?
            let periodOffset = text.distance(from: text.startIndex, to: period.lowerBound)
            for (index, token) in tokens.enumerated() {
                if offset > periodOffset {
                    releasing = index
                    break
                }
                offset += token.count
            }
            guard let releasing, tokens[releasing].first == " " else { fail("cannot find the token after the first sentence") }
            self.tokens = tokens
            self.releasing = releasing
            self.text = text
        }
    }

    // MARK: Sluice

    /// One `sluice speak -` run, in seconds.
    struct SpeakRun {
        /// Sluice's `speech.firstAudioAfterText`.
        var firstAudioAfterText: Double
        /// From the first byte written to the token that released the first sentence.
        var sentenceArrival: Double
        /// Frames since the JACK cycle began when that token was written.
        var releasedAtFrame: Int
        /// From the first byte written to the first non-zero sample at the ear.
        var earFirstSound: Double?
        /// `pipelineLatency`: the provider's first audio entering the graph to the callback
        /// that rendered the first sample.
        var pipelineLatency: Double
        var watermark: Double
        var underruns: Double
        var xruns: Double
    }

    /// One run; `phase` (0..<1) is where in a JACK period the releasing token is written.
    static func speak(
        sluice: String, server: BenchServer, ear: Ear, strategy: String, text: Paragraph, phase: Double, output: String,
        extraArguments: [String] = [], environment: [String: String] = [:], firstUtterance: String? = nil
    ) -> SpeakRun {
        // The previous client must be gone from the ear, or its connection would look like
        // this one's.
        waitUntil(seconds: 5, "the previous client to leave the ear") { !ear.isConnected }
        // Close-on-exec, so the child holds only its stdin end and sees end-of-file.
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fail("pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var arguments = [sluice, "speak", "-", "--server", server.name, "--no-cache", "--stats", "json"] + extraArguments
        if strategy != "auto" { arguments += ["--strategy", strategy] }  // auto is the standard graph's own
        let child = ChildProcess.start(arguments, streams: .init(input: ends[0], outputPath: output), environment: environment)
        close(ends[0])
        // jack.sink connects its ports once the client is active; `sluice speak` starts
        // reading standard input right after.
        waitUntil(seconds: 10, "sluice speak to connect to the ear") {
            if child.poll() != nil { fail("\(child.command) ended before it connected") }
            return ear.isConnected
        }
        usleep(UInt32(settleSeconds * 1e6))

        // Time the schedule so the releasing token is written `phase` of a period after a
        // cycle begins (the ear's client shares the server's cycle).
        let period = Double(JackSuite.periodFrames)
        let lead = Double(text.releasing) / tokensPerSecond * Double(JackSuite.sampleRate)
        let now = Double(ear.framesSinceCycleStart)
        var delay = (phase * period - now - lead).truncatingRemainder(dividingBy: period)
        if delay < 0 { delay += period }
        let start = monotonicNanoseconds() + UInt64(delay / Double(JackSuite.sampleRate) * 1e9)

        ear.listen()
        let fed = feed(text.tokens, to: ends[1], releasing: text.releasing, startingAt: start, ear: ear)
        close(ends[1])
        child.expectExit()
        let heard = ear.heardAt
        ear.stopListening()

        let stats = StatsFile(output)
        guard let speech = stats.object["speech"] as? [String: Any],
            let firstAudio = (speech["firstAudioAfterText"] as? NSNumber)?.doubleValue,
            let watermark = stats.number("watermarkSeconds"), let pipelineLatency = stats.number("pipelineLatency")
        else { fail("\(output) has no speech.firstAudioAfterText, watermarkSeconds or pipelineLatency") }
        // Checked work: the whole paragraph was spoken, the first sentence on its own.
        let spoken = speech["heard"] as? String
        guard spoken == text.text else { fail("\(output): heard \(jsonString(spoken ?? "nothing")), not the paragraph") }
        let utterances = speech["utterances"] as? [[String: Any]]
        let first = firstUtterance ?? text.firstSentence
        guard utterances?.first?["text"] as? String == first else {
            fail("\(output): the first utterance is not \(jsonString(first))")
        }
        return SpeakRun(
            firstAudioAfterText: firstAudio, sentenceArrival: fed.released - fed.first,
            releasedAtFrame: fed.releasedAtFrame,
            earFirstSound: heard.map { Double($0) * 1e-9 - fed.first }, pipelineLatency: pipelineLatency, watermark: watermark,
            underruns: (speech["underruns"] as? NSNumber)?.doubleValue ?? 0, xruns: stats.number("xruns") ?? 0)
    }

    /// Writes `tokens` to `descriptor` on a 30-per-second schedule (token i due i/30 s after
    /// `start`, monotonic nanoseconds); returns the monotonic seconds just before the first
    /// and the `releasing` token were written, and where in its JACK period the latter was.
    static func feed(
        _ tokens: [String], to descriptor: Int32, releasing: Int, startingAt start: UInt64, ear: Ear
    ) -> (first: Double, released: Double, releasedAtFrame: Int) {
        var first = 0.0
        var released = 0.0
        var releasedAtFrame = 0
        for (index, token) in tokens.enumerated() {
            let due = start + UInt64(Double(index) / tokensPerSecond * 1e9)
            var until = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil) == EINTR {}
            let now = monotonicSeconds()
            if index == 0 { first = now }
            if index == releasing {
                released = now
                releasedAtFrame = ear.framesSinceCycleStart
            }
            writeAll(Array(token.utf8), to: descriptor, what: "sluice speak's stdin")
        }
        return (first, released, releasedAtFrame)
    }

    /// `sluice` built beside this executable, with the espeak plugin it loads from the same
    /// folder.
    static func locateSluice() -> String {
        let folder = harnessFolder
        for file in ["sluice", "libsluice-espeak.so"] where !FileManager.default.fileExists(atPath: "\(folder)/\(file)") {
            fail("\(folder)/\(file) is missing: scripts/bench speech builds it (swift build -c release --product \(file == "sluice" ? "sluice" : "sluice-espeak"))")
        }
        return "\(folder)/sluice"
    }

    // MARK: espeak-ng

    /// espeak-ng already running, reading lines from standard input: seconds from writing
    /// `sentence` to the first byte of audio, and the bytes it wrote in all.
    static func espeakSynthesis(_ sentence: String) -> (firstAudio: Double, bytes: Int) {
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        guard pipe(&input) == 0, pipe(&output) == 0 else { fail("pipe: \(String(cString: strerror(errno)))") }
        for end in input + output { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let child = ChildProcess.start(espeakCommand, streams: .init(input: input[0], output: output[1]))
        close(input[0])
        close(output[1])
        usleep(UInt32(espeakSettleSeconds * 1e6))
        var reader = AudioReader(descriptor: output[0], command: child.command)
        let written = monotonicSeconds()
        writeAll(Array((sentence + "\n").utf8), to: input[1], what: "espeak-ng's stdin")
        let firstAudio = reader.readUntilAudio() - written
        close(input[1])
        reader.readToEnd()
        close(output[0])
        child.expectExit()
        return (firstAudio, reader.bytes)
    }

    /// `espeak-ng --stdout "<sentence>"`: seconds from spawning it to the first byte of audio,
    /// and the bytes it wrote in all.
    static func espeakCold(_ sentence: String) -> (firstAudio: Double, bytes: Int) {
        var output: [Int32] = [0, 0]
        guard pipe(&output) == 0 else { fail("pipe: \(String(cString: strerror(errno)))") }
        for end in output { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let launched = monotonicSeconds()
        let child = ChildProcess.start(espeakCommand + [sentence], streams: .init(output: output[1]))
        close(output[1])
        var reader = AudioReader(descriptor: output[0], command: child.command)
        let firstAudio = reader.readUntilAudio() - launched
        reader.readToEnd()
        close(output[0])
        child.expectExit()
        return (firstAudio, reader.bytes)
    }

    /// `espeak-ng --stdout ""`: seconds from spawning it to the first byte after the header
    /// (its end pause, written as it exits).
    static func espeakStartup() -> Double {
        espeakCold("").firstAudio
    }

    /// Reads a WAV stream from a pipe, noting when the first byte after the header arrives.
    struct AudioReader {
        let descriptor: Int32
        let command: String
        private(set) var bytes = 0
        private var buffer = [UInt8](repeating: 0, count: 65_536)

        init(descriptor: Int32, command: String) {
            self.descriptor = descriptor
            self.command = command
        }

        /// Monotonic seconds when a read first returned audio after the 44-byte header.
        mutating func readUntilAudio() -> Double {
            while bytes <= SpeechSuite.wavHeaderBytes {
                guard readSome() else { fail("\(command) wrote no audio") }
            }
            return monotonicSeconds()
        }

        mutating func readToEnd() {
            while readSome() {}
        }

        /// One read, waiting at most 10 s; false at end of file.
        private mutating func readSome() -> Bool {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let status = poll(&ready, 1, 10_000)
            if status < 0 && errno == EINTR { return true }
            guard status > 0 else { fail("\(command) wrote nothing for 10 s") }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { return true }
            guard count >= 0 else { fail("reading \(command): \(String(cString: strerror(errno)))") }
            bytes += count
            return count > 0
        }
    }

    // MARK: Helpers

    static func writeAll(_ bytes: [UInt8], to descriptor: Int32, what: String) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { fail("writing to \(what): \(String(cString: strerror(errno)))") }
                offset += written
            }
        }
    }

    /// Polls `condition` every 5 ms; stops the suite when it stays false for `seconds`.
    static func waitUntil(seconds: Double, _ what: String, _ condition: () -> Bool) {
        let deadline = monotonicSeconds() + seconds
        while !condition() {
            if monotonicSeconds() > deadline { fail("waited \(Int(seconds)) s for \(what)") }
            usleep(5_000)
        }
    }
}
