import Foundation
import JackTestSupport
import Synchronization
import SluiceConfig
import SluiceGraph
import SluicePlugins
import SluiceSpeech
import SluiceTestSupport
import Testing

/// The speech controller against the real espeak provider and a real JACK server (the
/// dummy backend): the misuse errors, each strategy's start rule, cancel from every state,
/// short and long speech, progress, streamed input, barge-in's heard text, JACK failures.
///
/// Serialized: espeak-ng synthesises for one instance at a time, and audio plays in real time.
@Suite(.serialized) struct SpeechControllerTests {
    static let three = "The first sentence is here. Then a second one follows it. And a third one ends the text."

    // MARK: Misuse

    @Test("every misuse error: before start, twice, after finish, after cancel")
    func misuse() throws {
        let speech = try SpeechController(Speech.live { $0.strategy = .stream })
        #expect(speech.state == .idle)
        #expect(throws: SpeechError.notStarted) { try speech.yield(text: "Hi.") }
        #expect(throws: SpeechError.notStarted) { try speech.finish() }
        #expect(throws: SpeechError.notStarted) { try speech.waitUntilFinished() }
        try speech.start()
        #expect(throws: SpeechError.alreadyStarted) { try speech.start() }
        #expect(throws: SpeechError.alreadyStarted) { try speech.speak("Hi.") }
        try speech.yield(text: "Hi.")
        try speech.finish()
        #expect(speech.state == .finishing)
        #expect(throws: SpeechError.alreadyFinished) { try speech.yield(text: "More.") }
        #expect(throws: SpeechError.alreadyFinished) { try speech.finish() }
        #expect(throws: SpeechError.alreadyStarted) { try speech.start() }
        let result = try speech.waitUntilFinished()
        #expect(speech.state == .finished)
        #expect(result.heard.heard == "Hi.")
        #expect(throws: SpeechError.alreadyStarted) { try speech.start() }
        #expect(throws: SpeechError.alreadyFinished) { try speech.yield(text: "More.") }
        #expect(try speech.waitUntilFinished() == result)

        let cancelledFirst = try SpeechController(Speech.live())
        cancelledFirst.cancel()
        #expect(throws: SpeechError.alreadyCancelled) { try cancelledFirst.start() }
        #expect(throws: SpeechError.alreadyCancelled) { try cancelledFirst.yield(text: "Hi.") }
        #expect(throws: SpeechError.alreadyCancelled) { try cancelledFirst.finish() }
        #expect(throws: SpeechError.alreadyCancelled) { try cancelledFirst.speak("Hi.") }
        #expect(throws: SpeechError.alreadyCancelled) { try cancelledFirst.waitUntilFinished() }

        let cancelledRunning = try SpeechController(Speech.live())
        try cancelledRunning.start()
        cancelledRunning.cancel()
        #expect(throws: SpeechError.alreadyCancelled) { try cancelledRunning.yield(text: "Hi.") }
        #expect(throws: SpeechError.alreadyCancelled) { try cancelledRunning.finish() }
        #expect(throws: SpeechError.alreadyCancelled) { try cancelledRunning.start() }
        #expect(try cancelledRunning.waitUntilFinished().cancelled)
    }

    // MARK: Strategies

    @Test("stream: playback starts with the first audio, before the text is finished")
    func streamStarts() throws {
        let speech = try SpeechController(Speech.live { $0.strategy = .stream })
        try speech.start()
        try speech.yield(text: "Hello there. And")
        #expect(Speech.wait { speech.playbackTime > 0 })
        #expect(speech.state == .running)
        try speech.finish()
        let result = try speech.waitUntilFinished()
        let period = Double(try JackTestServer.shared().periodFrames) / Double(try JackTestServer.shared().sampleRate)
        #expect(try #require(result.report.watermarkSeconds) <= period + 1e-9)
    }

    @Test("buffered: playback waits for the watermark, then starts before the text is finished")
    func bufferedStarts() throws {
        let speech = try SpeechController(Speech.live { $0.strategy = .buffered(seconds: 1.5) })
        try speech.start()
        try speech.yield(text: "Hi. ")  // about 0.3 s of audio: below the watermark
        #expect(Speech.wait { (speech.secondsToBuffer ?? 0) > 0 && speech.secondsToBuffer! < 1.5 })
        usleep(300_000)
        #expect(speech.playbackTime == 0)
        #expect((speech.secondsToBuffer ?? 0) > 0)
        try speech.yield(text: "This sentence is long enough to take the buffer past one and a half seconds of speech. And")
        #expect(Speech.wait { speech.playbackTime > 0 })
        #expect(speech.state == .running)
        try speech.finish()
        let result = try speech.waitUntilFinished()
        #expect(result.report.watermarkSeconds == 1.5)
        #expect(result.timings.underruns == 0)
    }

    @Test("generate-first: nothing plays until the text is finished and synthesised")
    func generateFirstStarts() throws {
        let speech = try SpeechController(Speech.live { $0.strategy = .generateFirst })
        try speech.start()
        try speech.yield(text: Self.three)
        #expect(Speech.wait { speech.secondsToBuffer == nil && speech.feedsIncrementally == false })
        usleep(500_000)
        #expect(speech.playbackTime == 0)
        #expect(speech.secondsToBuffer == nil)
        try speech.finish()
        #expect(Speech.wait { speech.playbackTime > 0 })
        let result = try speech.waitUntilFinished()
        #expect(result.heard.heard == Self.three)
        #expect(result.timings.underruns == 0)
    }

    @Test("auto: with espeak far faster than real time, playback starts after the measurement, before the text is finished, however late the text came")
    func autoStarts() throws {
        let speech = try SpeechController(Speech.live { $0.strategy = .auto })
        try speech.start()
        // A second with no text yet (a language model thinking) must not read as slow synthesis.
        usleep(1_000_000)
        try speech.yield(text: "Hello there, how are you? And")
        #expect(Speech.wait { speech.playbackTime > 0 })
        #expect(speech.state == .running)
        try speech.finish()
        let result = try speech.waitUntilFinished()
        let server = try JackTestServer.shared()
        // Faster than real time: `auto` sizes the watermark to one period.
        #expect(try #require(result.report.watermarkSeconds) <= Double(server.periodFrames) / Double(server.sampleRate) + 1e-9)
        #expect(result.timings.underruns == 0)
    }

    // MARK: Cancel

    @Test("cancel from every state: idle, started without text, playing, finishing, finished, twice")
    func cancelEverywhere() throws {
        let idle = try SpeechController(Speech.live())
        #expect(idle.cancel() == HeardText())
        #expect(idle.state == .cancelled)

        let waiting = try SpeechController(Speech.live())
        try waiting.start()
        // espeak reports word timing, so every result from a run is exact to the word.
        #expect(waiting.cancel() == HeardText(granularity: .word))
        #expect(waiting.state == .cancelled)

        let playing = try SpeechController(Speech.live { $0.strategy = .stream })
        try playing.start()
        try playing.yield(text: Self.three)
        #expect(Speech.wait { playing.playbackTime > 0.2 })
        let heardPlaying = playing.cancel()
        #expect(playing.state == .cancelled)
        #expect(heardPlaying.interrupted == "The first sentence is here.")
        // Cut inside the first sentence, at a word: what was heard and what remains make the text.
        let playingWord = try #require(heardPlaying.interruptedWord)
        #expect(heardPlaying.remainder.hasPrefix(playingWord))
        #expect((heardPlaying.heard.isEmpty ? "" : heardPlaying.heard + " ") + heardPlaying.remainder == Self.three)
        let result = try playing.waitUntilFinished()
        #expect(result.cancelled)
        #expect(result.timings.audioSeconds < 1.5)
        #expect(playing.cancel() == heardPlaying)

        let finishing = try SpeechController(Speech.live { $0.strategy = .stream })
        try finishing.start()
        try finishing.yield(text: "Hello there.")
        try finishing.finish()
        #expect(Speech.wait { finishing.playbackTime > 0.1 })
        let heardFinishing = finishing.cancel()
        #expect(finishing.state == .cancelled)
        // Cut within its only sentence: to the word, nothing or its first word was heard whole.
        #expect(["", "Hello"].contains(heardFinishing.heard) && heardFinishing.interrupted == "Hello there.")

        let finished = try SpeechController(Speech.live())
        try finished.speak("Hello.")
        #expect(finished.cancel() == HeardText(heard: "Hello.", granularity: .word, completedUtterances: 1))
        #expect(finished.state == .finished)
    }

    // MARK: Speaking

    @Test("speak: a short sentence plays whole, without underruns")
    func speakShort() throws {
        let result = try SpeechController(Speech.live()).speak("Hello.")
        #expect(result.heard == HeardText(heard: "Hello.", granularity: .word, completedUtterances: 1))
        #expect(result.utterances.map(\.text) == ["Hello."])
        #expect(result.timings.audioSeconds > 0.1 && result.timings.audioSeconds < 2)
        #expect(result.timings.underruns == 0)
        #expect(!result.cancelled)
        #expect(try #require(result.timings.firstAudioAfterText) >= 0)
    }

    @Test("speak: long text plays every utterance in order, a long sentence cut at its clauses, memory bounded")
    func speakLong() throws {
        let long = """
            Streaming speech starts with the first sentence. A long sentence keeps going, with one clause \
            after another, long past the point where a listener would expect a pause, and so the chunker \
            cuts it at a comma rather than making the provider wait for all of it, which keeps the start \
            fast. Dr. Smith paid 3.50 dollars, e.g. for coffee... and then left. The end.
            """
        let result = try SpeechController(Speech.live { $0.maxBuffered = 1.0 }).speak(long)
        let texts = result.utterances.map(\.text)
        #expect(texts.first == "Streaming speech starts with the first sentence.")
        #expect(texts.count >= 5)
        #expect(texts.contains("Dr. Smith paid 3.50 dollars, e.g. for coffee... and then left."))
        #expect(texts.last == "The end.")
        #expect(texts.allSatisfy { $0.count <= 200 })
        #expect(result.heard.heard == long)
        #expect(result.heard.completedUtterances == texts.count)
        #expect(result.report.peakBufferedSeconds <= 1.0 + 0.01)
        #expect(result.timings.underruns == 0)
    }

    @Test("async speak plays like the blocking one")
    func speakAsync() async throws {
        let result = try await SpeechController(Speech.live()).speak("Hello.")
        #expect(result.heard.heard == "Hello.")
    }

    // MARK: Progress

    @Test("progress: samples so far at each change; returning false cancels")
    func progressCancels() throws {
        let seen = Collected<SpeechProgress>()
        let speech = try SpeechController(Speech.live { configuration in
            configuration.strategy = .stream
            configuration.progress = { progress in
                seen.append(progress)
                return progress.playbackTime < 0.3
            }
        })
        let result = try speech.speak(Self.three)
        #expect(result.cancelled)
        #expect(speech.state == .cancelled)
        let all = seen.items
        #expect(all.count >= 2)
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.samplesGenerated <= $1.samplesGenerated && $0.samplesPlayed <= $1.samplesPlayed })
        #expect(all.allSatisfy { $0.samplesPlayed <= $0.samplesGenerated })
        #expect(all.last!.playbackTime >= 0.3)
        // Cancelled within a fade of the callback that returned false, not at the end.
        #expect(result.timings.audioSeconds < 1.0)
    }

    // MARK: Streamed input

    @Test("text fed a few characters at a time at a language model's pace: first audio after the first sentence, not the whole text")
    func streamedInput() throws {
        let speech = try SpeechController(Speech.live { $0.strategy = .stream })
        try speech.start()
        let text = Self.three
        var firstSentenceGiven: Date?
        var firstAudio: Date?
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 4, limitedBy: text.endIndex) ?? text.endIndex
            try speech.yield(text: String(text[index..<next]))
            index = next
            if firstSentenceGiven == nil, text[..<index].contains("here. ") { firstSentenceGiven = Date() }
            if firstAudio == nil, speech.playbackTime > 0 { firstAudio = Date() }
            usleep(30_000)  // about 33 tokens per second
        }
        let wholeGiven = Date()
        try speech.finish()
        let result = try speech.waitUntilFinished()
        let first = try #require(firstAudio, "nothing played while the text was still arriving")
        #expect(first > firstSentenceGiven!)
        #expect(first < wholeGiven)
        #expect(result.heard.heard == text)

        // The same utterances as the whole text at once.
        let folder = TemporaryFolder()
        let whole = try SpeechController(Speech.file(folder.path("whole.wav"))).speak(text)
        #expect(result.utterances.map(\.text) == whole.utterances.map(\.text))
        #expect(result.utterances.map(\.textRange) == whole.utterances.map(\.textRange))
    }

    // MARK: Barge-in

    @Test("barge-in during the second sentence: the heard text ends at a word inside it, the words whose audio played")
    func heardOnCancel() throws {
        let speech = try SpeechController(Speech.live { $0.strategy = .stream })
        try speech.start()
        try speech.yield(text: Self.three)
        try speech.finish()
        // Well into the second sentence ("Then a second one follows it."): 60 % of its length.
        let folder = TemporaryFolder()
        let reference = try SpeechController(Speech.file(folder.path("three.wav"))).speak(Self.three)
        let second = reference.utterances[1]
        let secondEnd = try #require(second.end)
        #expect(Speech.wait { speech.playbackTime > second.start + 0.6 * (secondEnd - second.start) })
        let heard = speech.cancel()
        let result = try speech.waitUntilFinished()
        let played = result.timings.audioSeconds
        #expect(heard.granularity == .word)
        #expect(heard.completedUtterances == 1)
        #expect(heard.interrupted == "Then a second one follows it.")

        // The words of the second sentence whose audio played: those that began before the
        // playback stopped, by the offline render's word timing placed at the live first
        // word (where an utterance starts before its first word depends on how the crossfader
        // met it; the words' spacing does not).
        let cut = try #require(result.utterances.first { $0.end == nil })
        #expect(cut.text == second.text)
        // espeak-ng's words, without their punctuation.
        #expect(second.words.map(\.text) == ["Then", "a", "second", "one", "follows", "it"])
        let liveFirst = try #require(cut.words.first).start
        let offlineFirst = second.words[0].start
        let begun = second.words.filter { liveFirst + ($0.start - offlineFirst) < played }
        #expect(begun.count >= 2 && begun.count < second.words.count)
        // The live run marked the same words, spaced as offline (to 5 ms: the live graph
        // resamples to JACK's rate, the file keeps espeak-ng's).
        #expect(cut.words.map(\.text) == begun.map(\.text))
        for (live, offline) in zip(cut.words, begun) {
            #expect(abs((live.start - liveFirst) - (offline.start - offlineFirst)) < 0.005)
        }
        // Heard: everything before the word playing when it stopped; that word is named.
        let playing = try #require(begun.last)
        #expect(heard.interruptedWord == playing.text)
        #expect(heard.heard == String(decoding: Array(Self.three.utf8)[..<begun[begun.count - 2].textRange.upperBound], as: UTF8.self))
        #expect(heard.heard.hasPrefix("The first sentence is here. Then"))
        #expect(heard.remainder == String(decoding: Array(Self.three.utf8)[playing.textRange.lowerBound...], as: UTF8.self))
    }

    // MARK: Failures

    @Test("no JACK server: start throws a JACK error naming the server and how to start one")
    func noServer() throws {
        let speech = try SpeechController(Speech.live { $0.output = .jack(server: "sluice-speech-no-such-server") })
        do {
            try speech.start()
            Issue.record("start succeeded without a server")
        } catch {
            guard case .jack(let message, nil) = error else { Issue.record("\(error)"); return }
            #expect(message.contains("no JACK server named 'sluice-speech-no-such-server' is running"))
        }
    }

    // libjack keeps one server's state per process, and a server's death makes the process's
    // next client open close every client it has (jack2's JackLibGlobals::Init): a test that
    // kills a server of its own runs in an exit test (a child process), away from the shared
    // server's clients, as docs/jack.md says.
    @Test("the JACK server dying mid-speech ends the speech with a JACK error, never a hang")
    func serverDies() async {
        await #expect(processExitsWith: .success) {
            let server = try JackTestServer.start()
            defer { server.stop() }
            let speech = try SpeechController(Speech.live { $0.output = .jack(server: server.name) })
            try speech.start()
            try speech.yield(text: Self.three)
            try speech.finish()
            #expect(Speech.wait { speech.playbackTime > 0.2 })
            server.kill()
            do throws(SpeechError) {
                _ = try speech.waitUntilFinished()
                Issue.record("the speech finished normally after its server died")
            } catch {
                guard case .jack(_, let result?) = error else { Issue.record("\(error)"); return }
                #expect(result.timings.audioSeconds > 0.1)
            }
        }
    }

    @Test("the standard graph is graphs/speak.yaml")
    func standardGraph() throws {
        let file = try GraphFile.load(path: Speech.packageRoot.appendingPathComponent("graphs/speak.yaml").path)
        let standard = try GraphFile.parse(SpeechGraph.standardYAML, file: "standard")
        #expect(file.nodes.map { [$0.name, $0.type] + $0.parameters.map { "\($0.name)=\($0.value)" } }
            == standard.nodes.map { [$0.name, $0.type] + $0.parameters.map { "\($0.name)=\($0.value)" } })
        #expect(file.links.map { "\($0.from)->\($0.to)" } == standard.links.map { "\($0.from)->\($0.to)" })
        #expect(file.playback.strategy == standard.playback.strategy)
        #expect(file.playback.maxBuffered == standard.playback.maxBuffered)
    }
}

/// Values a callback on another thread collects.
final class Collected<Item: Sendable>: Sendable {
    private let storage = Mutex<[Item]>([])
    func append(_ item: Item) { storage.withLock { $0.append(item) } }
    var items: [Item] { storage.withLock { $0 } }
}
