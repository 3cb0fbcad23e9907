import Foundation
import Glibc
import ProviderTestSupport
import SluiceAudio
import SluiceGraph
import SluicePluginABI
import SluicePlugins
import SluiceTestSupport
import Testing

/// The piper provider (Plugins/piper) with the real Piper: piper-tts and the voice
/// en_US-joe-medium from PyPI, as `scripts/setup --voices` installs them (scripts/test does).
///
/// Serialized: each test's voice shares the one engine process of this test process, as the
/// nodes of a host do; `warm` keeps it loaded between tests.
@Suite(.serialized, .timeLimit(.minutes(3))) struct PiperProviderTests {
    static let rate = 22_050
    static let voice = "en_US-joe-medium"

    /// Keeps the engine of the default voice running for the whole suite.
    static let warm: RawProvider? = try? piper()

    static func piper(_ values: [(String, RawProvider.Value)] = []) throws -> RawProvider {
        try RawProvider(path: Plugins.built("libsluice-piper.so"), type: "piper", [("voice", .string(voice))] + values)
    }

    static func rms(_ samples: ArraySlice<Float>) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(samples.count, 1))).squareRoot()
    }

    /// The engine processes this test process runs: children running the engine's program with
    /// a real Python (the hostile tests' fakes are shell scripts named `python`).
    static func enginePids() -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var children: [pid_t] = []
        for task in tasks {
            let text = (try? String(contentsOfFile: "/proc/self/task/\(task)/children", encoding: .utf8)) ?? ""
            children += text.split(separator: " ").compactMap { pid_t($0) }
        }
        return children.filter { pid in
            let line = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
            let arguments = line.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return arguments.first?.hasSuffix("python3") == true && arguments.contains { $0.contains("sluice-piper-engine") }
        }
    }

    @Test("the plugin lists the piper provider with its parameters and defaults")
    func descriptor() throws {
        let types = try PluginLibrary.load(path: Plugins.built("libsluice-piper.so")).nodeTypes
        #expect(types.map(\.descriptor.typeName) == ["piper"])
        #expect(types.map(\.kind) == [.provider])
        let piper = try #require(types.first).descriptor
        #expect(piper.outputs.map(\.medium) == [.bytes])
        #expect(piper.parameter(named: "voice")?.defaultValue == .string(Self.voice))
        #expect(piper.parameter(named: "rate")?.type == .number(0.25...4))
        #expect(piper.parameter(named: "python") == nil, "the program a node runs is not a parameter control clients reach")
    }

    @Test("a sentence becomes speech: S16LE mono at the voice's 22050 Hz, loud, with pauses, as long as its words")
    func speechShaped() throws {
        #expect(Self.warm != nil, "Piper is not installed: scripts/setup --voices")
        let voice = try Self.piper()
        voice.say("The quick brown fox jumps over the lazy dog, then it runs far away into the quiet forest.")
        voice.endText()
        let reading = try voice.readToEnd()
        #expect(reading.events == [.utteranceEnd, .end])
        let samples = reading.samples
        let seconds = Double(samples.count) / Double(Self.rate)
        // 18 words; people speak about 2.5 of them a second.
        #expect(seconds > 4 && seconds < 10, "\(seconds) s")
        #expect(samples.reduce(0) { max($0, abs($1)) } > 0.2)
        let window = Self.rate / 20
        let windows = stride(from: 0, to: samples.count - window, by: window).map { Self.rms(samples[$0..<$0 + window]) }
        let sounding = windows.filter { $0 > 0.01 }.count
        #expect(Double(sounding) > 0.6 * Double(windows.count), "\(sounding) of \(windows.count) windows sound")
        #expect(sounding < windows.count, "speech has pauses")
        #expect(voice.counters()["requests"] == 1)
    }

    @Test("word timing: one mark per word, in order, its UTF-8 bytes in the utterance, accents and numbers included")
    func wordMarks() throws {
        let voice = try Self.piper()
        #expect(voice.capabilities == UInt32(SLUICE_PROVIDER_WORD_TIMING))
        let texts = ["Héllo wörld, naïve café.", "It cost $42 in 1999.", "Second one."]
        for text in texts { voice.say(text) }
        voice.endText()
        let (marks, lengths, _) = try Self.readMarks(voice)
        func words(_ text: String, _ marks: [sluice_word_mark_t]) -> [String] {
            let utf8 = Array(text.utf8)
            return marks.map { String(decoding: utf8[Int($0.text_start)..<Int($0.text_start + $0.text_length)], as: UTF8.self) }
        }
        #expect(words(texts[0], marks[0]) == ["Héllo", "wörld,", "naïve", "café."])
        #expect(words(texts[1], marks[1]) == ["It", "cost", "$42", "in", "1999."])
        #expect(words(texts[2], marks[2]) == ["Second", "one."])
        for (index, utterance) in marks.prefix(3).enumerated() {
            let offsets = utterance.map(\.audio_offset)
            #expect(offsets == offsets.sorted() && Set(offsets).count == offsets.count, "\(offsets)")
            #expect(offsets.allSatisfy { $0 % 2 == 0 && $0 < UInt64(lengths[index]) })
            // The first word begins within Piper's leading silence (a few tens of ms).
            #expect((offsets.first ?? .max) < UInt64(Self.rate * 2 / 10))
        }
    }

    /// The onset of a word after a pause is where the audio rises out of silence: the first
    /// 5 ms window above -44 dBFS after at least 100 ms below -50 dBFS.
    @Test("word timings agree with the audio: each word after a pause starts within 30 ms of its onset")
    func marksAgreeWithTheAudio() throws {
        let voice = try Self.piper()
        let text = "Apples, bananas, cherries. Dates, and then figs."
        voice.say(text)
        voice.endText()
        let (marks, _, samples) = try Self.readMarks(voice)
        let window = Self.rate / 200
        let levels = stride(from: 0, to: samples.count - window, by: window).map { Self.rms(samples[$0..<$0 + window]) }
        var checked: [String] = []
        for mark in marks[0] {
            let at = Int(mark.audio_offset) / 2 / window
            // Only words after a pause: the 100 ms before the mark's last 30 ms are quiet.
            let quiet = (at - 26..<at - 6).allSatisfy { $0 >= 0 && levels[$0] < 0.003 }
            guard quiet, let onset = (at - 6..<min(levels.count, at + 20)).first(where: { levels[$0] > 0.006 }) else { continue }
            let word = String(decoding: Array(text.utf8)[Int(mark.text_start)..<Int(mark.text_start + mark.text_length)], as: UTF8.self)
            let error = Double(abs(onset - at) * window) / Double(Self.rate)
            #expect(error <= 0.030, "'\(word)' marked at \(Double(at * window) / Double(Self.rate)) s, onset at \(Double(onset * window) / Double(Self.rate)) s")
            checked.append(word)
        }
        #expect(checked.count >= 4, "words after a pause: \(checked)")
    }

    /// Every mark, the bytes per utterance and the first utterance's samples, read to the end.
    static func readMarks(_ voice: RawProvider) throws -> (marks: [[sluice_word_mark_t]], lengths: [Int], first: [Float]) {
        var marks: [[sluice_word_mark_t]] = [[]]
        var lengths = [0]
        var first: [Float] = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            switch voice.read() {
            case .data(let bytes):
                let before = lengths[lengths.count - 1]
                lengths[lengths.count - 1] += bytes.count
                if lengths.count == 1 {
                    first += stride(from: 0, to: bytes.count - 1, by: 2).map {
                        Float(Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)) / 32768
                    }
                }
                let taken = voice.takeWordMarks()
                for mark in taken { #expect(mark.audio_offset >= UInt64(before), "a mark came after its audio") }
                marks[marks.count - 1] += taken
            case .utteranceEnd:
                #expect(voice.takeWordMarks().isEmpty, "the next utterance's marks wait for its first data")
                marks.append([])
                lengths.append(0)
            case .end: return (marks, lengths, first)
            case .wouldBlock: usleep(1_000)
            case .error(let code, let message): throw RawProvider.CreationFailed(code: code, message: message)
            }
        }
        throw RawProvider.Timeout(what: "reading to the end")
    }

    @Test("several utterances: one UTTERANCE_END each, in order, an empty one included; a faster rate is shorter")
    func utterancesAndRate() throws {
        let voice = try Self.piper()
        for text in ["One.", "   ", "Two and three."] { voice.say(text) }
        voice.endText()
        let reading = try voice.readToEnd()
        #expect(reading.events == [.utteranceEnd, .utteranceEnd, .utteranceEnd, .end])
        #expect(reading.utterances[0] > 0 && reading.utterances[1] == 0 && reading.utterances[2] > reading.utterances[0])
        #expect(voice.counters()["requests"] == 2, "whitespace is an empty utterance without a request")

        let fast = try Self.piper([("rate", .number(2))])
        fast.say("Two and three.")
        fast.endText()
        let fastBytes = try fast.readToEnd().bytes
        #expect(Double(fastBytes) < Double(reading.utterances[2]) * 0.7, "\(fastBytes) vs \(reading.utterances[2]) bytes")

        let silent = try Self.piper([("sentence-silence", .number(0.5))])
        silent.say("Two and three.")
        silent.endText()
        let silentBytes = try silent.readToEnd().bytes
        // Piper's noise makes each synthesis differ a little; half a second is far more.
        #expect(abs(silentBytes - reading.utterances[2] - Self.rate) < Self.rate / 4, "\(silentBytes) vs \(reading.utterances[2]) + 0.5 s")
    }

    @Test("memory is bounded: with a 0.1 s buffer the next sentence waits until the last is read")
    func backpressure() throws {
        let voice = try Self.piper([("buffer", .number(0.1))])
        let sentences = (1...4).map { "This is sentence number \($0) of a reply that goes on." }
        for sentence in sentences { voice.say(sentence) }
        voice.endText()
        try voice.waitUntil { ($0["requests"] ?? 0) >= 1 && ($0["peak-buffered-bytes"] ?? 0) > 0 }
        usleep(300_000)
        #expect(voice.counters()["requests"] == 1, "the next sentence waits while the first is unread")
        let reading = try voice.readToEnd()
        #expect(reading.events.count == 5)
        let largest = reading.utterances.max() ?? 0
        let peak = voice.counters()["peak-buffered-bytes"] ?? .max
        #expect(peak <= largest + Self.rate / 5, "peak \(peak) bytes; the largest sentence is \(largest)")
    }

    @Test("cancel mid-sentence: reads return END at once; the engine goes on serving other voices")
    func cancel() throws {
        let voice = try Self.piper()
        voice.say("A long sentence that would take several seconds to say, if it were allowed to finish at all.")
        voice.say("And another one after it.")
        try voice.waitUntil { ($0["peak-buffered-bytes"] ?? 0) > 0 }
        voice.cancel()
        #expect(voice.read() == .end)
        #expect(voice.read() == .end)
        let other = try Self.piper()
        other.say("Still here.")
        other.endText()
        #expect(try other.readToEnd().bytes > Self.rate)
    }

    @Test("two voices of one model share one engine process")
    func oneEnginePerVoice() throws {
        let first = try Self.piper()
        let second = try Self.piper([("rate", .number(1.5))])
        #expect(Self.enginePids().count == 1, "\(Self.enginePids())")
        first.say("First.")
        second.say("Second.")
        first.endText()
        second.endText()
        #expect(try first.readToEnd().bytes > 0)
        #expect(try second.readToEnd().bytes > 0)
    }

    @Test("an unknown voice or a missing model fails creation with unknown-voice, naming where it looked and how to install one")
    func unknownVoice() throws {
        let error = try #require(throws: RawProvider.CreationFailed.self) {
            try RawProvider(path: Plugins.built("libsluice-piper.so"), type: "piper", [("voice", .string("xx_XX-nobody-low"))])
        }
        #expect(error.code == "unknown-voice")
        #expect(error.message.contains("xx_XX-nobody-low") && error.message.contains("scripts/setup --voices"), "\(error.message)")
        #expect(error.message.contains(Self.voice), "the installed voices are listed: \(error.message)")

        let path = try #require(throws: RawProvider.CreationFailed.self) {
            try RawProvider(path: Plugins.built("libsluice-piper.so"), type: "piper", [("voice", .string("../../etc/passwd"))])
        }
        #expect(path.code == "unknown-voice", "a voice name is not a path: \(path.message)")

        let model = try #require(throws: RawProvider.CreationFailed.self) {
            try RawProvider(path: Plugins.built("libsluice-piper.so"), type: "piper", [("model", .string("/nonexistent/voice.onnx"))])
        }
        #expect(model.code == "unknown-voice")
        #expect(model.message.contains("/nonexistent/voice.onnx"))
    }

    @Test("the engine killed mid-reply: the audio received plays, then engine-exited; a new node starts a new engine")
    func engineKilled() throws {
        let voice = try Self.piper([("buffer", .number(30))])
        voice.say("The first sentence is spoken whole.")
        voice.say("The second one should be spoken too, but the engine will be gone by then.")
        try voice.waitUntil { ($0["requests"] ?? 0) >= 2 }
        let pids = Self.enginePids()
        #expect(pids.count == 1)
        for pid in pids { kill(pid, SIGKILL) }
        var bytes = 0
        var error: (code: String, message: String)?
        let deadline = Date().addingTimeInterval(30)
        reading: while Date() < deadline {
            switch voice.read() {
            case .data(let data): bytes += data.count
            case .error(let code, let message):
                error = (code, message)
                break reading
            case .end: break reading
            default: usleep(1_000)
            }
        }
        #expect(bytes > Self.rate, "the first sentence's audio was read")
        #expect(error?.code == "engine-exited", "\(String(describing: error))")
        #expect(error?.message.contains("signal 9") == true, "\(String(describing: error))")
        let fresh = try Self.piper()
        fresh.say("Back again.")
        fresh.endText()
        #expect(try fresh.readToEnd().bytes > 0)
    }

    /// A hostile engine: the plugin runs whatever SLUICE_PIPER_PYTHON names, here a shell
    /// script that answers with the lines given.
    @Test("an engine that breaks the protocol fails the voice with a typed error, never a crash or a hang", arguments: [
        ("ready-then", #"{"type":"audio","id":1,"size":99999999999}"#, "engine-protocol"),
        ("ready-then", #"{"type":"audio","id":1,"size":-2}"#, "engine-protocol"),
        ("ready-then", #"not json at all"#, "engine-protocol"),
        ("ready-then", #"{"type":"word","id":1,"start":0,"length":1,"sample":-5}"#, "engine-protocol"),
        ("ready-then", #"{"type":"mystery","id":1}"#, "engine-protocol"),
        ("ready-then", #"{"type":"done","id":1,"outcome":"failed","message":"boom"}"#, "synthesis-failed"),
        ("ready-then", "", "engine-exited"),
        ("start", #"{"type":"ready","sample-rate":1e300}"#, "engine-protocol"),
        ("start", #"{"type":"failed","code":"x\u0000y","message":"nope"}"#, "engine-start-failed"),
        ("start", "", "engine-start-failed"),
    ])
    func hostileEngine(stage: String, line: String, code: String) throws {
        let folder = TemporaryFolder()
        let ready = #"{"type":"ready","sample-rate":22050,"model":"fake","alignments":true}"#
        let script = stage == "start"
            ? "#!/bin/sh\n" + (line.isEmpty ? "exit 3\n" : "printf '%s\\n' '\(line)'\nsleep 5\n")
            // The reply names the request's id, whatever number the plugin gave it.
            : "#!/bin/sh\nprintf '%s\\n' '\(ready)'\nread request\nid=$(printf '%s' \"$request\" | sed 's/.*\"id\":\\([0-9]*\\).*/\\1/')\n"
                + (line.isEmpty ? "exit 0\n" : "printf '%s\\n' '\(line)' | sed \"s/\\\"id\\\":1/\\\"id\\\":$id/\"\nsleep 5\n")
        let fake = try folder.write(script, to: "python").path
        chmod(fake, 0o755)
        setenv("SLUICE_PIPER_PYTHON", fake, 1)
        defer { unsetenv("SLUICE_PIPER_PYTHON") }
        if stage == "start" {
            let error = try #require(throws: RawProvider.CreationFailed.self) { try Self.piper([("start-timeout", .number(10))]) }
            #expect(error.code == code, "\(error)")
            return
        }
        let voice = try Self.piper()
        voice.say("Hello.")
        voice.endText()
        let deadline = Date().addingTimeInterval(20)
        var outcome: RawProvider.Read = .wouldBlock
        while Date() < deadline {
            outcome = voice.read()
            if outcome != .wouldBlock { break }
            usleep(1_000)
        }
        guard case .error(let got, _) = outcome else {
            Issue.record("expected an error, read \(outcome)")
            return
        }
        #expect(got == code)
    }

    @Test("an engine that never says it is ready fails creation after start-timeout")
    func silentEngine() throws {
        let folder = TemporaryFolder()
        let fake = try folder.write("#!/bin/sh\nsleep 30\n", to: "python").path
        chmod(fake, 0o755)
        setenv("SLUICE_PIPER_PYTHON", fake, 1)
        defer { unsetenv("SLUICE_PIPER_PYTHON") }
        let started = Date()
        let error = try #require(throws: RawProvider.CreationFailed.self) { try Self.piper([("start-timeout", .number(1))]) }
        #expect(error.code == "engine-start-failed")
        #expect(error.message.contains("start-timeout"))
        #expect(Date().timeIntervalSince(started) < 10)
    }
}
