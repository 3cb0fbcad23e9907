import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// `sluice speak`: into a file and into a real JACK server (the dummy backend), from an
/// argument and from standard input, with the summary and `--stats json`, and every way it
/// refuses. The controller itself is tested in SluiceSpeechTests.
@Suite(.serialized) struct SpeakCommandTests {
    static func json(_ outcome: CommandRunner.Outcome) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
    }

    @Test("into a file: every utterance, the summary line, and --stats json with the heard text")
    func intoFile() throws {
        let folder = TemporaryFolder()
        let out = folder.file("speech.wav")
        let outcome = try CLI.sluice(["speak", "Hello there. Dr. Smith paid 3.50 dollars.", "--out", out.path, "--no-cache", "--stats", "json"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("spoke "), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("0 underruns, 2 utterances"), "\(outcome.standardError)")
        let speech = try #require(try Self.json(outcome)["speech"] as? [String: Any])
        #expect(speech["heard"] as? String == "Hello there. Dr. Smith paid 3.50 dollars.")
        #expect((speech["utterances"] as? [[String: Any]])?.compactMap { $0["text"] as? String }
            == ["Hello there.", "Dr. Smith paid 3.50 dollars."])
        // espeak's word timing: each utterance lists its words and when each began.
        #expect(speech["granularity"] as? String == "word")
        let words = (speech["utterances"] as? [[String: Any]])?.first?["words"] as? [[String: Any]]
        #expect(words?.compactMap { $0["text"] as? String } == ["Hello", "there"])
        let starts = words?.compactMap { $0["start"] as? Double } ?? []
        #expect(starts.count == 2 && starts[0] < starts[1])
        let file = try SoundFileContents(out)
        #expect(file.channels == 2)
        #expect(file.rate == 22_050)
        #expect(Double(file.frames) / 22_050 > 1)
    }

    @Test("sentences end by the voice's language: a German voice reads an ordinal's dot on, an English one ends there; --language says it for any voice")
    func sentencesByLanguage() throws {
        let folder = TemporaryFolder()
        let text = "Am 3. Oktober kam er. Dann ging er."
        func utterances(_ arguments: [String]) throws -> [String] {
            let outcome = try CLI.sluice(["speak", text, "-o", folder.file("x.wav").path, "--no-cache", "--stats", "json"] + arguments)
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let speech = try #require(try Self.json(outcome)["speech"] as? [String: Any])
            return (speech["utterances"] as? [[String: Any]])?.compactMap { $0["text"] as? String } ?? []
        }
        #expect(try utterances(["--voice", "de"]) == ["Am 3. Oktober kam er.", "Dann ging er."])
        #expect(try utterances(["--voice", "en"]) == ["Am 3.", "Oktober kam er.", "Dann ging er."])
        #expect(try utterances(["--voice", "en", "--language", "de"]) == ["Am 3. Oktober kam er.", "Dann ging er."])
    }

    @Test("from standard input: - reads it as it arrives, UTF-8 intact")
    func fromStandardInput() throws {
        let folder = TemporaryFolder()
        let text = "Café au lait. Ünïcode “quotes” too! The end."
        let outcome = try CLI.sluice(
            ["speak", "-", "--out", folder.file("in.wav").path, "--no-cache", "--stats", "json"], input: Data(text.utf8))
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let speech = try #require(try Self.json(outcome)["speech"] as? [String: Any])
        #expect(speech["heard"] as? String == text)
        #expect(speech["completedUtterances"] as? Int == 3)
    }

    @Test("into JACK: plays on the server, with the JACK figures and first audio after the text")
    func intoJack() throws {
        let server = try JackTestServer.shared()
        let outcome = try CLI.sluice(["speak", "Hello.", "--server", server.name, "--no-cache", "--strategy", "stream", "--stats", "json"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let stats = try Self.json(outcome)
        // JACK numbers the name when another test's client holds it on the shared server.
        #expect((stats["jackClients"] as? [String])?.count == 1)
        #expect((stats["jackClients"] as? [String])?.first?.hasPrefix("sluice-speak") == true)
        #expect(stats["underruns"] as? Int == 0)
        let speech = try #require(stats["speech"] as? [String: Any])
        #expect(speech["heard"] as? String == "Hello.")
        #expect((speech["firstAudioAfterText"] as? Double ?? -1) >= 0)
        #expect(stats["watermarkSeconds"] as? Double == Double(server.periodFrames) / Double(server.sampleRate))
    }

    @Test("refusals: no server, a bad graph file, an unknown voice or provider, options that do not fit")
    func refusals() throws {
        let absent = "sluice-absent-\(getpid())"
        var outcome = try CLI.sluice(["speak", "Hi.", "--server", absent, "--no-cache"])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("error: no JACK server named '\(absent)' is running. Start one:"), "\(outcome.standardError)")

        let folder = TemporaryFolder()
        let graph = try folder.write("name: bad\nnodes:\n  voice: { type: espeak, rat: 175 }\n", to: "bad.yaml")
        outcome = try CLI.sluice(["speak", "Hi.", "--graph", graph.path, "--out", folder.file("x.wav").path])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("bad.yaml:3:"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("'rat'"), "\(outcome.standardError)")

        outcome = try CLI.sluice(["speak", "Hi.", "--voice", "qqq", "--out", folder.file("x.wav").path])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("espeak-ng has no voice 'qqq'"), "\(outcome.standardError)")

        outcome = try CLI.sluice(["speak", "Hi.", "--provider", "espeek", "--out", folder.file("x.wav").path])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("espeek"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("espeak"), "\(outcome.standardError)")

        outcome = try CLI.sluice(["speak", "Hi.", "--strategy", "stream", "--watermark", "0.3"])
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("--watermark sets the buffered strategy's watermark"), "\(outcome.standardError)")

        outcome = try CLI.sluice(["speak", "Hi.", "--set", "rate"])
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("--set takes name=value"), "\(outcome.standardError)")

        for tag in ["zz", "de+f3", "../de", "21m00Tcm4TlvDq8ikWAM"] {
            outcome = try CLI.sluice(["speak", "Hi.", "--language", tag])
            #expect(outcome.status == 2)
            #expect(outcome.standardError.contains("--language '\(tag)' is not a language tag ICU knows"), "\(outcome.standardError)")
        }
    }
}

/// Errors in the standard speech graph name what the user typed, the option and its value,
/// never a line of the built-in graph.
@Suite struct SpeakCommandErrorTests {
    static func speak(_ arguments: [String]) throws -> CommandRunner.Outcome {
        let folder = TemporaryFolder()
        return try CLI.sluice(["speak", "Hi."] + arguments + ["-o", folder.file("x.wav").path, "--no-cache"])
    }

    @Test("each error begins with the option as typed", arguments: [
        (["--provider", "espek"], "error: --provider espek: unknown node type 'espek' for node 'voice'\n  fix: did you mean 'espeak'?"),
        (["--set", "rate=fast"], "error: --set rate=fast: parameter 'rate' (wpm) of node 'voice' must be an integer in 80…450, got 'fast'"),
        (["--set", "rat=200"], "error: --set rat=200: node 'voice' (espeak) has no parameter 'rat'\n  fix: did you mean 'rate'?"),
        (["--voice", "qqq"], "error: --voice qqq: node 'voice' (espeak): 'espeak' (plugin "),
        (["--provider", "http-pcm"], "error: --provider http-pcm: node 'voice' (http-pcm) needs parameter 'url'"),
    ])
    func namesTheOption(_ arguments: [String], _ expected: String) throws {
        let outcome = try Self.speak(arguments)
        #expect(outcome.status == 1)
        #expect(outcome.standardError.hasPrefix(expected), "\(outcome.standardError)")
        #expect(!outcome.standardError.contains("<standard speech graph>"), "\(outcome.standardError)")
        #expect(!outcome.standardError.contains("error: error:"), "\(outcome.standardError)")
    }

    @Test("a graph file's own errors keep their file:line:column; an option's value there is named by the option")
    func graphFileAndOption() throws {
        let folder = TemporaryFolder()
        let graph = try folder.write("""
            name: mine
            nodes:
              voice: { type: espeak, rate: 175 }
              align: { type: aligner }
              out:   { type: null.sink, rate: 22050 }
            links:
              - voice -> align -> out

            """, to: "mine.yaml")
        let outcome = try CLI.sluice(["speak", "Hi.", "--graph", graph.path, "--set", "pitch=high", "-o", folder.file("x.wav").path])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.hasPrefix("error: --set pitch=high: parameter 'pitch' of node 'voice' must be an integer in 0…100, got 'high'"),
                "\(outcome.standardError)")
    }
}
