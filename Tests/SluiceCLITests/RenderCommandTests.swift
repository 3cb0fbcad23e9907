import CSndFile
import Foundation
import SluiceTestSupport
import Testing

@Suite("sluice render")
struct RenderCommandTests {
    private let folder = TemporaryFolder("sluice-render")

    /// Renders with `arguments` after `render`, expecting success and silence: nothing on
    /// standard output unless asked, and no progress bar (standard error is a pipe here).
    @discardableResult
    private func render(_ arguments: [String], in directory: URL = CLI.packageRoot, input: Data? = nil) throws -> CommandRunner.Outcome {
        let outcome = try CLI.sluice(["render"] + arguments, in: directory, input: input)
        #expect(outcome.status == 0, "sluice render \(arguments.joined(separator: " ")): \(outcome.standardError)")
        #expect(outcome.standardError == "", "standard error is not a terminal, so no progress bar and no noise")
        return outcome
    }

    /// Frames in `graphs/audio/hello-24k.s16` (S16LE mono) and its rate.
    private static func speechInput() throws -> (frames: Int, rate: Int) {
        let bytes = try FileManager.default.attributesOfItem(atPath: CLI.graphsFolder.appendingPathComponent("audio/hello-24k.s16").path)[.size] as! Int
        return (bytes / 2, 24_000)
    }

    // MARK: Output files

    /// `0.5 · sin(2π · 440 · n / 48000)`, the tone of graphs/tone.yaml.
    private static func idealTone(_ n: Int) -> Double { 0.5 * sin(2 * Double.pi * 440 * Double(n) / 48_000) }

    /// Checks the tone render: exact length, and the sine itself (to `tolerance`) except where
    /// the fader (480 frames) shapes the ends, which fade from and to silence.
    private func expectTone(_ file: SoundFileContents, tolerance: Double, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(file.rate == 48_000 && file.channels == 1, sourceLocation: sourceLocation)
        #expect(file.frames == 96_000, sourceLocation: sourceLocation)
        guard file.samples.count == 96_000 else { return }
        let fade = 480
        var worst = 0.0
        var worstAt = 0
        for n in fade..<(96_000 - fade) {
            let error = abs(Double(file.samples[n]) - Self.idealTone(n))
            if error > worst { (worst, worstAt) = (error, n) }
        }
        #expect(worst <= tolerance, "sample \(worstAt) is off by \(worst)", sourceLocation: sourceLocation)
        // The fades: from and to (almost) silence, never louder than the tone.
        #expect(abs(file.samples[0]) < 1e-3 && abs(file.samples[95_999]) < 1e-3, sourceLocation: sourceLocation)
        #expect(file.samples.allSatisfy { abs($0) <= 0.5 + 1e-6 }, sourceLocation: sourceLocation)
    }

    @Test("graphs/tone.yaml -o out.wav: 48 kHz mono float WAV, 96000 frames, the 440 Hz sine to 1e-6")
    func toneToWAV() throws {
        let output = folder.file("out.wav")
        let outcome = try render(["graphs/tone.yaml", "-o", output.path])
        #expect(outcome.standardOutput == "")
        let file = try SoundFileContents(output)
        #expect(file.container == Int32(SF_FORMAT_WAV) && file.encoding == Int32(SF_FORMAT_FLOAT))
        expectTone(file, tolerance: 1e-6)
    }

    @Test("graphs/tone.yaml -o out.flac: 24-bit FLAC, the same length and samples (to 1e-6)")
    func toneToFLAC() throws {
        let output = folder.file("out.flac")
        try render(["graphs/tone.yaml", "-o", output.path])
        let file = try SoundFileContents(output)
        #expect(file.container == Int32(SF_FORMAT_FLAC) && file.encoding == Int32(SF_FORMAT_PCM_24))
        // 24-bit steps are 2⁻²³ ≈ 1.2e-7: within the tolerance.
        expectTone(file, tolerance: 1e-6)
    }

    @Test("-o takes the sink's place: the graph's own wav.sink file is not written")
    func outputReplacesTheSink() throws {
        let graphs = try folder.copyOfGraphs()
        try render([graphs.appendingPathComponent("tone.yaml").path, "-o", folder.file("out.wav").path])
        #expect(FileManager.default.fileExists(atPath: folder.file("out.wav").path))
        #expect(!FileManager.default.fileExists(atPath: graphs.appendingPathComponent("tone.wav").path))
    }

    @Test("--rate 44100 renders speech-render.yaml at 44.1 kHz, the input's duration long (± 4 frames)")
    func rateOption() throws {
        let output = folder.file("speech-44k.wav")
        try render(["graphs/speech-render.yaml", "--rate", "44100", "-o", output.path])
        let file = try SoundFileContents(output)
        #expect(file.rate == 44_100 && file.channels == 1)
        let input = try Self.speechInput()
        let expected = Double(input.frames) * 44_100 / Double(input.rate)  // 56031.4 for the fixture
        #expect(abs(Double(file.frames) - expected) <= 4, "\(file.frames) frames, expected about \(expected)")
    }

    @Test("without --rate, speech-render.yaml is the input resampled to 48 kHz, exactly twice as long")
    func defaultRate() throws {
        let output = folder.file("speech.wav")
        try render(["graphs/speech-render.yaml", "-o", output.path])
        let file = try SoundFileContents(output)
        let inputFrames = try Self.speechInput().frames
        #expect(file.rate == 48_000 && file.channels == 1)
        #expect(file.frames == 2 * inputFrames)
    }

    @Test("--block 64 gives a file bit-identical to the default block (speech-render.yaml)")
    func blockSizeDoesNotChangeTheOutput() throws {
        let standard = folder.file("block-default.wav")
        let small = folder.file("block-64.wav")
        try render(["graphs/speech-render.yaml", "-o", standard.path])
        try render(["graphs/speech-render.yaml", "--block", "64", "-o", small.path])
        let a = try RenderedBytes.comparable(standard)
        let b = try RenderedBytes.comparable(small)
        #expect(a.count > 200_000)
        #expect(a == b)
    }

    @Test("two renders of the same graph are bit-identical")
    func deterministic() throws {
        try render(["graphs/speech-render.yaml", "-o", folder.file("1.wav").path])
        try render(["graphs/speech-render.yaml", "-o", folder.file("2.wav").path])
        #expect(try RenderedBytes.comparable(folder.file("1.wav")) == RenderedBytes.comparable(folder.file("2.wav")))
    }

    @Test("a rendered file holds nothing that depends on when it was written")
    func noTimestampInTheFile() throws {
        let output = folder.file("tone.wav")
        try render(["graphs/tone.yaml", "-o", output.path])
        let data = try Data(contentsOf: output)
        #expect(data.count > 96_000 * 4)
        #expect(RenderedBytes.peakTimestampRange(in: data) == nil)
    }

    @Test("--stats json prints exactly one JSON object with the run's timings and counters")
    func statsJSON() throws {
        let outcome = try render(["graphs/speech-render.yaml", "-o", folder.file("s.wav").path, "--stats", "json"])
        let text = outcome.standardOutput
        #expect(text.hasSuffix("}\n") && text.filter { $0 == "\n" }.count == 1, "one line: \(text)")
        let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8))
        let report = try #require(parsed as? [String: Any], "not a JSON object: \(text)")
        for key in ["audioSeconds", "timeToFirstAudio", "underruns", "droppedPartialFrames", "sourceRealTimeFactor"] {
            #expect(report[key] is NSNumber, "'\(key)' missing or not a number in \(text)")
        }
        let input = try Self.speechInput()
        let audio = try #require((report["audioSeconds"] as? NSNumber)?.doubleValue)
        #expect(abs(audio - Double(2 * input.frames) / 48_000) < 1e-9, "audioSeconds \(audio)")
        #expect((report["underruns"] as? NSNumber)?.intValue == 0)
        #expect((report["droppedPartialFrames"] as? NSNumber)?.intValue == 0)
        // An unpaced source: playback starts by the 0.5 s watermark at the latest.
        let start = try #require((report["timeToFirstAudio"] as? NSNumber)?.doubleValue)
        #expect(start >= 0 && start <= 0.5)
        let factor = try #require((report["sourceRealTimeFactor"] as? NSNumber)?.doubleValue)
        #expect(factor >= 0 && factor.isFinite)
    }

    // MARK: Text

    /// Renders graphs/morse.yaml with `arguments` (text given some way) to `name`.
    private func renderMorse(_ arguments: [String], to name: String, input: Data? = nil) throws -> Data {
        let output = folder.file(name)
        try render(["graphs/morse.yaml", "-o", output.path] + arguments, input: input)
        return try RenderedBytes.comparable(output)
    }

    @Test("a thousand lines that make no sound before the text do not stall the run: the file equals the text alone")
    func silentLinesFlood() throws {
        // Each line is an utterance: its markers reach the sink with no audio before them,
        // more than the sink holds and its edge's marker ring together.
        let flood = try folder.write(String(repeating: "~\n", count: 1_000) + "E\n", to: "flood.txt")
        let flooded = try renderMorse(["--text-file", flood.path], to: "flood.wav")
        let alone = try renderMorse(["--text", "E"], to: "alone.wav")
        #expect(flooded == alone)
    }

    @Test("--text, --text-file and - (standard input) give identical files, as long as Morse timing says")
    func textThreeWays() throws {
        let file = try folder.write("E\n", to: "e.txt")
        let viaOption = try renderMorse(["--text", "E"], to: "option.wav")
        let viaFile = try renderMorse(["--text-file", file.path], to: "file.wav")
        let viaStandardInput = try renderMorse(["-"], to: "stdin.wav", input: Data("E\n".utf8))
        #expect(viaOption == viaFile)
        #expect(viaOption == viaStandardInput)

        // E is one dit, then the utterance's closing 7 dits: 8 dits of 2880 frames (20 wpm, 48 kHz).
        let contents = try SoundFileContents(folder.file("option.wav"))
        let dit = MorseTiming.ditFrames(wpm: 20, rate: 48_000)
        #expect(dit == 2_880)
        #expect(MorseTiming.dits(text: "E") == 8)
        #expect(contents.rate == 48_000 && contents.channels == 1)
        #expect(contents.frames == 8 * dit)
        // The dit is keyed (a 600 Hz tone at amplitude 0.5), everything after it is silence.
        guard contents.samples.count == 8 * dit else { return }
        let peak = contents.samples[0..<dit].map { abs($0) }.max() ?? 0
        #expect(abs(peak - 0.5) < 1e-3, "peak \(peak)")
        #expect(contents.samples[dit...].allSatisfy { $0 == 0 })
    }

    @Test("each line is an utterance: the length follows Morse timing", arguments: [
        "SOS", "E\nT", "CQ CQ\nSOS\n", "  \nTEA\n\n",
    ])
    func morseLength(_ text: String) throws {
        let output = folder.file("morse.wav")
        try render(["graphs/morse.yaml", "-o", output.path, "-"], input: Data(text.utf8))
        let contents = try SoundFileContents(output)
        let expected = MorseTiming.dits(text: text) * MorseTiming.ditFrames(wpm: 20, rate: 48_000)
        #expect(contents.frames == expected, "\(contents.frames) frames for \(text.debugDescription), expected \(expected)")
        // The same text through --text-file gives the same file.
        let file = try folder.write(text, to: "text.txt")
        let again = folder.file("again.wav")
        try render(["graphs/morse.yaml", "-o", again.path, "--text-file", file.path])
        #expect(try RenderedBytes.comparable(output) == RenderedBytes.comparable(again))
    }

    @Test("a text-driven graph without text: exit 1 naming the node, and no file")
    func textMissing() throws {
        let output = folder.file("silent.wav")
        let outcome = try CLI.sluice(["render", "graphs/morse.yaml", "-o", output.path], input: Data())
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == "error: 'key' speaks text: give --text, --text-file or -\n")
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    @Test("text for a graph with no text-driven source: exit 1, and no file")
    func textWithoutTextSource() throws {
        let output = folder.file("tone.wav")
        let outcome = try CLI.sluice(["render", "graphs/tone.yaml", "-o", output.path, "--text", "hello"])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == "error: graph 'tone' has no text-driven source to speak the text (morse, or a speech provider)\n")
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    @Test("text given twice, or a stray argument, is a usage error")
    func textUsageErrors() throws {
        let file = try folder.write("E\n", to: "e.txt")
        let twice = try CLI.sluice(["render", "graphs/morse.yaml", "--text", "E", "--text-file", file.path], input: Data())
        #expect(twice.status == 2)
        #expect(twice.standardError.hasPrefix("error: give the text once: --text, --text-file or -\n"))
        let stray = try CLI.sluice(["render", "graphs/morse.yaml", "E"], input: Data())
        #expect(stray.status == 2)
        #expect(stray.standardError.hasPrefix("error: unexpected argument 'E'; only `-` (standard input) may follow the graph\n"))
    }

    // MARK: The graph's own sinks

    @Test("without -o the wav.sink writes its own file, next to the graph")
    func graphsOwnSink() throws {
        let graphs = try folder.copyOfGraphs()
        // Run from elsewhere: relative paths start at the graph file's folder.
        try render([graphs.appendingPathComponent("tone.yaml").path], in: folder.url)
        expectTone(try SoundFileContents(graphs.appendingPathComponent("tone.wav")), tolerance: 1e-6)

        try render([graphs.appendingPathComponent("speech-render.yaml").path], in: folder.url)
        let speech = try SoundFileContents(graphs.appendingPathComponent("speech.wav"))
        let inputFrames = try Self.speechInput().frames
        #expect(speech.rate == 48_000 && speech.frames == 2 * inputFrames)
        #expect(speech.title == "Hello from Sluice")
        // The sink's file holds what -o would have written.
        let viaOutput = folder.file("speech-o.wav")
        try render([graphs.appendingPathComponent("speech-render.yaml").path, "-o", viaOutput.path])
        #expect(try SoundFileContents(viaOutput).samples == speech.samples)
    }

    @Test("the one-line form writes the wav.sink's path (relative to the working folder)")
    func oneLineGraph() throws {
        try render(["tone duration=0.5 ! wav.sink path=X.wav"], in: folder.url)
        let file = try SoundFileContents(folder.file("X.wav"))
        #expect(file.rate == 48_000 && file.channels == 1)
        #expect(file.frames == 24_000)
        // No fader: the tone is exact from its first frame.
        let worst = (0..<24_000).map { abs(Double(file.samples[$0]) - Self.idealTone($0)) }.max() ?? .infinity
        #expect(worst <= 1e-6)
    }
}
