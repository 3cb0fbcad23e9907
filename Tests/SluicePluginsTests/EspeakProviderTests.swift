import Foundation
import Glibc
import ProviderTestSupport
import SluiceAudio
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluicePluginABI
import SluicePlugins
import SluiceTestSupport
import Synchronization
import Testing

/// The espeak provider (Plugins/espeak/espeak.c) with the real espeak-ng: in graphs through
/// the loader and the offline renderer, and through its C vtable directly where `read`
/// itself is the subject.
///
/// espeak-ng keeps synthesis state across calls in its process globals (the pitch flutter's
/// phase, the automatic gain, the pauses), so what a process synthesised before changes what
/// it synthesises next: after `speechShaped`'s sentence, "One." is 7.7 % longer than in a fresh
/// process. Exact comparisons therefore run in a fresh `sluice` process. A comparison within
/// this process (`sameLength`'s tolerance) holds only while nothing else synthesises between
/// its two sides: so this suite runs in the serial pass of scripts/test (`live_tests`), never
/// beside other suites that use espeak-ng. In the parallel pass, another suite's synthesis once
/// landed between `utteranceBoundaries`' stream and its reference, one utterance 9 % longer.
///
/// Serialized: espeak-ng synthesises for one instance at a time, and these tests hold it on
/// purpose (a full ring stalls synthesis mid-utterance); one at a time keeps them from
/// timing each other.
@Suite(.serialized) struct EspeakProviderTests {
    static let rate = 22_050
    static let sentence = "The quick brown fox jumps over the lazy dog, then it runs far away into the quiet forest."
    static let long = """
        Streaming speech means the first words can play while the rest of the sentence is still being \
        synthesised, so a listener hears the reply begin almost at once, and memory stays bounded \
        however long the text grows, because synthesis waits whenever the buffer ahead is full.
        """

    static func library() throws -> PluginLibrary { try PluginLibrary.load(path: Plugins.espeak) }

    static func graph(_ parameters: String) -> String {
        """
        name: espeak
        nodes:
          voice: { type: espeak\(parameters.isEmpty ? "" : ", " + parameters) }
          align: { type: aligner }
          out:   { type: null.sink }
        links:
          - voice -> align -> out
        \(Self.playback)
        """
    }

    /// The offline renderer advances its clock when a source has nothing yet; playing only
    /// once the whole stream is buffered makes the rendering exactly the provider's stream,
    /// however synthesis is scheduled.
    static let playback = "playback: { strategy: generate-first, max-buffered: 120 }"

    /// Renders `text` (one utterance per element) offline; the samples and the report.
    static func render(_ parameters: String = "", _ text: [String]) throws -> ([Float], RunReport) {
        try GraphRendering.render(try Plugins.compile(graph(parameters), libraries: [try library()]), text: text)
    }

    /// Two renderings of the same text in this process, in samples: lengths within 3 % plus
    /// 60 ms (see the suite's note).
    static func sameLength(_ a: Int, _ b: Int) -> Bool {
        abs(a - b) <= max(a, b) * 3 / 100 + rate * 6 / 100
    }

    static func peak(_ samples: [Float]) -> Float { samples.reduce(0) { max($0, abs($1)) } }

    static func rms(_ samples: [Float]) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(samples.count, 1))).squareRoot()
    }

    // MARK: 1. Speech-shaped

    @Test("the plugin lists one provider with its parameters and defaults")
    func descriptor() throws {
        let types = try Self.library().nodeTypes
        #expect(types.map(\.descriptor.typeName) == ["espeak"])
        #expect(types.map(\.kind) == [.provider])
        let espeak = try #require(types.first).descriptor
        #expect(espeak.outputs.map(\.medium) == [.bytes])
        #expect(espeak.parameter(named: "voice")?.defaultValue == .string("en"))
        #expect(espeak.parameter(named: "rate")?.type == .integer(80...450))
        #expect(espeak.parameter(named: "rate")?.defaultValue == .integer(175))
        #expect(espeak.parameter(named: "pitch")?.defaultValue == .integer(50))
        #expect(espeak.parameter(named: "volume")?.type == .integer(0...200))
        #expect(espeak.parameter(named: "buffer")?.defaultValue == .number(1))
    }

    /// 18 words at 175 words per minute: 18 · 60 / 175 = 6.17 s of speaking; espeak-ng's
    /// pace varies with the words, and it adds an end-of-sentence pause, so the audio must
    /// last between 0.7 and 1.5 times that (it gives about 1.05).
    @Test("a sentence becomes speech: S16LE mono 22050 Hz, loud enough, as long as its words at the rate")
    func speechShaped() throws {
        let graph = try Plugins.compile(Self.graph(""), libraries: [try Self.library()])
        let voice = try #require(graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
        #expect(voice.format == PCMFormat(.s16le, channels: 1, sampleRate: Self.rate))
        let (samples, report) = try GraphRendering.render(graph, text: [Self.sentence])
        #expect(report.failures.isEmpty)
        #expect(report.droppedPartialFrames == 0)

        let words = Self.sentence.split(separator: " ").count
        #expect(words == 18)
        let speaking = Double(words) * 60 / 175
        let seconds = Double(samples.count) / Double(Self.rate)
        #expect(seconds > 0.7 * speaking && seconds < 1.5 * speaking, "\(seconds) s for \(speaking) s of words")

        // Speech, not silence or a tone: loud peaks, and sound in most 50 ms windows of the
        // first 90 % (the rest holds the closing pause).
        #expect(Self.peak(samples) > 0.1)
        #expect(Self.rms(samples) > 0.01)
        let window = Self.rate / 20
        let windows = stride(from: 0, to: samples.count * 9 / 10 - window, by: window).map {
            Self.rms(Array(samples[$0..<$0 + window]))
        }
        let sounding = windows.filter { $0 > 0.005 }.count
        #expect(Double(sounding) > 0.6 * Double(windows.count), "\(sounding) of \(windows.count) windows sound")
        #expect(sounding < windows.count, "speech has pauses between words")
        // The counters reach the report: every byte synthesised was read, one utterance.
        #expect(report.counters["voice.synthesised-bytes"] == samples.count * 2)
        #expect(report.counters["voice.utterances-synthesised"] == 1)
    }

    /// `sluice render` in a fresh process (so espeak-ng starts from its initial state, as the
    /// command line does) against `espeak-ng -w` with the same voice, rate, pitch and volume:
    /// the same 16-bit samples, every one.
    @Test("in a fresh process the samples equal the espeak-ng command line's, bit for bit: voice, rate, pitch, volume, punctuation and capitals", arguments: [
        (voice: "en", rate: 175, pitch: 50, volume: 100, punctuation: "none", capitals: "none", cli: [String]()),
        (voice: "en-us", rate: 250, pitch: 30, volume: 60, punctuation: "none", capitals: "none", cli: []),
        (voice: "en", rate: 175, pitch: 50, volume: 100, punctuation: "all", capitals: "word", cli: ["--punct", "-k", "2"]),
        (voice: "en", rate: 175, pitch: 50, volume: 100, punctuation: "some", capitals: "pitch", cli: ["--punct=@/+-_", "-k", "20"]),
        (voice: "en", rate: 175, pitch: 50, volume: 100, punctuation: "most", capitals: "none", cli: ["--punct=#$%&()*+-/:;<=>@[\\]^_`{|}~"]),
    ])
    func equalsCommandLine(
        _ settings: (voice: String, rate: Int, pitch: Int, volume: Int, punctuation: String, capitals: String, cli: [String])
    ) throws {
        let folder = TemporaryFolder("sluice-espeak")
        // The plain sentence, or one with marks and capitals for the settings that speak them.
        let sentence = settings.cli.isEmpty ? Self.sentence : "Mail Ann at a@b.com (or C/D-E_F); Call #5, 50% off: OK? Yes!"
        let graph = try folder.write("""
            name: espeak
            nodes:
              voice: { type: espeak, voice: \(settings.voice), rate: \(settings.rate), pitch: \(settings.pitch), volume: \(settings.volume), punctuation: \(settings.punctuation), capitals: \(settings.capitals) }
              align: { type: aligner }
              out:   { type: wav.sink, path: out.wav, sample-format: s16 }
            links:
              - voice -> align -> out
            \(Self.playback)
            """, to: "espeak.yaml").path
        let render = try CommandRunner.run("sluice", ["render", graph, "--text", sentence], timeout: 120)
        try #require(render.status == 0, "\(render.standardError)")
        let cli = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/espeak-ng"),
            ["-w", folder.path("cli.wav"), "-v", settings.voice, "-s", "\(settings.rate)", "-p", "\(settings.pitch)",
             "-a", "\(settings.volume)"] + settings.cli + ["--", sentence])
        try #require(cli.status == 0, "\(cli.standardError)")
        let ours = try WAVData(path: folder.path("out.wav"))
        let theirs = try WAVData(path: folder.path("cli.wav"))
        #expect(ours.rate == 22_050 && theirs.rate == 22_050)
        #expect(ours.samples.count > 22_050)
        #expect(ours.samples.count == theirs.samples.count)
        // The first difference, not the arrays: a failed `==` on 100 000 samples would make
        // the failure message diff them, which takes minutes.
        let difference = ours.samples.indices.first { $0 >= theirs.samples.count || ours.samples[$0] != theirs.samples[$0] }
        #expect(difference == nil, "sample \(difference ?? 0) differs (of \(ours.samples.count))")
    }

    /// graphs/speak.yaml (the main job, scripts/speak) with a null.sink at 48 kHz in place of
    /// jack.sink: the espeak plugin → aligner → resampler → crossfader → fader → stereo.
    @Test("graphs/speak.yaml renders with a null.sink in place of jack.sink: two utterances, stereo 48 kHz speech")
    func speakGraph() throws {
        var description = try GraphFile.load(path: Plugins.packageRoot.appendingPathComponent("graphs/speak.yaml").path)
        let out = try #require(description.nodes.firstIndex { $0.type == "jack.sink" })
        description.nodes[out].type = "null.sink"
        description.nodes[out].parameters = [ParameterDeclaration(name: "rate", value: .scalar("48000", quoted: false))]
        description.playback.strategy = .generateFirst
        description.playback.maxBuffered = 120
        var registry = BuiltinNodes.registry()
        try PluginCatalog.register([try Self.library()], into: &registry)
        let graph = try GraphCompiler(registry: registry).compile(description)
        let (samples, report) = try GraphRendering.render(graph, text: ["Hello from Sluice.", "This is the espeak provider."])
        #expect(report.failures.isEmpty)
        #expect(report.underruns == 0)
        #expect(report.counters["voice.utterances-synthesised"] == 2)
        // Stereo: both channels carry the same mono speech.
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        let right = stride(from: 1, to: samples.count, by: 2).map { samples[$0] }
        let sameChannels = left == right  // a Bool: a failed `==` on arrays this long would be diffed for minutes
        #expect(sameChannels)
        // At 48 kHz, as long as what espeak-ng synthesised at 22050 Hz, less the crossfade
        // overlap between the two utterances (at most 0.1 s).
        let synthesised = Double(try #require(report.counters["voice.synthesised-bytes"])) / 2 / Double(Self.rate)
        let seconds = Double(left.count) / 48_000
        #expect(seconds > synthesised - 0.15 && seconds < synthesised + 0.05, "\(seconds) s played, \(synthesised) s synthesised")
        #expect(Self.peak(left) > 0.1)
    }

    // MARK: 2. Streaming with backpressure

    /// With `buffer: 0.05` the ring holds 1103 frames (2206 bytes), and the sentence is about
    /// 15 s of speech. Nothing is read until the ring is full, so synthesis is then stalled
    /// inside the utterance: the first data `read` returns comes while the utterance's
    /// synthesis is unfinished (`utterances-synthesised` is 0).
    @Test("the first audio is read while the sentence is still being synthesised; the ring never exceeds `buffer`")
    func firstAudioBeforeSynthesisEnds() throws {
        let capacity = Int((0.05 * Double(Self.rate)).rounded()) * 2
        let voice = try RawEspeak(buffer: 0.05)
        voice.say(Self.long)
        voice.endText()
        try voice.waitUntil { $0["peak-buffered-bytes"]! >= capacity }
        #expect(voice.counters()["utterances-synthesised"] == 0)
        guard case .data(let first) = voice.read() else {
            Issue.record("the first read returned no data")
            return
        }
        #expect(first.count == capacity, "the whole ring, no more")
        #expect(voice.counters()["utterances-synthesised"] == 0)

        let rest = try voice.readToEnd()
        let total = first.count + rest.bytes
        #expect(rest.events == [.utteranceEnd, .end])
        #expect(total > 100 * capacity, "\(total) bytes read through a \(capacity)-byte ring")
        let counters = voice.counters()
        #expect(counters["peak-buffered-bytes"] == capacity)
        #expect(counters["synthesised-bytes"] == total)
        #expect(counters["utterances-synthesised"] == 1)
    }

    // MARK: 3. Parameters

    @Test("a faster rate gives fewer samples")
    func rateTakesEffect() throws {
        let (normal, _) = try Self.render("rate: 175", [Self.sentence])
        let (fast, _) = try Self.render("rate: 350", [Self.sentence])
        // Twice the words per minute: about half the length (pauses shrink less).
        #expect(Double(fast.count) < 0.7 * Double(normal.count), "\(fast.count) vs \(normal.count)")
        #expect(Double(fast.count) > 0.3 * Double(normal.count), "\(fast.count) vs \(normal.count)")
    }

    @Test("a lower volume gives a lower peak and level, and pitch changes the sound")
    func volumeAndPitchTakeEffect() throws {
        let (loud, _) = try Self.render("volume: 100", [Self.sentence])
        let (quiet, _) = try Self.render("volume: 40", [Self.sentence])
        // espeak-ng scales amplitude linearly with volume: 40 % of it, within the gain control.
        #expect(Self.peak(quiet) < 0.6 * Self.peak(loud), "\(Self.peak(quiet)) vs \(Self.peak(loud))")
        #expect(Self.rms(quiet) < 0.6 * Self.rms(loud))
        #expect(Self.peak(quiet) > 0.02)

        // Pitch: a shorter voice period (the autocorrelation's peak) at a high pitch.
        let (low, _) = try Self.render("pitch: 10", [Self.sentence])
        let (high, _) = try Self.render("pitch: 90", [Self.sentence])
        let lowPeriod = try #require(Self.medianPeriod(low))
        let highPeriod = try #require(Self.medianPeriod(high))
        #expect(Double(highPeriod) < 0.75 * Double(lowPeriod), "\(highPeriod) vs \(lowPeriod) samples")
    }

    /// The median, over loud 30 ms windows every 100 ms, of the lag (2.5 … 20 ms) where the
    /// window's autocorrelation peaks: the voice's pitch period, in samples.
    static func medianPeriod(_ samples: [Float]) -> Int? {
        let window = rate * 3 / 100
        var periods: [Int] = []
        for start in stride(from: 0, to: samples.count - window - rate / 50, by: rate / 10) {
            let frame = samples[start..<start + window + rate / 50]
            guard rms(Array(frame)) > 0.02 else { continue }
            var best = (lag: 0, score: -Double.infinity)
            for lag in (rate / 400)...(rate / 50) {
                var score = 0.0
                for index in start..<start + window { score += Double(samples[index]) * Double(samples[index + lag]) }
                if score > best.score { best = (lag, score) }
            }
            periods.append(best.lag)
        }
        return periods.isEmpty ? nil : periods.sorted()[periods.count / 2]
    }

    @Test("an unknown voice fails the graph at compile time, at the node, with `unknown-voice` and how to list voices")
    func unknownVoice() throws {
        do {
            _ = try Plugins.compile(Self.graph("voice: xx-nonexistent"), libraries: [try Self.library()])
            Issue.record("a graph with voice 'xx-nonexistent' compiled")
        } catch let diagnostics as GraphDiagnostics {
            let text = diagnostics.description
            #expect(text.contains("test.yaml:3:"), "\(text)")
            #expect(text.contains("'voice'"), "\(text)")
            #expect(text.contains("unknown-voice"), "\(text)")
            #expect(text.contains("espeak-ng has no voice 'xx-nonexistent'"), "\(text)")
            #expect(text.contains("espeak-ng --voices"), "\(text)")
        }
        // Through the vtable: the typed error itself.
        #expect(throws: RawEspeak.CreationFailed(code: "unknown-voice", message:
            "espeak-ng has no voice 'xx-nonexistent'; `espeak-ng --voices` lists them (e.g. en, en-us, de, en+f3)")) {
            _ = try RawEspeak(voice: "xx-nonexistent")
        }
        // A variant, a voice file and a language are known (as on the command line).
        _ = try RawEspeak(voice: "en+f3")
        _ = try RawEspeak(voice: "gmw/en-US")
        _ = try RawEspeak(voice: "en-gb")
        // A path is no voice name: espeak-ng would read the file it names.
        for path in ["../../../../etc/passwd", "/etc/passwd", "en/../../x", "gmw//en", "en\nde", "en us", "gmw/"] {
            #expect(throws: RawEspeak.CreationFailed(code: "unknown-voice", message:
                "a voice is a name such as en, en-us or gmw/en-US, with an optional +variant (letters, digits, '-', '_', '+', "
                    + "and '/' between names); `espeak-ng --voices` lists them")) {
                _ = try RawEspeak(voice: path)
            }
        }
    }

    // MARK: 4. Utterances

    @Test("several utterances: one UTTERANCE_END each, in order, an empty one included; then END")
    func utteranceBoundaries() throws {
        let voice = try RawEspeak()
        for text in ["One.", "", "Two, three, four, five.", "Six."] { voice.say(text) }
        voice.endText()
        let result = try voice.readToEnd()
        #expect(result.events.filter { $0 == .utteranceEnd }.count == 4)
        #expect(result.events.last == .end)
        let lengths = result.utterances
        try #require(lengths.count == 4)
        #expect(lengths[1] == 0, "the empty utterance has no audio")
        #expect(lengths[0] > 0 && lengths[3] > 0)
        // Order: the long utterance is where the third boundary says.
        #expect(lengths[2] > 2 * lengths[0] && lengths[2] > 2 * lengths[3], "\(lengths)")
        // Each matches that text said alone (within the in-process tolerance).
        for (index, text) in [(0, "One."), (2, "Two, three, four, five."), (3, "Six.")] {
            let alone = try RawEspeak()
            alone.say(text)
            alone.endText()
            let reference = try alone.readToEnd().bytes
            #expect(Self.sameLength(lengths[index] / 2, reference / 2), "'\(text)': \(lengths[index]) vs \(reference) bytes")
        }
        #expect(voice.counters()["utterances-synthesised"] == 4)
    }

    @Test("word timing: one mark per word, in order, its UTF-8 bytes in the utterance (accents and all) and where its audio begins")
    func wordMarks() throws {
        let voice = try RawEspeak()
        #expect(voice.capabilities == UInt32(SLUICE_PROVIDER_WORD_TIMING))
        let texts = ["Héllo wörld, naïve café.", "Second one."]
        for text in texts { voice.say(text) }
        voice.endText()
        var marks: [[sluice_word_mark_t]] = [[]]
        var lengths = [0]
        var first: [Int16] = []
        let deadline = Date().addingTimeInterval(60)
        reading: while Date() < deadline {
            switch voice.read() {
            case .data(let bytes):
                let before = lengths[lengths.count - 1]
                lengths[lengths.count - 1] += bytes.count
                if lengths.count == 1 {
                    first += stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
                }
                let taken = voice.takeWordMarks()
                // Takeable no later than the read that returns its first byte (earlier is allowed).
                for mark in taken { #expect(mark.audio_offset >= UInt64(before), "a mark came after its audio") }
                marks[marks.count - 1] += taken
            case .utteranceEnd:
                // The next utterance's marks wait for its first data.
                #expect(voice.takeWordMarks().isEmpty)
                marks.append([])
                lengths.append(0)
            case .end: break reading
            case .wouldBlock: usleep(1_000)
            case .error(let code, let message): throw RawEspeak.CreationFailed(code: code, message: message)
            }
        }
        func words(_ text: String, _ marks: [sluice_word_mark_t]) -> [String] {
            let utf8 = Array(text.utf8)
            return marks.map { String(decoding: utf8[Int($0.text_start)..<Int($0.text_start + $0.text_length)], as: UTF8.self) }
        }
        #expect(words(texts[0], marks[0]) == ["Héllo", "wörld", "naïve", "café"])
        #expect(words(texts[1], marks[1]) == ["Second", "one"])
        for (index, utterance) in marks.prefix(2).enumerated() {
            let offsets = utterance.map(\.audio_offset)
            #expect(offsets.first == 0, "the first word begins with the utterance")
            #expect(offsets == offsets.sorted() && Set(offsets).count == offsets.count, "\(offsets)")
            #expect(offsets.allSatisfy { $0 % 2 == 0 && $0 < UInt64(lengths[index]) })
        }
        // The audio is where the marks say: the pause after "wörld," ends where "naïve" begins.
        func level(_ range: Range<Int>) -> Double {
            let window = first[max(0, range.lowerBound)..<min(first.count, range.upperBound)]
            return (window.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(window.count, 1))).squareRoot()
        }
        let naive = Int(marks[0][2].audio_offset) / 2
        let before = level(naive - 441..<naive)  // 20 ms
        let after = level(naive..<naive + 2_205)  // 100 ms
        #expect(before * 4 < after, "level before 'naïve' \(before), after \(after)")
    }

    @Test("in a graph, each utterance's audio follows the one before, in order")
    func utterancesInGraph() throws {
        let (both, report) = try Self.render("", ["Hello.", Self.sentence])
        let (hello, _) = try Self.render("", ["Hello."])
        let (sentence, _) = try Self.render("", [Self.sentence])
        #expect(report.counters["voice.utterances-synthesised"] == 2)
        #expect(Self.sameLength(both.count, hello.count + sentence.count), "\(both.count) vs \(hello.count) + \(sentence.count)")
        // "Hello." comes first: the first second is the short word and its pause, quiet at its
        // end. The window stops short of its end by more than the in-process length tolerance,
        // so the next utterance's onset never falls inside it.
        #expect(Self.rms(Array(both[Int(Double(hello.count) * 0.8)..<Int(Double(hello.count) * 0.95)])) < 0.01)
    }

    @Test("text pushed in pieces is synthesised as the whole utterance")
    func incrementalText() throws {
        let pieces = ["The quick br", "own fox ju", "mps over the la", "zy dog, then it ", "runs far away into the quiet forest."]
        #expect(pieces.joined() == Self.sentence)
        let streamed = try RawEspeak()
        streamed.begin()
        for piece in pieces { streamed.push(piece) }
        streamed.end()
        streamed.endText()
        let fromPieces = try streamed.readToEnd()
        #expect(fromPieces.events.filter { $0 == .utteranceEnd }.count == 1)

        let whole = try RawEspeak()
        whole.say(Self.sentence)
        whole.endText()
        let fromWhole = try whole.readToEnd()
        #expect(Self.sameLength(fromPieces.bytes / 2, fromWhole.bytes / 2), "\(fromPieces.bytes) vs \(fromWhole.bytes)")

        // The tolerance tells them apart from the pieces spoken one by one.
        let separately = try RawEspeak()
        for piece in pieces { separately.say(piece) }
        separately.endText()
        let fromSeparate = try separately.readToEnd()
        #expect(!Self.sameLength(fromSeparate.bytes / 2, fromWhole.bytes / 2), "\(fromSeparate.bytes) vs \(fromWhole.bytes)")
    }

    /// A live run's source thread sleeps while the source has spoken all its text, until the
    /// source calls the wake it was given: every change a `produce` must see calls it.
    @Test("text, its end and an interrupt each wake a live run's source thread")
    func textWakesTheSourceThread() throws {
        let graph = try Plugins.compile(Self.graph(""), libraries: [try Self.library()])
        let voice = try #require(graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
        let wakes = Atomic<Int>(0)
        voice.onTextArrival { wakes.add(1, ordering: .relaxed) }
        voice.receive(text: "Hello.")
        let afterText = wakes.load(ordering: .relaxed)
        #expect(afterText > 0)
        #expect(voice.interrupt(changing: [:]) != nil)
        let afterInterrupt = wakes.load(ordering: .relaxed)
        #expect(afterInterrupt > afterText)
        voice.finishText()
        #expect(wakes.load(ordering: .relaxed) > afterInterrupt)
    }

    /// A source that has spoken all its text sleeps in a live run until text comes; once the
    /// text has ended there is none to wait for, and the thread must look on to see the end.
    @Test("all text spoken means waiting for more only until the text ends")
    func spokenAllTextUntilTheEnd() throws {
        let graph = try Plugins.compile(Self.graph(""), libraries: [try Self.library()])
        let voice = try #require(graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
        #expect(voice.hasSpokenAllText)
        voice.finishText()
        #expect(!voice.hasSpokenAllText)
    }

    // MARK: 5. Cancel, destroy, two instances

    /// The synthesis is stalled inside the utterance (ring full, engine held) when the
    /// instance is cancelled, destroyed, or both.
    @Test("cancel or destroy mid-synthesis: reads return END at once, destroy returns, the engine is free again",
          arguments: [true, false])
    func cancelMidSynthesis(cancelFirst: Bool) throws {
        let capacity = Int((0.05 * Double(Self.rate)).rounded()) * 2
        let voice = try RawEspeak(buffer: 0.05)
        voice.say(Self.long)
        voice.say(Self.sentence)
        voice.endText()
        try voice.waitUntil { $0["peak-buffered-bytes"]! >= capacity }
        guard case .data = voice.read() else {
            Issue.record("no data before cancel")
            return
        }
        if cancelFirst {
            voice.cancel()
            #expect(voice.read() == .end)
            #expect(voice.read() == .end)
            #expect(voice.counters()["utterances-synthesised"] == 0)
        }
        // Destroy on another thread: it must come back (a generous bound, no timing claim).
        let destroyed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            voice.destroy()
            destroyed.signal()
        }
        // (A hung destroy keeps espeak-ng busy, so nothing after it could run: stop here.)
        try #require(destroyed.wait(timeout: .now() + 30) == .success, "destroy hung")

        // espeak-ng is not left mid-synthesis: another instance speaks normally.
        let (after, report) = try Self.render("", ["Hello."])
        #expect(report.failures.isEmpty)
        #expect(after.count > Self.rate / 4 && Self.peak(after) > 0.1, "\(after.count) samples")
    }

    @Test("two espeak nodes read at once, with different settings, both give their own audio")
    func twoInstances() throws {
        let references = try [("rate: 175", "Hello from the first voice."), ("rate: 300, voice: en-us", "And this is the second one.")]
            .map { parameters, text in try Self.render(parameters, [text]).0 }
        let first = try RawEspeak(rate: 175)
        let second = try RawEspeak(voice: "en-us", rate: 300)
        first.say("Hello from the first voice.")
        second.say("And this is the second one.")
        first.endText()
        second.endText()
        let results = Mutex<[Int: RawEspeak.Reading]>([:])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            do {
                let reading = try (index == 0 ? first : second).readToEnd()
                results.withLock { $0[index] = reading }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let readings = results.withLock { $0 }
        for index in 0..<2 {
            let reading = try #require(readings[index])
            #expect(reading.events.filter { $0 == .utteranceEnd }.count == 1)
            #expect(Self.sameLength(reading.bytes / 2, references[index].count), "voice \(index): \(reading.bytes / 2) vs \(references[index].count) samples")
            #expect(Self.peak(reading.samples) > 0.1)
        }
    }

    @Test("many voices share the engine: one whose reader is not reading holds no one up, and keeps all its audio")
    func voicesShareTheEngine() throws {
        let longText = "This voice speaks a long sentence while nobody reads it, so its small ring fills at once and the rest must wait somewhere."
        let reference = try Self.render("buffer: 0.1", [longText]).0
        // One engine in the process (no helper processes): the others must wait for this one.
        let stalled = try RawEspeak(buffer: 0.1, engines: 1)
        stalled.say(longText)
        stalled.endText()
        // The stalled voice holds the engine with a full ring before the others ask for it.
        try stalled.waitUntil { $0["peak-buffered-bytes"]! > 0 }
        let others = try (0..<3).map { _ in try RawEspeak(voice: "en-us", rate: 250, engines: 1) }
        for voice in others {
            voice.say("Short.")
            voice.endText()
        }
        // Each of them finishes although the first voice's ring stays full: the holder spills.
        for voice in others {
            let reading = try voice.readToEnd(timeout: 20)
            #expect(reading.events.filter { $0 == .utteranceEnd }.count == 1)
            #expect(reading.bytes > 0)
        }
        #expect(try #require(stalled.counters()["peak-overflow-bytes"]) > 0)
        // Nothing of the stalled voice was lost: all of its utterance comes out, once.
        let reading = try stalled.readToEnd()
        #expect(reading.events.filter { $0 == .utteranceEnd }.count == 1)
        #expect(Self.sameLength(reading.bytes / 2, reference.count), "\(reading.bytes / 2) vs \(reference.count) samples")
        #expect(Self.peak(reading.samples) > 0.1)
    }

    @Test("under contention a voice's overflow holds at most its current utterance: the next one takes an engine only once the overflow has been read")
    func overflowHoldsOneUtterance() throws {
        let first = "This voice speaks a long sentence while nobody reads it, so its small ring fills at once and the rest must wait somewhere."
        let texts = [first, "A second sentence follows, which must not be made while the first still waits in memory.", "And a third."]
        let reference = try Self.render("buffer: 0.1", [first]).0
        let stalled = try RawEspeak(buffer: 0.1, engines: 1)
        for text in texts { stalled.say(text) }
        stalled.endText()
        try stalled.waitUntil { $0["peak-buffered-bytes"]! > 0 }
        // Another voice asks for the engine: the holder spills the rest of its utterance.
        let other = try RawEspeak(voice: "en-us", rate: 250, engines: 1)
        other.say("Short.")
        other.endText()
        #expect(try other.readToEnd(timeout: 20).bytes > 0)
        // Time in which a voice allowed to run ahead makes its other two sentences (espeak-ng
        // makes them in a few milliseconds) into the overflow.
        usleep(500_000)
        let held = stalled.counters()
        #expect(held["utterances-synthesised"] == 1, "\(held)")
        let overflow = try #require(held["peak-overflow-bytes"])
        #expect(overflow > 0 && Double(overflow) <= Double(reference.count * 2) * 1.05, "\(overflow) bytes; the first sentence is \(reference.count * 2)")
        // Read, the voice makes the rest, in order.
        let reading = try stalled.readToEnd()
        #expect(reading.events == [.utteranceEnd, .utteranceEnd, .utteranceEnd, .end])
        #expect(stalled.counters()["utterances-synthesised"] == 3)
        stalled.destroy()
        other.destroy()
    }
}

/// A WAV file's 16-bit mono samples (the chunks walked, so header sizes do not matter).
struct WAVData {
    struct Malformed: Error { var path: String }

    var rate: Int
    var samples: [Int16]

    init(path: String) throws {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func u32(_ at: Int) -> Int { Int(data[at]) | Int(data[at + 1]) << 8 | Int(data[at + 2]) << 16 | Int(data[at + 3]) << 24 }
        func u16(_ at: Int) -> Int { Int(data[at]) | Int(data[at + 1]) << 8 }
        guard data.count >= 12, data[0..<4].elementsEqual("RIFF".utf8), data[8..<12].elementsEqual("WAVE".utf8)
        else { throw Malformed(path: path) }
        var offset = 12
        var rate: Int?
        while offset + 8 <= data.count {
            let id = String(decoding: data[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt " {
                guard u16(body) == 1, u16(body + 2) == 1, u16(body + 14) == 16 else { throw Malformed(path: path) }
                rate = u32(body + 4)
            } else if id == "data", let rate {
                // espeak-ng writes its sizes after synthesis; trust the file's end if they are off.
                let end = min(body + size, data.count)
                self.rate = rate
                samples = stride(from: body, to: end - 1, by: 2).map { Int16(bitPattern: UInt16(u16($0))) }
                return
            }
            offset = body + size + (size & 1)
        }
        throw Malformed(path: path)
    }
}
